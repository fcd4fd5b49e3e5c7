"""A command's process declines TensorFlow's and Keras' eager imports of scikit-learn, matplotlib,
IPython and JAX (kbert/cli_startup.py), and nothing else: kbert, a user and a JAX run still get them,
and a program that imports kbert as a library is untouched. Each case runs in a fresh interpreter
(what is imported is decided once per process)."""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, require_installed

OPTIONAL = ("sklearn", "matplotlib", "IPython", "jax")
require_installed(*OPTIONAL, reason="the start-up hook is checked against the packages it declines")

# Prints what was imported after TensorFlow and Keras came in, then uses each package as kbert does.
PROBE = """
import json, sys
{setup}
import tensorflow, keras
after_tf = [m for m in {optional!r} if m in sys.modules]
import sklearn.metrics, matplotlib.pyplot  # kbert's metrics and attention pictures import them
f1 = float(sklearn.metrics.f1_score([0, 1, 1], [0, 1, 0]))
x = keras.ops.convert_to_tensor([1.0, 2.0])
print(json.dumps({{"after_tf": after_tf, "declined": sorted(getattr(hook, "declined", [])), "f1": f1,
                   "backend": keras.backend.backend(), "array": type(x).__module__.split(".")[0]}}))
"""


def _probe(setup: str, backend: str) -> dict:
    env = {**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "2",
           "JAX_PLATFORMS": "cpu"}
    code = PROBE.format(setup=setup, optional=OPTIONAL)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


HOOK = "from kbert.cli_startup import decline_optional_imports\nhook = decline_optional_imports()"


@pytest.mark.slow
def test_a_command_on_tensorflow_imports_none_of_them_yet_kbert_still_gets_them():
    result = _probe(HOOK, "tensorflow")
    assert result["after_tf"] == []
    assert result["declined"] == sorted(OPTIONAL)
    assert result["f1"] == pytest.approx(2 / 3)  # scikit-learn imported afterwards works
    assert result["backend"] == "tensorflow"


@pytest.mark.slow
def test_a_command_on_jax_still_imports_jax_for_keras():
    result = _probe(HOOK, "jax")
    assert result["backend"] == "jax" and result["array"] in ("jax", "jaxlib")  # Keras' tensors are JAX arrays
    assert "jax" in result["after_tf"]
    assert result["f1"] == pytest.approx(2 / 3)


@pytest.mark.slow
def test_a_library_import_of_kbert_changes_nothing():
    result = _probe("import kbert, kbert.tasks, kbert.export\nhook = None", "tensorflow")
    assert result["declined"] == []
    assert set(result["after_tf"]) == set(OPTIONAL)  # TensorFlow and Keras imported all four, as without kbert


@pytest.mark.slow
def test_every_command_installs_the_hook():
    # cli_support.run is every command's entry (tests/top/test_cli.py); its main here reports what the
    # import of TensorFlow brought in.
    code = ("import sys\nfrom kbert.cli_support import run\n"
            "def main(argv):\n    import tensorflow\n"
            f"    print([m for m in {OPTIONAL!r} if m in sys.modules])\n"
            "sys.exit(run('probe', main, []))")
    env = {**os.environ, "PYTHONPATH": str(REPO), "KERAS_BACKEND": "tensorflow"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"
