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


def _resolved(tmp_path, task, **settings):
    return resolve_options(FinetuneOptions(task=task, init=str(tmp_path / "a"), model_dir=str(tmp_path / "b"),
                                           **settings))


def test_finetune_fills_in_the_one_window_stride(tmp_path):
    """doc_stride has one home, FinetuneOptions: span QA's default is run_squad.py's 128, windows'
    half a window ([CLS] and [SEP] left out); a run that reads no windows has none."""
    assert _resolved(tmp_path, "squad/v1.1").doc_stride == 128
    assert _resolved(tmp_path, "squad/v1.1", doc_stride=64).doc_stride == 64
    assert _resolved(tmp_path, "cmrc2018", doc_stride=64, seq_length=128).doc_stride == 64
    assert _resolved(tmp_path, "glue/sst2").doc_stride is None
    assert _resolved(tmp_path, "conll2003", long_documents="windows", seq_length=64).doc_stride == (64 - 2) // 2
    assert _resolved(tmp_path, "glue/sst2", long_documents="windows", doc_stride=8).doc_stride == 8
    assert _resolved(tmp_path, "glue/sst2", long_documents="sentences", seq_length=64).doc_stride == (64 - 2) // 2


@pytest.mark.parametrize("task, settings, option, message", [
    ("glue/sst2", {"doc_stride": 64}, "doc_stride",
     "--doc-stride 64: task 'glue/sst2' reads no windows under --long-documents truncate (add --long-documents "
     "windows)"),
    ("swag", {"doc_stride": 64}, "doc_stride", "--doc-stride 64: task 'swag' reads no windows (it reads whole texts "
                                               "only)"),
    ("klue/ner", {"long_documents": "windows"}, "long_documents",
     "--long-documents windows: task 'klue/ner' (task type 'tagging') cannot combine windows into one answer; it "
     "takes truncate"),
    ("klue/ner", {"doc_stride": 16}, "doc_stride", "--doc-stride 16: task 'klue/ner' reads no windows (it reads "
                                                   "whole texts only)"),
    ("squad/v1.1", {"doc_stride": 384}, "doc_stride", "--doc-stride 384 must be below --seq-length 384: windows "
                                                      "that far apart would not overlap"),
    ("glue/sst2", {"long_documents": "sliding"}, "long_documents", "--long-documents must be one of truncate, "
                                                                   "windows, sentences, got 'sliding'"),
    ("swag", {"bilstm": 8}, "bilstm", "--bilstm 8: task 'swag' (task type 'multiple_choice') does not take a BiLSTM "
                                      "between its encoder and its output layer (classification, tagging, span_qa do)"),
    ("glue/sst2", {"features": "last_hidden"}, "features", "--features last_hidden: task 'glue/sst2' (task type "
                                                           "'classification') does not take the feature-based "
                                                           "approach (tagging only)"),
    ("squad/v1.1", {"features": "last_hidden"}, "features", "--features last_hidden: task 'squad/v1.1' (task type "
                                                            "'span_qa') does not take the feature-based approach "
                                                            "(tagging only)"),
    ("conll2003", {"features": "mean"}, "features", "--features mean: expected one of embeddings, "
                                                    "second_to_last_hidden, last_hidden, sum_last_four_hidden, "
                                                    "concat_last_four_hidden, sum_all_layers"),
    ("conll2003", {"long_documents": "sentences"}, "long_documents",
     "--long-documents sentences: task 'conll2003' (task type 'tagging') cannot combine windows into one answer; it "
     "takes truncate, windows"),
])
def test_a_setting_the_task_cannot_take_is_one_line_naming_it(tmp_path, task, settings, option, message):
    with pytest.raises(OptionsError) as info:
        _resolved(tmp_path, task, **settings)
    assert str(info.value) == message and info.value.option == option


def test_options_of_another_class_are_refused_naming_the_field(tmp_path):
    from kbert.tasks.classification.task import TableOptions
    from kbert.tasks.core.options import RowsOptions
    from kbert.tasks.span_qa.task import ArticlesOptions

    cases = [("squad/v1.1", {"task_options": TableOptions()}, "task_options",
              "task_options: task type 'span_qa' takes SquadOptions options, got TableOptions"),
             ("glue/sst2", {"named_options": RowsOptions()}, "named_options",
              "named_options: task 'glue/sst2' takes no options of its own, got RowsOptions"),
             ("klue/nli", {"named_options": ArticlesOptions()}, "named_options",
              "named_options: task 'klue/nli' takes RowsOptions, got ArticlesOptions")]
    for task, settings, option, message in cases:
        with pytest.raises(OptionsError) as info:
            _resolved(tmp_path, task, **settings)
        assert str(info.value) == message and info.value.option == option


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



def test_bilstm_and_features_where_they_apply(tmp_path):
    assert _resolved(tmp_path, "squad/v1.1", bilstm=32).bilstm == 32
    assert _resolved(tmp_path, "glue/sst2", bilstm=32).bilstm == 32
    resolved = _resolved(tmp_path, "conll2003", features="concat_last_four_hidden", bilstm=16)
    assert (resolved.features, resolved.bilstm) == ("concat_last_four_hidden", 16)
    with pytest.raises(OptionsError, match=r"^bilstm \(--bilstm\) must be a whole number of LSTM units per "
                                           r"direction \(0: none\), got -3$"):
        FinetuneOptions(task="conll2003", init="a", model_dir="b", bilstm=-3)
