"""The test harness itself (tests/conftest.py): under CI=true a missing package of the test extra or
missing shared data fails the run naming it; a user's checkout skips with that reason instead.

Each case runs pytest in a child process on a two-line test file beside a copy of conftest.py, so
the harness is checked as pytest loads it, not as a function called by hand.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parents[1]

NEEDS_DATA = """
from conftest import SHARED

def test_reads_the_data():
    (SHARED / "vocab" / "bert-base-uncased" / "vocab.txt").read_text()
"""
NEEDS_PACKAGE = """
from conftest import require

require("kbert_no_such_package_anywhere")

def test_uses_it():
    pass
"""


def _pytest(tmp_path, test_code, ci, data=None):
    """(exit status, output) of pytest on test_code; data: a KBERT_SHARED_DATA folder to lay (a README.md
    is what the harness looks for), else a path that does not exist."""
    if data:
        (tmp_path / data).mkdir()
        (tmp_path / data / "README.md").write_text("stand-in shared data\n")
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_it.py").write_text(test_code)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    env.update(KBERT_SHARED_DATA=str(tmp_path / (data or "no/data")), **({"CI": "true"} if ci else {}))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:randomly",
                          "-p", "no:xdist", "test_it.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    return run.returncode, run.stdout + run.stderr


def test_missing_shared_data_fails_under_ci_naming_where_it_looked(tmp_path):
    code, out = _pytest(tmp_path, NEEDS_DATA, ci=True)
    assert code == pytest.ExitCode.TESTS_FAILED, out
    assert f"shared test data is not found: no README.md in {tmp_path / 'no' / 'data'}" in out, out
    assert " passed" not in out and " skipped" not in out, out


def test_missing_shared_data_skips_a_users_checkout_naming_the_file(tmp_path):
    code, out = _pytest(tmp_path, NEEDS_DATA, ci=False)
    assert code == pytest.ExitCode.OK, out
    assert re.search(r"1 skipped", out), out
    assert f"needs {tmp_path / 'no' / 'data' / 'vocab' / 'bert-base-uncased' / 'vocab.txt'}" in out, out


def test_missing_test_extra_package_fails_under_ci_naming_it(tmp_path):
    code, out = _pytest(tmp_path, NEEDS_PACKAGE, ci=True, data="data")
    assert code == pytest.ExitCode.INTERRUPTED, out  # a collection error stops the run
    assert "CI=true and kbert_no_such_package_anywhere is not importable" in out, out
    assert "1 error" in out, out


def test_missing_test_extra_package_skips_a_users_checkout_naming_it(tmp_path):
    code, out = _pytest(tmp_path, NEEDS_PACKAGE, ci=False, data="data")
    assert code == pytest.ExitCode.NO_TESTS_COLLECTED, out  # the module is skipped whole
    assert "1 skipped" in out and "kbert_no_such_package_anywhere is not importable" in out, out


def test_test_modules_skip_on_a_missing_package_only_through_the_harness():
    """A module that calls pytest.importorskip or skips on importlib.util.find_spec itself would be
    skipped under CI too; conftest's require / require_installed / missing are the ways."""
    offenders = [p.name for p in sorted(HERE.rglob("*.py")) if p.name != "conftest.py"
                 and re.search(r"importorskip\(|skipif\([^)]*find_spec", p.read_text(encoding="utf-8"))]
    assert offenders == [], offenders


MADE_ONCE = """
import os, pathlib, time
import pytest
from conftest import made_once

@pytest.fixture(scope="session")
def thing(tmp_path_factory):
    def make(folder):
        (pathlib.Path(os.environ["MADE_ONCE_LOG"]) / str(os.getpid())).write_text("made")
        time.sleep(2)  # the other worker asks meanwhile
        (folder / "x.txt").write_text("made")
        return {"path": str(folder / "x.txt")}
    return pathlib.Path(made_once(tmp_path_factory, "thing", make)["path"])

def test_it(thing):
    assert thing.read_text() == "made"
"""


@pytest.mark.slow
def test_a_fixture_made_once_is_made_by_one_worker_for_both(tmp_path):
    """conftest.made_once under pytest-xdist: two files on two workers ask for the same session
    fixture; it is made once and both get it."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "README.md").write_text("stand-in shared data\n")
    (tmp_path / "log").mkdir()
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    for name in ("test_a.py", "test_b.py"):
        (tmp_path / name).write_text(MADE_ONCE)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    env.update(KBERT_SHARED_DATA=str(tmp_path / "data"), MADE_ONCE_LOG=str(tmp_path / "log"))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                          "-n", "2", "--dist", "loadfile", "--basetemp", str(tmp_path / "bt"), "test_a.py", "test_b.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout
    assert len(list((tmp_path / "log").iterdir())) == 1  # one process made it


COLLECT_ALL = """
import glob, importlib, os, sys
sys.path.insert(0, os.getcwd())
from tensorflow.python.eager import context
paths = sorted(glob.glob("**/test_*.py", recursive=True))
assert len(paths) > 150, paths  # every test module of the tree, not an empty glob
for path in paths:
    folder, name = os.path.split(path[:-3])
    if os.path.exists(os.path.join(folder, "__init__.py")):  # a test package: tasks.span_qa.test_graph
        name = folder.replace(os.sep, ".") + "." + name
    elif folder:  # tests/pipelines/ (no __init__.py: pytest puts the folder itself on the path)
        sys.path.insert(0, os.path.abspath(folder))
    importlib.import_module(name)
    if context.context()._context_handle is not None:
        sys.exit("importing " + path + " started TensorFlow's runtime")
"""


@pytest.mark.slow
def test_collecting_the_tests_starts_no_tensorflow_runtime():
    """A test process forked after collection (``pytest --forked``, each test alone:
    docs/contributing.md) hangs in its first parallel op when collection already started
    TensorFlow's runtime, e.g. with a tensor made in a ``parametrize`` list."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    run = subprocess.run([sys.executable, "-c", COLLECT_ALL], cwd=HERE, capture_output=True, text=True, env=env,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
