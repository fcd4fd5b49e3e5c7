"""tests/fixtures/zygote.py, which starts the suite's ``python -m kbert...`` commands from a Python that has
imported TensorFlow once: a command started through it sees what ``python -m`` gives it (arguments,
folder, environment, standard streams, exit status), only the import is shared, and what it cannot
give the same (another backend, --verbose) runs as a plain process. tests/fixtures/zygote_probe.py reports
what it sees; each test uses its own zygote folder, so no test depends on another's zygote."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO
from fixtures.zygote import DIR_VARIABLE, MODULES_VARIABLE, launch

pytestmark = pytest.mark.slow  # a zygote imports TensorFlow (~5 s)
TESTS = REPO / "tests" / "fixtures"


@pytest.fixture
def env(tmp_path):
    folder = tmp_path / "z"
    env = {**os.environ, DIR_VARIABLE: str(folder), MODULES_VARIABLE: "zygote_probe", "PROBE": "a value"}
    yield env
    import shutil

    shutil.rmtree(folder, ignore_errors=True)  # its zygotes leave within a second


def probe(env, *args, plain=False, stdin="some input"):
    argv = [sys.executable, "-m", "zygote_probe", *args] if plain else launch("-m", "zygote_probe", *args)
    run = subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=TESTS, env=env, timeout=300)
    return run.returncode, json.loads(run.stdout), run.stderr


def test_a_command_sees_what_python_m_gives_it_and_only_the_import_is_shared(env):
    status, plain, plain_err = probe(env, "report", "3", plain=True)
    assert status == 3 and not plain["preloaded"]
    first = probe(env, "report", "3")  # the environment's first command runs as it is
    assert first == (3, plain, plain_err)
    for _ in range(2):  # then the zygote, which had imported TensorFlow
        status, seen, err = probe(env, "report", "3")
        assert (status, err) == (3, plain_err)
        assert seen == {**plain, "preloaded": True}
    # An error leaves as it does from python -m: the message on stderr, status 1.
    for module in ("zygote_probe.nothing", "zygote_nothing"):
        runs = [subprocess.run(argv, capture_output=True, text=True, cwd=TESTS, env={**env, MODULES_VARIABLE: "zygote_probe,zygote_nothing"},
                               timeout=300) for argv in ([sys.executable, "-m", module], launch("-m", module), launch("-m", module))]
        assert runs[0].returncode == 1 and module in runs[0].stderr
        assert [(r.returncode, r.stderr) for r in runs[1:]] == [(1, runs[0].stderr)] * 2


FRESH = """
import json, sys
print(json.dumps({"tensorflow": "tensorflow" in sys.modules, "kbert": "kbert" in sys.modules, "keras_hook": any(
    type(f).__name__ == "DeclineOptionalImports" for f in sys.meta_path), "argv": sys.argv, "path0": sys.path[0],
    "main": __name__, "probe": __import__("os").environ.get("PROBE")}))
sys.exit(int(sys.argv[1]))
"""


def test_fresh_code_sees_what_python_c_gives_it_after_importing_tensorflow_alone(env):
    def run(argv):
        done = subprocess.run(argv, capture_output=True, text=True, cwd="/", env=env, timeout=300)
        return done.returncode, json.loads(done.stdout)

    status, plain = run([sys.executable, "-c", FRESH, "4"])
    assert status == 4 and not plain["tensorflow"] and not plain["kbert"]
    assert run(launch("-c", FRESH, "4", fresh=True)) == (4, plain)  # the first one runs as it is
    for _ in range(2):
        assert run(launch("-c", FRESH, "4", fresh=True)) == (4, {**plain, "tensorflow": True})
    assert run(launch("-c", FRESH, "4")) == (4, plain)  # -c only when asked for


def test_what_import_time_would_change_runs_as_a_plain_process(env):
    for _ in range(2):
        probe(env, "report", "0")
    assert probe(env, "report", "0")[1]["preloaded"]
    for args in (["--backend", "jax"], ["--backend=jax"], ["--verbose"]):
        assert not probe(env, "report", "0", *args)[1]["preloaded"], args
    assert probe(env, "report", "0", "--backend", "tensorflow")[1]["preloaded"]  # the backend it has
    other = {**env, "KERAS_BACKEND": "jax"}  # another environment: never this zygote
    assert not probe(other, "report", "0")[1]["preloaded"]


def test_each_test_of_a_session_is_served_by_the_same_zygote(env):
    """pytest names the running test in PYTEST_CURRENT_TEST, so every test has another environment:
    that variable alone does not make another zygote, and the command still sees its own value."""
    for name in ("a.py::one (setup)", "a.py::one (call)"):
        probe({**env, "PYTEST_CURRENT_TEST": name}, "report", "0")
    status, seen, _ = probe({**env, "PYTEST_CURRENT_TEST": "b.py::two (call)"}, "report", "0")
    assert status == 0 and seen["preloaded"] and seen["test"] == "b.py::two (call)"


def _wait_for(path, timeout=60):
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < deadline, f"{path} was not written"
        time.sleep(0.05)
    return int(path.read_text())


def _gone(pid, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_signal_reaches_the_command_and_a_killed_caller_takes_it_along(env, tmp_path):
    for _ in range(2):
        probe(env, "report", "0")
    started = subprocess.Popen(launch("-m", "zygote_probe", "sleep", "0", str(tmp_path / "pid1")), cwd=TESTS, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid = _wait_for(tmp_path / "pid1")
    assert pid != started.pid  # the command is the zygote's child
    started.send_signal(signal.SIGTERM)
    assert started.wait(timeout=30) == 128 + signal.SIGTERM  # as a shell reports a command killed by it
    assert _gone(pid)
    started = subprocess.Popen(launch("-m", "zygote_probe", "sleep", "0", str(tmp_path / "pid2")), cwd=TESTS, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid = _wait_for(tmp_path / "pid2")
    started.kill()  # SIGKILL: nothing forwards it, the zygote sees its caller go
    started.wait(timeout=30)
    assert _gone(pid)


def test_a_zygote_that_cannot_start_is_tried_once_then_commands_run_plain(env, tmp_path):
    broken = {**env, "PYTHONPATH": str(tmp_path / "broken")}  # its kbert.cli_startup import fails
    (tmp_path / "broken" / "kbert").mkdir(parents=True)
    (tmp_path / "broken" / "kbert" / "__init__.py").write_text("raise ImportError('a broken install')\n")
    plain = probe(broken, "report", "0", plain=True)
    for _ in range(4):
        assert probe(broken, "report", "0") == plain
    folder = pathlib.Path(env[DIR_VARIABLE])
    assert len(list(folder.glob("*.failed"))) == 1
    logs = list(folder.glob("*.log"))  # the zygote's stderr: one start, one traceback
    assert len(logs) == 1 and logs[0].read_text().count("ImportError: a broken install") == 1


def test_a_folder_too_long_for_a_socket_address_still_gets_its_zygote(env, tmp_path):
    folder = tmp_path / ("a-long-folder-name-" * 6)  # a socket's address holds at most 107 bytes
    assert len(os.fsencode(str(folder / "0123456789abcdef.sock"))) > 107
    long = {**env, DIR_VARIABLE: str(folder)}
    plain = probe(long, "report", "0", plain=True)
    assert probe(long, "report", "0") == plain
    status, seen, err = probe(long, "report", "0")
    assert (status, seen, err) == (0, {**plain[1], "preloaded": True}, plain[2])
    assert len(list(folder.glob("*.sock"))) == 1
