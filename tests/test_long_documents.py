"""Texts longer than seq_length read in windows by the classification models (kbert.tasks.window_inputs):
one answer per text, equal to the windows' outputs combined by hand from inputs packed independently
(window_starts over the tokenizer's pieces), in the host path and in the graph; texts that fit give
exactly the truncate answer; the settings reload from the model directory."""

import numpy as np
import pytest
import tensorflow as tf

from kbert.tasks import load_task_model
from kbert.tasks.base import TaskModelError
from kbert.tasks.classifier import MultiLabelClassifier, TextClassifier, TextRegressor
from kbert.tasks.windows import window_starts

SHORT = ["a short text", "another one that fits easily", ""]
LONG = " ".join(["the quick brown fox jumps over the lazy dog while everyone watches"] * 9)
MODELS = [(TextClassifier, {"num_classes": 3}, "mean"), (TextRegressor, {}, "mean"),
          (MultiLabelClassifier, {"num_labels": 3}, "max")]


def _pair(tiny_model_dir, cls, kwargs, **settings):
    """The same random head under truncate and under windows."""
    truncate = cls.from_model_dir(tiny_model_dir, seq_length=32, **kwargs, **settings)
    windows = cls.from_model_dir(tiny_model_dir, seq_length=32, long_documents="windows", doc_stride=10, **kwargs,
                                 **settings)
    bias = np.linspace(-1, 1, truncate.head.weights[1].shape[0]).astype("float32")
    truncate.head.weights[1].assign(bias)  # outputs that differ between the classes
    windows.head.set_weights(truncate.head.get_weights())
    return truncate, windows


@pytest.mark.slow
def test_texts_that_fit_give_the_truncate_answer(tiny_model_dir):
    cls, kwargs = TextClassifier, {"num_classes": 3}
    truncate, windows = _pair(tiny_model_dir, cls, kwargs)
    texts = np.array(SHORT, dtype=object)
    np.testing.assert_allclose(windows.predict_logits(texts), truncate.predict_logits(texts), atol=1e-6)
    np.testing.assert_allclose(windows(tf.constant(SHORT), training=False), truncate(tf.constant(SHORT), training=False),
                               atol=1e-6)
    pairs = {"text_a": np.array(["what is it", "q", "x"], dtype=object), "text_b": texts}
    truncate, windows = _pair(tiny_model_dir, cls, kwargs, num_segments=2)
    np.testing.assert_allclose(windows.predict_logits(pairs), truncate.predict_logits(pairs), atol=1e-6)


def _by_hand(model, text, text_a=None):
    """The windows' outputs combined, from windows packed here: [CLS] (A [SEP]) pieces[s:s+room] [SEP]."""
    pieces = model.tokenizer.tokenize_flat(tf.constant([text])).to_list()[0]
    a = [] if text_a is None else model.tokenizer.tokenize_flat(tf.constant([text_a])).to_list()[0]
    ids = model.tokenizer.special_token_ids
    room = model.seq_length - 2 - (len(a) + 1 if text_a is not None else 0)
    rows = []
    for s in window_starts(len(pieces), room, model.doc_stride):
        body = [ids["start_of_sequence_id"]] + (a + [ids["end_of_segment_id"]] if text_a is not None else [])
        types = [0] * len(body)
        chunk = pieces[s:s + room] + [ids["end_of_segment_id"]]
        body, types = body + chunk, types + [1 if text_a is not None else 0] * len(chunk)
        pad = model.seq_length - len(body)
        rows.append((body + [0] * pad, [1] * len(body) + [0] * pad, types + [0] * pad))
    packed = {k: tf.constant([r[i] for r in rows], tf.int32)
              for i, k in enumerate(["input_word_ids", "input_mask", "input_type_ids"])}
    outputs = model(packed, training=False).numpy()
    return len(rows), outputs


@pytest.mark.slow
@pytest.mark.parametrize("cls, kwargs, how", MODELS)
def test_long_texts_combine_their_windows(tiny_model_dir, cls, kwargs, how):
    _, model = _pair(tiny_model_dir, cls, kwargs)
    texts = [LONG, "short", LONG[:150]]
    expected = []
    for text in texts:
        count, outputs = _by_hand(model, text)
        expected.append(outputs.max(axis=0) if how == "max" else outputs.mean(axis=0))
    assert _by_hand(model, LONG)[0] > 3
    host = model.predict_logits(np.array(texts, dtype=object), batch_size=4)
    np.testing.assert_allclose(host, np.array(expected), atol=1e-5)
    np.testing.assert_allclose(model(tf.constant(texts), training=False), np.array(expected), atol=1e-5)


@pytest.mark.slow
def test_pairs_window_text_b_and_keep_text_a(tiny_model_dir):
    _, model = _pair(tiny_model_dir, TextClassifier, {"num_classes": 2}, num_segments=2)
    pairs = {"text_a": np.array(["what does the fox do", "q"], dtype=object),
             "text_b": np.array([LONG, LONG[:90]], dtype=object)}
    expected = np.array([_by_hand(model, b, a)[1].mean(axis=0) for a, b in zip(pairs["text_a"], pairs["text_b"])])
    np.testing.assert_allclose(model.predict_logits(pairs), expected, atol=1e-5)
    np.testing.assert_allclose(model(pairs, training=False), expected, atol=1e-5)
    too_long = {"text_a": np.array(["fits", LONG], dtype=object), "text_b": np.array(["b", "b"], dtype=object)}
    with pytest.raises(ValueError, match=r"^row 2: text A has \d+ word pieces, which leave no room for text B"):
        model.predict_logits(too_long)


@pytest.mark.slow
def test_settings_reload_from_the_model_directory(tiny_model_dir, tmp_path):
    _, model = _pair(tiny_model_dir, TextClassifier, {"num_classes": 2})
    model.save_model_dir(tmp_path / "m")
    reloaded = load_task_model(tmp_path / "m")
    assert (reloaded.long_documents, reloaded.doc_stride) == ("windows", 10)
    np.testing.assert_allclose(reloaded.predict_logits(np.array([LONG], dtype=object)),
                               model.predict_logits(np.array([LONG], dtype=object)), atol=1e-6)
    assert load_task_model(tmp_path / "m", long_documents="truncate").long_documents == "truncate"


@pytest.mark.parametrize("settings, message", [
    ({"long_documents": "windows", "doc_stride": 32}, "--doc-stride 32 must be below --seq-length 32"),
    ({"long_documents": "sliding"}, "--long-documents must be one of truncate, windows"),
])
def test_bad_settings(tiny_model_dir, settings, message):
    with pytest.raises(TaskModelError, match=message):
        TextClassifier.from_model_dir(tiny_model_dir, seq_length=32, num_classes=2, **settings)


@pytest.mark.parametrize("meta, settings, message", [
    ({"type": "multiple_choice", "seq_length": 64}, {"long_documents": "windows"},
     "--long-documents windows: a multiple_choice model \\(task type 'multiple_choice'\\) cannot combine windows"),
    ({"type": "text_classifier", "seq_length": 64}, {"doc_stride": 64}, "--doc-stride 64 must be below --seq-length 64"),
])
def test_predict_and_export_refuse_what_cannot_work(meta, settings, message):
    from kbert.tasks.registry import task_type_for_model
    from kbert.tasks.windows import model_settings

    with pytest.raises(ValueError, match=message):
        model_settings(task_type_for_model(meta["type"]), meta, **settings)
    # what they pass to load_task_model: only the settings the model class takes
    assert model_settings(task_type_for_model("text_classifier"), {"type": "text_classifier", "seq_length": 64},
                          "windows", 16) == {"long_documents": "windows", "doc_stride": 16}
    assert model_settings(task_type_for_model("span_qa"), {"type": "span_qa", "seq_length": 64}, "windows", 16) == \
        {"doc_stride": 16}


@pytest.mark.slow
def test_jax_predicts_the_same_windows_from_host_ids(tiny_model_dir, tmp_path):
    import json
    import subprocess
    import sys

    from conftest import REPO, cli_env

    _, model = _pair(tiny_model_dir, TextClassifier, {"num_classes": 3})
    model.save_model_dir(tmp_path / "m")
    texts = [LONG, "short", LONG[:150]]
    code = ("import json, sys, numpy as np\nfrom kbert.tasks import load_task_model\n"
            f"m = load_task_model({str(tmp_path / 'm')!r})\n"
            f"print(json.dumps(m.predict_logits(np.array({texts!r}, dtype=object)).tolist()))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=600,
                         env={**cli_env(), "KERAS_BACKEND": "jax"})
    assert run.returncode == 0, run.stderr[-3000:]
    jax_logits = np.array(json.loads(run.stdout.strip().splitlines()[-1]))
    np.testing.assert_allclose(jax_logits, model.predict_logits(np.array(texts, dtype=object)), atol=1e-5)
