"""Starts the suite's ``python -m kbert...`` commands without paying for ``import tensorflow`` each time.

Most of the suite's time is child processes, and each of them used to spend 4-8 s (on two busy
cores) importing TensorFlow, TensorFlow Text and Keras before doing anything. Here a *zygote*, a
Python that has imported those three once, forks a child for each command; the child runs the
command as ``python -m MODULE ARGS`` would (``runpy``, ``sys.argv``, ``sys.path[0]`` = the folder,
the caller's environment, folder and standard streams, the exit status). Only that import is shared:
no command has run in the zygote, so each child starts from the state a fresh process has after
those imports (forking after ``import tensorflow`` is safe as long as no TensorFlow runtime was
started: the zygote runs no op).

``python tests/zygote.py ARGS`` is a drop-in for ``python ARGS`` (the docs-commands test's ``python``
and ``kbert`` are such scripts, ``launch`` gives the argument list to other tests). It goes to the
zygote only for ``-m kbert...`` / ``-m pipelines...`` and only when nothing that is read at import
time could differ from a fresh process; anything else replaces itself with ``python ARGS``:

* the caller's environment differs from the zygote's (one zygote per environment, made on its
  second use, so that a test's one-off environment does not start one: ``KERAS_BACKEND=jax python
  -m kbert.finetune`` gets its own, as does any other variable);
* ``--backend`` other than tensorflow (Keras reads it before importing), ``--verbose`` (TensorFlow's
  own start-up lines are what it shows);
* ``KBERT_TEST_ZYGOTE_DIR`` is not set (where the zygotes keep their sockets; conftest sets it per
  pytest worker and stops the zygotes at the end of the session).

``launch("-c", CODE, fresh=True)`` (conftest.run_fresh_python) is the other kind: a zygote that has
imported TensorFlow and nothing else, no import hook, for the exports' checks in "a fresh process"
(code that starts with ``import tensorflow`` and must not find kbert imported).

What this does not cover, so those tests start real processes: TensorFlow's start-up lines and the
import hook of kbert.cli_startup (tests/test_cli.py, tests/test_cli_startup.py), a process that must
not have Keras or TensorFlow Text imported, signals sent to a running command (tests/test_pretrain_cli.py, tests/test_reliability_outputs.py).

Standard library only, so that the client starts in milliseconds.
"""

from __future__ import annotations

import array
import hashlib
import json
import os
import select
import signal
import socket
import sys
import time

DIR_VARIABLE = "KBERT_TEST_ZYGOTE_DIR"
PRELOAD = ("tensorflow", "tensorflow_text", "keras")
SERVED_MODULES = ("kbert", "pipelines")
MODULES_VARIABLE = "KBERT_TEST_ZYGOTE_MODULES"  # more top-level modules to serve (tests/test_zygote.py's probe)
# Variables bash sets or changes by itself; every other one must equal the zygote's.
SHELL_VARIABLES = {"_", "PWD", "OLDPWD", "SHLVL"}
IDLE_EXIT_S = 120  # an unused zygote leaves (each holds ~0.7 GB)
HERE = os.path.abspath(__file__)


def launch(*args: str, fresh: bool = False) -> list[str]:
    """The argument list that runs ``python ARGS`` through the zygote (``subprocess.run(launch(...))``).
    ``fresh``: ``python -c CODE`` from a zygote of the other kind, which has imported TensorFlow alone,
    as a fresh interpreter does (no kbert, no import hook), for code that begins by importing it."""
    return [sys.executable, HERE, *(["--fresh"] if fresh else []), *args]


def _environment(env) -> dict:
    return {k: v for k, v in env.items() if k not in SHELL_VARIABLES and k != DIR_VARIABLE}


def _served(args: list[str], kind: str) -> bool:
    if kind == "fresh":
        return len(args) >= 2 and args[0] == "-c"
    modules = os.environ.get(MODULES_VARIABLE, "").split(",") + list(SERVED_MODULES)
    if len(args) < 2 or args[0] != "-m" or args[1].split(".")[0] not in modules:
        return False
    rest = args[2:]
    if "--verbose" in rest:
        return False
    for i, a in enumerate(rest):
        value = a.split("=", 1)[1] if a.startswith("--backend=") else (
            rest[i + 1] if a == "--backend" and i + 1 < len(rest) else None)
        if value is not None and value != os.environ.get("KERAS_BACKEND", "tensorflow"):
            return False
    return True


# -- the client ------------------------------------------------------------------------------------
def _send_fds(sock, payload: bytes, fds):
    sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


def _start_zygote(path: str, kind: str, env: dict):
    """Starts a zygote for ``env`` listening at ``path`` (its own session: it outlives this client)."""
    import subprocess

    return subprocess.Popen([sys.executable, HERE, "--zygote", path, kind], env=env, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=open(path + ".log", "ab"), start_new_session=True,
                     cwd="/")


def _fits(path: str) -> bool:
    return len(os.fsencode(path)) + 12 <= 107  # with room for the zygote's temporary name (path.PID)


def _addressable(path: str):
    """(a name for the socket at ``path`` that fits in sun_path's 108 bytes, an fd to close after
    use or None). A long folder (pytest's tmp_path under a long TMPDIR) is reached through
    /proc/self/fd/N, N an open fd of the folder (Linux; elsewhere _connect runs plain)."""
    if _fits(path):
        return path, None
    fd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
    return f"/proc/self/fd/{fd}/{os.path.basename(path)}", fd


def _connect(folder: str, kind: str, env: dict):
    """A connection to the zygote for ``env``, starting it if there is none (under a lock, so that
    concurrent clients start one); None when it does not come up."""
    import fcntl

    key = hashlib.sha256(json.dumps([kind, sorted(env.items())]).encode()).hexdigest()[:16]
    path = os.path.join(folder, f"{key}.sock")
    os.makedirs(folder, exist_ok=True)
    if not (_fits(path) or os.path.isdir("/proc/self/fd")):
        return None
    with open(os.path.join(folder, f"{key}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for attempt in range(2):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            name, fd = _addressable(path)
            try:
                sock.connect(name)
                return sock
            except OSError:
                sock.close()
            finally:
                if fd is not None:
                    os.close(fd)
            if attempt:
                return None
            if os.path.exists(path):
                os.unlink(path)  # a zygote that left (idle) or died
            seen = os.path.join(folder, f"{key}.seen")
            if not os.path.exists(seen):  # the first command in an environment runs as it is:
                open(seen, "w").close()   # many tests' environments are their own (a temporary HOME)
                return None
            failed = os.path.join(folder, f"{key}.failed")
            if os.path.exists(failed):
                return None
            started = _start_zygote(path, kind, {**env, DIR_VARIABLE: folder})
            deadline = time.monotonic() + 120
            while not os.path.exists(path) and started.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if not os.path.exists(path):  # it did not come up (its .log says why): plain processes from now on
                open(failed, "w").close()
                return None
    return None


def client(args: list[str]) -> int:
    kind = "fresh" if args[:1] == ["--fresh"] else "kbert"
    args = args[1:] if kind == "fresh" else args
    folder = os.environ.get(DIR_VARIABLE)
    env = _environment(os.environ)
    sock = _connect(folder, kind, env) if folder and _served(args, kind) else None
    if sock is None:
        os.execv(sys.executable, [sys.executable, *args])
    request = json.dumps({"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    _send_fds(sock, len(request).to_bytes(8, "big") + request, [0, 1, 2])
    # Signals to this process go to the command (a timeout's SIGTERM, Ctrl-C).
    reader = sock.makefile("rb")
    pid = int(reader.readline())
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: os.kill(pid, s))
    line = reader.readline()
    if not line:
        return 1
    status = int(line)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


# -- the zygote ------------------------------------------------------------------------------------
def _receive(conn):
    fds = array.array("i")
    head, ancillary, _flags, _addr = conn.recvmsg(8, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - (len(data) % fds.itemsize)])
    size = int.from_bytes(head, "big")
    body = b""
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ConnectionError("the client left")
        body += chunk
    return json.loads(body), list(fds)


def _run_command(request: dict, fds: list[int]) -> int:
    """In the forked command process: becomes ``python -m MODULE ARGS`` and returns its exit status."""
    import random
    import runpy

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    random.seed()  # a fresh process's unseeded generators, not the zygote's
    import numpy

    numpy.random.seed()
    if request["args"][0] == "-c":
        return _run_code(request["args"][1], request["args"][2:])
    module, args = request["args"][1], request["args"][2:]
    sys.argv = [module, *args]
    sys.path[0] = os.getcwd()  # what ``python -m`` puts first
    try:
        runpy._get_module_details(module)
    except ImportError as e:  # as ``python -m`` says it
        print(f"{sys.executable}: {e}", file=sys.stderr)
        return 1
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as e:
        status = _exit_status(e)
    except BaseException:  # noqa: BLE001 -- as the interpreter does: the traceback, status 1
        sys.excepthook(*sys.exc_info())
        status = 1
    return status


def _exit_status(e: SystemExit) -> int:
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code
    print(e.code, file=sys.stderr)
    return 1


def _run_code(code: str, args: list[str]) -> int:
    """``python -c CODE ARGS``: a new ``__main__``, ``sys.argv`` ``["-c", *ARGS]``, ``""`` first on the path."""
    import types

    sys.argv = ["-c", *args]
    sys.path[0] = ""
    main = types.ModuleType("__main__")
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    try:
        exec(compile(code, "<string>", "exec"), main.__dict__)
        return 0
    except SystemExit as e:
        return _exit_status(e)
    except BaseException:  # noqa: BLE001
        sys.excepthook(*sys.exc_info())
        return 1


def _finish(status: int):
    """What the interpreter does at exit (wait for non-daemon threads, atexit, flush), then exits."""
    import atexit
    import threading

    try:
        threading._shutdown()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status & 0xFF)


def _serve_one(conn):
    """In a forked process: runs the request's command in a child of its own and reports its pid and
    exit status; kills it when the client goes away (a killed test, a timeout)."""
    request, fds = _receive(conn)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _finish(_run_command(request, fds))
    for fd in fds:
        os.close(fd)
    conn.sendall(f"{pid}\n".encode())
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        readable, _, _ = select.select([conn], [], [], 0.05)
        if readable and not conn.recv(1):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os._exit(0)
    try:
        conn.sendall(f"{status}\n".encode())
    except OSError:
        pass
    os._exit(0)


def zygote(path: str, kind: str):
    sys.path[0] = os.getcwd()  # not tests/ (this file's folder); a command's child puts its own folder here
    if kind == "fresh":  # what ``python -c "import tensorflow ..."`` imports first, nothing else
        __import__("tensorflow")
    else:
        # What kbert.cli_support.run does before a command imports TensorFlow (decline the optional
        # integrations, quiet C++ logging), then the imports every command pays for.
        quiet = "TF_CPP_MIN_LOG_LEVEL" not in os.environ
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        from kbert.cli_startup import decline_optional_imports

        decline_optional_imports()
        for name in PRELOAD:
            __import__(name)
        if quiet:
            del os.environ["TF_CPP_MIN_LOG_LEVEL"]  # a command sets it itself (kbert.cli_support.quiet_setup)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    partial = f"{path}.{os.getpid()}"
    name, fd = _addressable(partial)
    server.bind(name)
    if fd is not None:
        os.close(fd)
    server.listen(16)
    os.rename(partial, path)  # clients see the socket only once it accepts
    last = time.monotonic()
    while True:
        readable, _, _ = select.select([server], [], [], 1.0)
        while True:  # reap the request handlers that finished
            try:
                done, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if not done:
                break
        if readable:
            conn, _ = server.accept()
            sys.stdout.flush()
            sys.stderr.flush()
            if os.fork() == 0:
                server.close()
                try:
                    _serve_one(conn)
                finally:
                    os._exit(1)
            conn.close()
            last = time.monotonic()
        elif time.monotonic() - last > IDLE_EXIT_S or not os.path.exists(path):
            break
    server.close()
    if os.path.exists(path):
        os.unlink(path)

if __name__ == "__main__":
    if sys.argv[1:2] == ["--zygote"]:
        zygote(sys.argv[2], sys.argv[3])
    else:
        sys.exit(client(sys.argv[1:]))
