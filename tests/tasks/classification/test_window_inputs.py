"""Texts longer than seq_length read in windows by the classification models (kbert.tasks.classification.window_inputs):
one answer per text, equal to the windows' outputs combined by hand from inputs packed independently
(window_starts over the tokenizer's pieces), in the host path and in the graph; texts that fit give
exactly the truncate answer; the settings reload from the model directory."""

import numpy as np
import pytest
import tensorflow as tf

from kbert.tasks import load_task_model
from kbert.errors import TaskModelError
from kbert.tasks.classification.model import MultiLabelClassifier, TextClassifier, TextRegressor
from kbert.tasks.core.heads import TokenAttentionHead
from fixtures.windows_reference import window_starts

SHORT = ["a short text", "another one that fits easily", ""]
LONG = " ".join(["the quick brown fox jumps over the lazy dog while everyone watches"] * 9)
MODELS = [(TextClassifier, {"num_classes": 3}, "logmeanexp"), (TextRegressor, {}, "mean"),
          (MultiLabelClassifier, {"num_labels": 3}, "max")]
POOL = {"mean": lambda w: w.mean(axis=0), "max": lambda w: w.max(axis=0),
        "logmeanexp": lambda w: np.log(np.exp(w.astype(np.float64)).mean(axis=0))}


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
    """(number of windows, each window's outputs), from windows packed here (``_packed_by_hand``)."""
    packed = _packed_by_hand(model, text, text_a)
    return len(packed["input_word_ids"]), model(packed, training=False).numpy()


def _packed_by_hand(model, text, text_a=None):
    """A text's windows packed here: [CLS] (A [SEP]) pieces[s:s+room] [SEP]."""
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
    return {k: tf.constant([r[i] for r in rows], tf.int32)
            for i, k in enumerate(["input_word_ids", "input_mask", "input_type_ids"])}


@pytest.mark.slow
@pytest.mark.parametrize("cls, kwargs, how", MODELS)
def test_long_texts_combine_their_windows(tiny_model_dir, cls, kwargs, how):
    _, model = _pair(tiny_model_dir, cls, kwargs)
    texts = [LONG, "short", LONG[:150]]
    expected = []
    for text in texts:
        count, outputs = _by_hand(model, text)
        expected.append(POOL[how](outputs))
    assert _by_hand(model, LONG)[0] > 3
    host = model.predict_logits(np.array(texts, dtype=object), batch_size=4)
    np.testing.assert_allclose(host, np.array(expected), atol=1e-5)
    np.testing.assert_allclose(model(tf.constant(texts), training=False), np.array(expected), atol=1e-5)


@pytest.mark.slow
def test_pairs_window_text_b_and_keep_text_a(tiny_model_dir):
    _, model = _pair(tiny_model_dir, TextClassifier, {"num_classes": 2}, num_segments=2)
    pairs = {"text_a": np.array(["what does the fox do", "q"], dtype=object),
             "text_b": np.array([LONG, LONG[:90]], dtype=object)}
    expected = np.array([POOL["logmeanexp"](_by_hand(model, b, a)[1]) for a, b in zip(pairs["text_a"], pairs["text_b"])])
    np.testing.assert_allclose(model.predict_logits(pairs), expected, atol=1e-5)
    np.testing.assert_allclose(model(pairs, training=False), expected, atol=1e-5)
    too_long = {"text_a": np.array(["fits", LONG], dtype=object), "text_b": np.array(["b", "b"], dtype=object)}
    with pytest.raises(ValueError, match=r"^row 2: text A has \d+ word pieces, which leave no room for text B"):
        model.predict_logits(too_long)
    # read in slices of rows, the row is still counted in the whole input
    from kbert.tasks.classification.window_inputs import host_windows

    five = {"text_a": np.array(["fits"] * 3 + [LONG, "fits"], dtype=object), "text_b": np.array(["b"] * 5, dtype=object)}
    with pytest.raises(ValueError, match=r"^row 4: text A has"):
        host_windows(model, five, batch_rows=2)


@pytest.mark.slow
def test_settings_reload_from_the_model_directory(tiny_model_dir, tmp_path):
    _, model = _pair(tiny_model_dir, TextClassifier, {"num_classes": 2})
    model.save_model_dir(tmp_path / "m")
    reloaded = load_task_model(tmp_path / "m")
    assert (reloaded.long_documents, reloaded.doc_stride) == ("windows", 10)
    np.testing.assert_allclose(reloaded.predict_logits(np.array([LONG], dtype=object)),
                               model.predict_logits(np.array([LONG], dtype=object)), atol=1e-6)
    assert load_task_model(tmp_path / "m", long_documents="truncate").long_documents == "truncate"
    # A model directory written before the pooling was recorded keeps the mean it was made with.
    from kbert.model_dir import read_metadata, write_metadata

    assert reloaded.window_pooling == "logmeanexp"
    metadata = read_metadata(tmp_path / "m")
    del metadata["task"]["window_pooling"]
    write_metadata(tmp_path / "m", metadata)
    older = load_task_model(tmp_path / "m")
    assert older.window_pooling == "mean"
    packed, document = older.window_ids(np.array([LONG], dtype=object))
    windows = older({k: tf.constant(v) for k, v in packed.items()}, training=False).numpy()
    np.testing.assert_allclose(older.predict_logits(np.array([LONG], dtype=object)), windows.mean(0, keepdims=True),
                               atol=1e-5)


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
    from kbert.tasks.core.registry import task_type_for_model
    from kbert.tasks.core.windows import model_settings

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


# -- document-level training: a batch of documents, their windows pooled, one loss each ---------------
DOCUMENTS = [LONG, "short", LONG[:150], LONG[:300], "another short one"]


def _document_batch(model, texts, host=None, **kwargs):
    from kbert.tasks.classification.window_inputs import document_batches

    packed, document = model.window_ids(np.array(texts, dtype=object))
    labels = np.arange(len(texts)) % 2
    ds = document_batches(packed, document, labels, batch_size=len(texts), shuffle=False, host=host, **kwargs)
    return packed, document, next(iter(ds))


@pytest.mark.slow
@pytest.mark.parametrize("pooling", ["mean", "max", "logmeanexp"])
def test_a_batch_of_documents_gives_each_document_its_prediction(tiny_model_dir, pooling):
    _, model = _pair(tiny_model_dir, TextClassifier, {"num_classes": 3}, window_pooling=pooling)
    assert model.window_pooling == pooling
    packed, document, (x, labels) = _document_batch(model, DOCUMENTS)
    assert len(x["window_document"]) == len(document) > len(DOCUMENTS) and labels.shape == (len(DOCUMENTS),)
    expected = model.predict_logits(np.array(DOCUMENTS, dtype=object))
    # The host path's numpy pooling, from each window's logits (model on the windows alone).
    windows = model({k: tf.constant(v) for k, v in packed.items()}, training=False).numpy()
    by_hand = np.array([POOL[pooling](windows[document == d]) for d in range(len(DOCUMENTS))])
    np.testing.assert_allclose(expected, by_hand, atol=1e-5)
    np.testing.assert_allclose(model(x, training=False), expected, atol=1e-5)
    np.testing.assert_allclose(model(tf.constant(DOCUMENTS), training=False), expected, atol=1e-5)  # the export's path
    # Padded for a fixed-shape backend: padding windows belong to no document, padding documents are 0.
    _, _, (x, labels, weights) = _document_batch(model, DOCUMENTS, host=(8, 16))
    assert x["input_word_ids"].shape[0] % 8 == 0 and x["input_word_ids"].shape[1] % 16 == 0
    np.testing.assert_array_equal(weights, [1] * len(DOCUMENTS) + [0] * (8 - len(DOCUMENTS)))
    padded = model(x, training=False).numpy()
    np.testing.assert_allclose(padded[:len(DOCUMENTS)], expected, atol=1e-5)
    np.testing.assert_array_equal(padded[len(DOCUMENTS):], 0)


@pytest.mark.slow
def test_the_loss_is_taken_once_per_document(tiny_model_dir):
    _, model = _pair(tiny_model_dir, TextClassifier, {"num_classes": 2})
    model.compile(optimizer="sgd")
    _, _, (x, labels) = _document_batch(model, DOCUMENTS)
    logits = model.predict_logits(np.array(DOCUMENTS, dtype=object)).astype(np.float64)
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -log_p[np.arange(len(DOCUMENTS)), labels.numpy()].mean()
    batch = tf.data.Dataset.from_tensors((x, labels))  # the windows and the documents: two batch sizes
    assert model.evaluate(batch, verbose=0, return_dict=True)["loss"] == pytest.approx(expected, rel=1e-5)


def test_max_windows_draws_each_documents_windows_afresh_each_epoch():
    from kbert.tasks.classification.window_inputs import DOCUMENT_MASK, WINDOW_DOCUMENT, document_batches

    document = np.repeat(np.arange(4), [1, 6, 2, 5])
    ids = np.arange(len(document))[:, None].repeat(3, axis=1)  # a window's ids say which window it is
    packed = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
    ds = document_batches(packed, document, np.arange(4), batch_size=3, max_windows=3, seed=0)
    assert int(ds.cardinality()) == 2
    drawn = {1: set(), 3: set()}
    for _ in range(12):
        seen = []
        for x, labels in ds:
            windows, owner = x["input_word_ids"][:, 0].numpy(), x[WINDOW_DOCUMENT].numpy()
            assert len(x[DOCUMENT_MASK]) == len(labels)
            for row, label in enumerate(labels.numpy()):
                mine = windows[owner == row]
                assert set(mine) <= set(np.flatnonzero(document == label)) and list(mine) == sorted(mine)
                assert len(mine) == min(3, int((document == label).sum()))
                seen.append(label)
                if label in drawn:
                    drawn[label].add(tuple(mine))
        assert sorted(seen) == [0, 1, 2, 3]  # every document once an epoch
    assert len(drawn[1]) > 3 and len(drawn[3]) > 3  # other windows in other epochs


# -- attention pooling: a learned score per token, softmax over every token of a document's windows --
def _attention_by_hand(model, text):
    """The document's logits in numpy: every real token of every window (packed here) scored by the
    head's score layer, softmax over all of them together, the weighted sum through the dense layer."""
    packed = _packed_by_hand(model, text)
    sequence = model.encoder(packed, training=False)["sequence_output"].numpy().astype(np.float64)
    tokens = sequence[packed["input_mask"].numpy() == 1]  # [tokens of all windows, H]
    (score_w, score_b), (dense_w, dense_b) = model.head.score.get_weights(), model.head.dense.get_weights()
    scores = tokens @ score_w[:, 0] + score_b[0]
    attention = np.exp(scores - scores.max())
    attention /= attention.sum()
    return (attention @ tokens) @ dense_w + dense_b


def _attention_model(tiny_model_dir, cls=TextClassifier, kwargs=None):
    model = cls.from_model_dir(tiny_model_dir, seq_length=32, long_documents="windows", doc_stride=10,
                               window_pooling="attention", **({"num_classes": 3} if kwargs is None else kwargs))
    rng = np.random.default_rng(0)  # scores and outputs that differ between tokens and classes
    model.head.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.head.get_weights()])
    return model


@pytest.mark.slow
@pytest.mark.parametrize("cls, kwargs", [(TextClassifier, {"num_classes": 3}), (TextRegressor, {}),
                                         (MultiLabelClassifier, {"num_labels": 2})])
def test_attention_pools_every_token_of_a_document(tiny_model_dir, cls, kwargs):
    model = _attention_model(tiny_model_dir, cls, kwargs)
    assert isinstance(model.head, TokenAttentionHead)
    texts = [LONG, "short", LONG[:150], LONG[:300]]
    expected = np.array([_attention_by_hand(model, t) for t in texts]).reshape(len(texts), -1)
    expected = expected[:, 0] if cls is TextRegressor else expected
    assert _by_hand(model, LONG)[0] > 3
    np.testing.assert_allclose(model.predict_logits(np.array(texts, dtype=object), batch_size=5), expected, atol=1e-4)
    np.testing.assert_allclose(model(tf.constant(texts), training=False), expected, atol=1e-4)  # the export's path
    _, _, (x, _) = _document_batch(model, texts)
    np.testing.assert_allclose(model(x, training=False), expected, atol=1e-4)  # training's path
    _, _, (x, _, weights) = _document_batch(model, texts, host=(8, 16))  # padded for a fixed-shape backend
    padded = model(x, training=False).numpy()
    np.testing.assert_allclose(padded[:len(texts)], expected, atol=1e-4)
    np.testing.assert_array_equal(padded[len(texts):], 0)


@pytest.mark.slow
def test_attention_pooling_reloads_and_runs_under_jax(tiny_model_dir, tmp_path):
    import json
    import subprocess
    import sys

    from conftest import REPO, cli_env

    model = _attention_model(tiny_model_dir)
    model.save_model_dir(tmp_path / "m")
    texts = [LONG, "short", LONG[:150]]
    reloaded = load_task_model(tmp_path / "m")
    assert reloaded.window_pooling == "attention"
    expected = model.predict_logits(np.array(texts, dtype=object))
    np.testing.assert_allclose(reloaded.predict_logits(np.array(texts, dtype=object)), expected, atol=1e-6)
    code = ("import json, numpy as np\nfrom kbert.tasks import load_task_model\n"
            f"m = load_task_model({str(tmp_path / 'm')!r})\n"
            f"print(json.dumps(m.predict_logits(np.array({texts!r}, dtype=object), batch_size=3).tolist()))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=600,
                         env={**cli_env(), "KERAS_BACKEND": "jax"})
    assert run.returncode == 0, run.stderr[-3000:]
    np.testing.assert_allclose(np.array(json.loads(run.stdout.strip().splitlines()[-1])), expected, atol=1e-5)


def test_attention_pooling_takes_windows(tiny_model_dir):
    with pytest.raises(TaskModelError, match=r"window_pooling 'attention' pools the tokens of a text's windows "
                                             r"\(or its sentences\): it takes long_documents='windows' or "
                                             "'sentences'"):
        TextClassifier.from_model_dir(tiny_model_dir, seq_length=32, num_classes=2, window_pooling="attention")


@pytest.mark.slow
def test_attention_pooling_trains_predicts_and_exports_alike(tiny_model_dir, tmp_path):
    """kbert finetune with --window-pooling attention, then kbert predict and the exported SavedModel
    on the evaluation file: the same label for every document as the evaluation's predictions file."""
    import json

    from kbert import PredictOptions, predict_file
    from kbert.export.task import export_task
    from kbert.tasks.classification.task import TableOptions
    from kbert.tasks.core.options import FinetuneOptions
    from kbert.training.finetune import finetune

    rng = np.random.default_rng(0)
    words = LONG.split()
    rows = [{"text": " ".join(rng.choice(words, int(rng.integers(5, 60)))) + (" good" if i % 2 else " bad"),
             "label": "pos" if i % 2 else "neg"} for i in range(24)]
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = finetune(FinetuneOptions(
        task="jsonl", init=str(tiny_model_dir), model_dir=str(tmp_path / "m"), train_file=str(data),
        eval_file=str(data), seq_length=32, doc_stride=16, long_documents="windows", epochs=1, batch_size=4,
        learning_rate=1e-3, task_options=TableOptions(text_columns=("text",), window_pooling="attention")),
        progress_bar=False, log=lambda *a, **k: None)
    assert summary["window_pooling"] == "attention" and summary["train_windows"] > len(rows)
    evaluated = [line.split("\t")[1] for line in (tmp_path / "m" / "predictions.tsv").read_text().splitlines()[1:]]
    predict_file(tmp_path / "m", data, tmp_path / "predicted.jsonl", options=PredictOptions(probabilities=True))
    predicted = [json.loads(line) for line in (tmp_path / "predicted.jsonl").read_text().splitlines()]
    export_task(tmp_path / "m", tmp_path / "export" / "1")
    served = tf.saved_model.load(str(tmp_path / "export" / "1")).signatures["serving_default"]
    exported = served(text=tf.constant([r["text"] for r in rows]))
    assert len(evaluated) == len(rows) and [p["label"] for p in predicted] == evaluated
    assert [b.decode() for b in exported["labels"].numpy()] == evaluated
    # kbert predict pools on the host, the export in its graph: the same probabilities
    np.testing.assert_allclose([[p["probabilities"][n] for n in ("neg", "pos")] for p in predicted],
                               exported["probabilities"].numpy(), atol=1e-5)


@pytest.mark.parametrize("how", ["mean", "max", "logmeanexp", "attention"])
def test_combine_numpy_is_combine(how):
    """The host's combine (kbert predict) against the graph's (keras.ops): a document without windows
    gets zeros, a padding window (document -1) is dropped, the others pool as in the graph."""
    from kbert.tasks.classification.window_inputs import combine, combine_numpy

    rng = np.random.default_rng(0)
    document = np.array([0, 0, 0, 2, -1, 3, 3])  # document 1 has no window
    outputs = rng.normal(0, 3, (len(document), 3)).astype(np.float32)
    weights = rng.normal(0, 3, len(document)).astype(np.float32) if how == "attention" else None
    want = np.asarray(combine(outputs, document, 5, how, weights))
    got = combine_numpy(outputs, document, 5, how, weights)
    np.testing.assert_array_equal(want[[1, 4]], 0)
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(combine_numpy(outputs[:, 0], document, 5, how, weights), want[:, 0], atol=1e-5)
