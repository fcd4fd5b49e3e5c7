"""The package as users install it: a wheel (not the editable checkout) carries every file kbert reads,
and the library imports without the benchmark's peers."""

import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import REPO


def _tracked_package_files() -> set[str]:
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "kbert", "pipelines"], capture_output=True,
                         text=True, check=True).stdout.split()
    return {f for f in out if not f.endswith(".py")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
    if not (REPO / ".git").exists():
        pytest.skip("needs a git checkout (the list of tracked files)")
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy of the checkout's files (tracked and new, not ignored): setuptools reuses a
    # build/ folder, which would hide a file that package-data no longer lists.
    src = tmp_path_factory.mktemp("src")
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard"], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    for name in files:
        if (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    # No build isolation: setuptools is installed with the test extra, and an isolated build would
    # need the package index.
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                             "-w", str(out), str(src)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    (path,) = out.glob("kbert-*.whl")
    return path


def test_wheel_carries_every_tracked_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    data_files = _tracked_package_files()
    assert any(f.startswith("kbert/resources/corpus/") and f.endswith(".txt") for f in data_files)
    missing = sorted(data_files - names)
    assert not missing, f"the wheel lacks files the package ships: {missing}"


def test_demo_corpus_found_from_an_installed_wheel(wheel, tmp_path):
    """The zero-argument ``python -m kbert.pretrain`` reads its corpus from the installed package."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("import kbert.commands.pretrain as p, pathlib; c = p.demo_corpus_dir(); "
            "print(c); print(len(list(pathlib.Path(c).glob('*.txt'))))")
    env = dict(os.environ, PYTHONPATH=str(site), TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                            env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    corpus, count = result.stdout.split()[-2:]
    assert pathlib.Path(corpus).is_relative_to(site), f"corpus read from {corpus}, not from the wheel"
    assert int(count) >= 3


def test_library_imports_without_the_bench_peers():
    code = ("import sys, kbert, kbert.tasks, kbert.export, kbert.text; "
            "print(sorted(m for m in ('keras_hub', 'torch', 'transformers', 'tokenizers') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"
