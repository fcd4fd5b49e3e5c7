"""``kbert predict`` (kbert/commands/predict.py) in this process: its flags reach
``kbert.tasks.core.predict.predict_file`` (PredictOptions and the run's settings), its line says how many
rows went where, and a user's error is one line naming the flag or file. predict_file itself (every
task type, the formats, atomic writes) is checked in tests/tasks/core/test_predict.py."""

import csv
import re

import numpy as np
import pytest

from fixtures.cli import run_command

LABELS = ["negative", "positive"]
REVIEWS = ["a gripping film", "dull and overlong, with a plot that never arrives", "ok"]


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory, tiny_model_dir):
    """A classifier of the ``review`` column (random, non-trivial head) saved as kbert.finetune saves one."""
    import keras

    from kbert.tasks import TextClassifier

    keras.utils.set_random_seed(0)
    model = TextClassifier.from_model_dir(tiny_model_dir, label_names=LABELS, seq_length=32)
    for w in model.head.weights:
        w.assign(np.random.default_rng(1).normal(0, 0.5, w.shape).astype("float32"))
    return model.save_model_dir(tmp_path_factory.mktemp("predict_cli") / "reviews", extra_info={
        "task_name": "csv", "text_columns": ["review"], "label_column": "label"})


@pytest.fixture
def comments(tmp_path):
    """A table whose text column is not the one the model was fine-tuned on, with ids of its own."""
    path = tmp_path / "comments.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["key", "comment"])
        writer.writerows([f"k{i}", text] for i, text in enumerate(REVIEWS))
    return path


def _predict(*argv):
    return run_command("predict", *argv)


@pytest.mark.slow
def test_columns_ids_format_and_probabilities_reach_the_file(tmp_path, classifier_dir, comments):
    from kbert.tasks import load_task_model

    out = tmp_path / "out.tsv"
    done = _predict(classifier_dir, "--input", comments, "--output", out, "--format", "tsv",
                    "--probabilities", "--text-columns", "comment", "--id-column", "key", "--batch-size", "2",
                    "--quiet")
    assert done.status == 0, done.err
    assert re.fullmatch(rf"3 predictions \(text_classifier, [\d.]+ s\) -> {re.escape(str(out))}\n", done.out)
    rows = list(csv.DictReader(out.open(encoding="utf-8"), delimiter="\t"))
    assert list(rows[0]) == ["id", "label", "probabilities.negative", "probabilities.positive"]
    assert [r["id"] for r in rows] == ["k0", "k1", "k2"]
    model = load_task_model(classifier_dir)
    assert [r["label"] for r in rows] == model.predict_labels(REVIEWS)
    logits = np.asarray(model.predict_logits({"text_a": REVIEWS}), np.float64)
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose([[float(r[f"probabilities.{n}"]) for n in LABELS] for r in rows], probabilities,
                               atol=1e-4)

    # Without --text-columns the model's own column is read: missing here, named with file and line.
    again = _predict(classifier_dir, "--input", comments, "--output", tmp_path / "o.jsonl",
                     "--quiet")
    assert again.status == 1 and len(again.err.splitlines()) == 1, again.err
    assert again.err.startswith(f"kbert predict: error: {comments}") and "'review'" in again.err
    assert not (tmp_path / "o.jsonl").exists()


def test_flags_become_the_options_and_settings_of_predict_file(monkeypatch, tmp_path, classifier_dir):
    import kbert.tasks.core.predict as library
    from kbert.tasks.core.prediction import PredictOptions

    calls = []

    def predict_file(model_dir, input_path, output_path, fmt, options, **settings):
        calls.append((model_dir, input_path, output_path, fmt, options, settings))
        return {"rows": 7, "model_type": "text_classifier", "seconds": 0.5, "output": output_path}

    monkeypatch.setattr(library, "predict_file", predict_file)
    src, out = tmp_path / "in.txt", tmp_path / "out.json"
    done = _predict(classifier_dir, "--input", src, "--output", out, "--format", "glue",
                    "--task-format", "tsv", "--text-columns", " a, b ", "--long-documents", "windows",
                    "--doc-stride", "8", "--attention", "plain", "--mixed-precision", "mixed_bfloat16",
                    "--overwrite", "--quiet")
    assert done.status == 0, done.err
    assert done.out == f"7 predictions (text_classifier, 0.5 s) -> {out}\n"
    assert calls == [(str(classifier_dir), str(src), str(out), "glue", PredictOptions(
        task_format="tsv", text_columns=("a", "b"), long_documents="windows", doc_stride=8),
        {"show_progress": False, "overwrite": True, "attention": "plain", "mixed_precision": "mixed_bfloat16",
         "network": None})]
    calls.clear()
    assert _predict(classifier_dir, "--input", src, "--output", out).status == 0
    (_, _, _, fmt, options, settings), = calls
    assert fmt is None and options == PredictOptions()  # the defaults are the library's
    assert settings == {"show_progress": True, "overwrite": False, "attention": "auto", "mixed_precision": "float32",
                        "network": None}


def test_user_errors_are_one_line_naming_the_flag_or_file(monkeypatch, tmp_path, classifier_dir, comments):
    out = tmp_path / "out.jsonl"

    def error(*argv):
        result = _predict(*argv)
        assert result.status == 1 and result.out == "", result
        (line,) = result.err.splitlines()
        assert line.startswith("kbert predict: error: "), line
        return line.removeprefix("kbert predict: error: ")

    base = (classifier_dir, "--input", comments, "--output", out)
    assert error(*base, "--batch-size", "0") == "--batch-size must be positive, got 0 (see kbert predict --help)"
    assert error(tmp_path / "none", "--input", comments, "--output", out) == (
        f"model directory {tmp_path / 'none'} does not exist")
    assert error(*base, "--onnx", tmp_path) == (
        f"--onnx {tmp_path}: {tmp_path}: not a kbert ONNX export (no kbert_onnx.json in {tmp_path}); make one with "
        "kbert export onnx MODEL_DIR OUT")
    # Keras fixes its backend when imported: another one in this (TensorFlow) process is refused, named
    assert error(*base, "--backend", "jax").startswith(
        "--backend jax: Keras is already running the tensorflow backend in this process")
    import kbert.cli_support

    monkeypatch.setattr(kbert.cli_support, "use_backend", lambda name: name)  # as in a process started under JAX
    assert error(*base, "--backend", "jax", "--onnx", tmp_path) == (
        "--onnx runs the network in ONNX Runtime; the tokenizer runs in TensorFlow: leave out --backend jax")
    assert not out.exists()
