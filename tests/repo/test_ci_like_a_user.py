"""CI runs what a new user runs: README's test command, in a fresh venv (.ci/run); and the ``python``
and ``kbert`` that the docs-command tests put on PATH are this interpreter with its environment (a
venv, a conda env or a global install alike), not the base interpreter behind it."""

import os
import subprocess
import sys

from conftest import REPO
from fixtures.readme_scratch import user_bin


def test_the_scratch_python_and_kbert_run_in_this_environment(tmp_path):
    bin_dir = user_bin(tmp_path / "bin")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    probe = "import sys; print(sys.prefix); print(sys.base_prefix)"
    for python in ("python", "python3"):
        out = subprocess.run(["bash", "-c", f"{python} -c '{probe}'"], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        # a venv's own prefix, not its base interpreter's (which a link to the interpreter would give)
        assert out.stdout.split("\n")[:2] == [sys.prefix, sys.base_prefix]
    help_ = subprocess.run(["bash", "-c", "kbert --help"], env=env, cwd=tmp_path, capture_output=True,
                             text=True, timeout=120)
    assert help_.returncode == 0 and "pretrain" in help_.stdout, help_.stderr


def test_ci_runs_readmes_test_command_in_a_fresh_venv():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = next(line for line in readme.splitlines() if line.startswith("bash tests/install-system-deps.sh"))
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    assert ci[-1] == command  # exactly README's command 2, last
    assert any("venv" in line and "python3 -m venv" in line for line in ci)
    assert any(line.startswith(". ") and "bin/activate" in line for line in ci)
