"""Fine-tuning's option checks (kbert/training/finetune.py's resolve_options): each refusal is an error
naming the option and value, raised before any work (the commands show it as one line), and the task
type's defaults filled in. The backend's refusals too: a task type not ready for JAX (resolve_options,
in a JAX process) and a second backend in one process (kbert.cli_support.use_backend)."""

from __future__ import annotations

import pytest

from kbert.cli_support import UserError, is_user_error, use_backend
from kbert.errors import OptionsError
from kbert.tasks.core.options import FinetuneOptions
from kbert.training.finetune import resolve_options


def test_finetune_refuses_jax_only_options_under_tensorflow(tmp_path):
    options = FinetuneOptions(task="glue/sst2", init=str(tmp_path / "a"), model_dir=str(tmp_path / "b"), tpu="local")
    with pytest.raises(OptionsError, match="--backend jax") as info:
        resolve_options(options)
    assert is_user_error(info.value)


def test_finetune_refuses_writing_over_its_init(tmp_path):
    options = FinetuneOptions(task="glue/sst2", init=str(tmp_path / "a"), model_dir=str(tmp_path / "a"))
    with pytest.raises(OptionsError, match="--model-dir must differ from --init"):
        resolve_options(options)


def test_finetune_fills_in_the_task_types_sequence_length(tmp_path):
    options = FinetuneOptions(task="glue/sst2", init=str(tmp_path / "a"), model_dir=str(tmp_path / "b"))
    assert options.seq_length is None and resolve_options(options).seq_length == 128


# kbert/cli_support.py's use_backend: the first refusal a fine-tuning command meets (it picks the
# backend before anything imports Keras), checked here beside resolve_options' own.
def test_a_second_backend_in_one_process_is_refused():
    import keras

    assert use_backend(keras.backend.backend()) == keras.backend.backend()
    other = "jax" if keras.backend.backend() == "tensorflow" else "tensorflow"
    with pytest.raises(UserError, match=f"--backend {other}: Keras is already running"):
        use_backend(other)


@pytest.mark.slow
def test_a_task_type_not_ready_for_jax_is_one_line_naming_it(tmp_path):
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": str(root)}
    # Every built-in type runs under JAX: a plug-in type that declares TensorFlow only stands in.
    code = ("import sys\n"
            "from kbert.tasks.tagging.task import Tagging\n"
            "from kbert.tasks.core.registry import register_task, register_task_type\n"
            "class TensorFlowOnly(Tagging):\n"
            "    name, model_types, backends = 'test_tf_only', (), ('tensorflow',)\n"
            "register_task_type(TensorFlowOnly)\n"
            "register_task('test_tf_only_task', 'test_tf_only')\n"
            "from kbert.cli_support import run\n"
            "from kbert.commands.finetune import main\n"
            "sys.exit(run('finetune', main))\n")
    proc = subprocess.run([sys.executable, "-c", code, "--backend", "jax", "--task", "test_tf_only_task",
                           "--data-dir", str(tmp_path), "--init", str(tmp_path), "--model-dir", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300, env=env, cwd=root)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        "kbert finetune: error: task 'test_tf_only_task' (task type 'test_tf_only') cannot be fine-tuned under the "
        "jax backend yet; it runs under tensorflow")
