"""Stopping a command on SIGTERM (a supervisor ending the job) without raising into library code.

An exception raised from a signal handler lands wherever the main thread is: inside TensorFlow's
tracing it can leave a lock held, and the process then waits forever. The handler here raises
nothing: it removes the folders of the model-directory writes under way
(``kbert.model_dir.remove_pending_writes``; every output is written by ``replace_dir``, so it is
then the old one, the new one whole, or absent), says so in one line and ends the process with
the status a shell gives SIGTERM (143). While a ``replace_dir`` swaps folders (two renames), the
handler waits for the swap to end (``kbert.model_dir.at_safe_point``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys


@contextlib.contextmanager
def stop_on_sigterm(command: str):
    """Within the block, SIGTERM ends the process as described above; the previous handler is back
    afterwards. Outside the main thread (an application embedding kbert) signals are left alone."""
    def stop(signum, frame):
        # Nothing is imported here: the signal may land in the middle of an import. A model_dir not
        # (yet wholly) imported has no write under way.
        at_safe_point = getattr(sys.modules.get("kbert.model_dir"), "at_safe_point", None)
        if at_safe_point is None:
            _end(command, signum)
        else:
            at_safe_point(lambda: _end(command, signum))

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _end(command: str, signum: int) -> None:
    remove_pending_writes = getattr(sys.modules.get("kbert.model_dir"), "remove_pending_writes", None)
    removed = remove_pending_writes() if remove_pending_writes else []
    what = f"removed {len(removed)} unfinished folder(s) beside the output" if removed else "no output half written"
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    # The quiet start-up's filter thread holds fd 2; os._exit would end the process before it
    # passed this line on (it runs at exit through atexit, which os._exit skips).
    restore_stderr = getattr(sys.modules.get("kbert.cli_support"), "restore_stderr", None)
    if restore_stderr is not None:
        with contextlib.suppress(Exception):
            restore_stderr()
    with contextlib.suppress(Exception):
        os.write(2, f"kbert {command}: stopped by SIGTERM ({what})\n".encode())
    os._exit(128 + signum)
