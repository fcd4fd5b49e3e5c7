"""--long-documents sentences (kbert.tasks.classification.window_inputs.sentence_inputs): each sentence
encoded alone, the document's answer pooled over its sentences. Checked against an independent
recomputation: every sentence (split by hand) packed alone as a one-text truncate input, run through
the encoder, the head's weights applied and the pooling done in numpy."""

import numpy as np
import pytest
import tensorflow as tf

from kbert.errors import Error, TaskModelError
from kbert.tasks.classification.model import MultiLabelClassifier, TextClassifier, TextRegressor
from kbert.tasks.classification.window_inputs import DOCUMENT_MASK, WINDOW_DOCUMENT, document_batches, host_windows
from kbert.tasks.core.heads import PooledHead, SentenceAttentionHead

# (text, its sentences by hand); the last sentence of LONG is longer than one input (seq_length 32)
RUN_ON = " ".join(["the quick brown fox jumps over the lazy dog while everyone watches"] * 4) + "."
DOCUMENTS = [
    ("It was a fine day. The film was good! Was it?", ["It was a fine day.", "The film was good!", "Was it?"]),
    ("just one sentence", ["just one sentence"]),
    ("First line\nsecond line. And more", ["First line", "second line.", "And more"]),
    ("Short one. " + RUN_ON, ["Short one.", RUN_ON]),
    ("", [""]),
]
MODELS = [(TextClassifier, {"num_classes": 3}), (TextRegressor, {}), (MultiLabelClassifier, {"num_labels": 2})]


def _model(tiny_model_dir, cls=TextClassifier, kwargs=None, **settings):
    model = cls.from_model_dir(tiny_model_dir, seq_length=32, long_documents="sentences", doc_stride=10,
                               **({"num_classes": 3} if kwargs is None else kwargs), **settings)
    rng = np.random.default_rng(0)  # scores and outputs that differ between sentences and classes
    model.head.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.head.get_weights()])
    return model


def _units_by_hand(model, sentence):
    """A sentence's pooled [CLS] vectors: packed alone ([CLS] pieces [SEP]), cut into windows of
    seq_length - 2 pieces every doc_stride pieces when longer."""
    pieces = model.tokenizer.tokenize_flat(tf.constant([sentence])).to_list()[0]
    ids = model.tokenizer.special_token_ids
    room, rows, start = model.seq_length - 2, [], 0
    while True:
        rows.append([ids["start_of_sequence_id"], *pieces[start:start + room], ids["end_of_segment_id"]])
        if start + room >= len(pieces):
            break
        start += min(model.doc_stride, room)
    width = model.seq_length
    packed = {"input_word_ids": np.array([r + [0] * (width - len(r)) for r in rows], np.int32),
              "input_mask": np.array([[1] * len(r) + [0] * (width - len(r)) for r in rows], np.int32),
              "input_type_ids": np.zeros((len(rows), width), np.int32)}
    return model.encoder(packed, training=False)["pooled_output"].numpy().astype(np.float64)


def _document_by_hand(model, sentences, how):
    pooled = np.concatenate([_units_by_hand(model, s) for s in sentences])
    dense_w, dense_b = model.head.dense.get_weights()
    logits = pooled @ dense_w + dense_b
    if how == "attention":
        score_w, score_b = model.head.score.get_weights()
        scores = pooled @ score_w[:, 0] + score_b[0]
        share = np.exp(scores - scores.max())
        return (share / share.sum()) @ logits
    return {"mean": logits.mean(axis=0), "max": logits.max(axis=0)}[how]


@pytest.mark.slow
@pytest.mark.parametrize("cls, kwargs", MODELS)
def test_sentences_pool_each_sentence_encoded_alone(tiny_model_dir, cls, kwargs):
    model = _model(tiny_model_dir, cls, kwargs)
    assert model.window_pooling == "attention" and isinstance(model.head, SentenceAttentionHead)
    assert len(_units_by_hand(model, RUN_ON)) > 1  # the run-on sentence is read in windows
    texts = [t for t, _ in DOCUMENTS]
    expected = np.array([_document_by_hand(model, s, "attention") for _, s in DOCUMENTS]).reshape(len(texts), -1)
    expected = expected[:, 0] if cls is TextRegressor else expected
    np.testing.assert_allclose(model.predict_logits(np.array(texts, dtype=object), batch_size=3), expected,
                               atol=1e-4)
    np.testing.assert_allclose(model(tf.constant(texts), training=False), expected, atol=1e-4)  # the export's path
    packed, document = host_windows(model, np.array(texts, dtype=object))
    batches = document_batches(packed, document, np.zeros(len(texts), np.float32), batch_size=len(texts),
                               shuffle=False)
    x, _ = next(iter(batches))  # training's path: the documents' sentences in one batch
    np.testing.assert_allclose(model(x, training=False), expected, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["mean", "max"])
def test_mean_and_max_pool_the_sentences_logits(tiny_model_dir, how):
    model = _model(tiny_model_dir, window_pooling=how)
    assert type(model.head) is PooledHead
    texts = [t for t, _ in DOCUMENTS]
    expected = np.array([_document_by_hand(model, s, how) for _, s in DOCUMENTS])
    np.testing.assert_allclose(model.predict_logits(np.array(texts, dtype=object)), expected, atol=1e-4)
    np.testing.assert_allclose(model(tf.constant(texts), training=False), expected, atol=1e-4)


@pytest.mark.slow
def test_a_text_of_one_sentence_gives_the_truncate_answer(tiny_model_dir):
    sentences = _model(tiny_model_dir)
    truncate = TextClassifier.from_model_dir(tiny_model_dir, seq_length=32, num_classes=3)
    truncate.head.dense.set_weights(sentences.head.dense.get_weights())  # not the score
    texts = ["just one sentence", "The film was good!", "no full stop at all here", ""]
    np.testing.assert_allclose(sentences.predict_logits(np.array(texts, dtype=object)),
                               truncate.predict_logits(np.array(texts, dtype=object)), atol=1e-5)
    np.testing.assert_allclose(sentences(tf.constant(texts), training=False),
                               truncate(tf.constant(texts), training=False), atol=1e-5)


@pytest.mark.slow
def test_sentences_of_a_batch_are_ordered_by_length(tiny_model_dir, monkeypatch):
    """predict_logits batches every sentence of every text by length: a batch of short sentences
    is not padded to the longest sentence of its documents."""
    model = _model(tiny_model_dir)
    widths = []
    encode = type(model).encode

    def spy(self, inputs, training=None):
        out = encode(self, inputs, training=training)
        widths.append(int(out["sequence_output"].shape[1]))  # eager: the batch's real width
        return out

    monkeypatch.setattr(type(model), "encode", spy)
    texts = ["Tiny. " + RUN_ON, "Small. Also small.", "Short. " + RUN_ON[:90] + "."]
    tf.config.run_functions_eagerly(True)
    try:
        model.predict_logits(np.array(texts, dtype=object), batch_size=3)
    finally:
        tf.config.run_functions_eagerly(False)
    # 4 short sentences (2 batches of <= 3, the first of the three shortest), then the long ones' windows
    assert widths[0] <= 6 and widths == sorted(widths) and widths[-1] == model.seq_length, widths


def test_sentences_refuse_pairs_and_mislabelled_settings(tiny_model_dir):
    with pytest.raises(Error, match="--long-documents sentences splits one text a row"):
        TextClassifier.from_model_dir(tiny_model_dir, seq_length=32, num_classes=2, num_segments=2,
                                      long_documents="sentences")
    with pytest.raises(TaskModelError, match="--long-documents must be one of truncate, windows, sentences, got "
                                             "'paragraphs'"):
        TextClassifier.from_model_dir(tiny_model_dir, seq_length=32, num_classes=2, long_documents="paragraphs")
    from kbert.tasks.core.windows import window_settings

    with pytest.raises(Error, match="--long-documents sentences: this model takes truncate, windows"):
        window_settings("sentences", None, 32)  # the default modes: a tagger's


def test_predict_refuses_another_mode_for_an_attention_model():
    from kbert.tasks.classification.task import Classification
    from kbert.tasks.core.windows import model_settings

    meta = {"type": "text_classifier", "seq_length": 32, "long_documents": "sentences", "window_pooling": "attention"}
    with pytest.raises(Error, match="--long-documents windows: this model learned its attention over sentences"):
        model_settings(Classification(), meta, "windows")
    assert model_settings(Classification(), {**meta, "window_pooling": "mean"}, "windows") == {
        "long_documents": "windows"}


def test_document_batches_carry_the_sentences_document(tiny_model_dir):
    model = _model(tiny_model_dir, window_pooling="mean")
    texts = np.array(["Yes. No. Maybe.", "one", "x. y"], dtype=object)
    packed, document = host_windows(model, texts)
    np.testing.assert_array_equal(document, [0, 0, 0, 1, 2, 2])
    x, _ = next(iter(document_batches(packed, document, np.zeros(3, np.float32), batch_size=2, shuffle=False)))
    np.testing.assert_array_equal(x[WINDOW_DOCUMENT], [0, 0, 0, 1])
    np.testing.assert_array_equal(x[DOCUMENT_MASK], [1, 1])


@pytest.mark.slow
def test_sentences_train_predict_reload_and_export_alike(tiny_model_dir, tmp_path, shared_data):
    """kbert finetune --long-documents sentences on documents whose label one sentence carries (real
    Emma sentences around it), then load_task_model, kbert predict and the exported SavedModel on the
    evaluation file: the evaluation's label for every document; the ONNX export refuses the mode."""
    import json

    from kbert import PredictOptions, predict_file
    from kbert.export.onnx.runtime import OnnxExportError
    from kbert.export.task import export_task
    from kbert.tasks import load_task_model
    from kbert.tasks.classification.task import TableOptions
    from kbert.tasks.core.options import FinetuneOptions
    from kbert.training.finetune import finetune

    emma = " ".join((shared_data / "corpus" / "en" / "emma.txt").read_text(encoding="utf-8").split())
    filler = [s for s in _split_on_host(emma[20000:40000]) if 20 < len(s) < 200][:60]
    rng = np.random.default_rng(0)
    rows = []
    for i in range(24):
        body = list(rng.choice(filler, int(rng.integers(3, 8)), replace=False))
        body.insert(int(rng.integers(1, len(body) + 1)), "The film was wonderful." if i % 2 else "The film was dreadful.")
        rows.append({"text": " ".join(body), "label": "pos" if i % 2 else "neg"})
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = finetune(FinetuneOptions(
        task="jsonl", init=str(tiny_model_dir), model_dir=str(tmp_path / "m"), train_file=str(data),
        eval_file=str(data), seq_length=32, long_documents="sentences", epochs=1, batch_size=4,
        learning_rate=1e-3, task_options=TableOptions(text_columns=("text",), max_sentences=4)),
        progress_bar=False, log=lambda *a, **k: None)
    assert summary["window_pooling"] == "attention" and summary["max_sentences"] == 4
    assert summary["train_windows"] > 4 * len(rows) and summary["documents_over_max_sentences"] > 0
    evaluated = [line.split("\t")[1] for line in (tmp_path / "m" / "predictions.tsv").read_text().splitlines()[1:]]
    reloaded = load_task_model(tmp_path / "m")
    assert reloaded.long_documents == "sentences" and isinstance(reloaded.head, SentenceAttentionHead)
    texts = np.array([r["text"] for r in rows], dtype=object)
    assert reloaded.predict_labels(texts) == evaluated
    predict_file(tmp_path / "m", data, tmp_path / "predicted.jsonl", options=PredictOptions(probabilities=True))
    predicted = [json.loads(line) for line in (tmp_path / "predicted.jsonl").read_text().splitlines()]
    export_task(tmp_path / "m", tmp_path / "export" / "1")
    served = tf.saved_model.load(str(tmp_path / "export" / "1")).signatures["serving_default"]
    exported = served(text=tf.constant(list(texts)))
    assert len(evaluated) == len(rows) and [p["label"] for p in predicted] == evaluated
    assert [b.decode() for b in exported["labels"].numpy()] == evaluated
    np.testing.assert_allclose([[p["probabilities"][n] for n in ("neg", "pos")] for p in predicted],
                               exported["probabilities"].numpy(), atol=1e-5)
    from conftest import require

    require("onnx")
    require("onnxruntime")
    from kbert.export.onnx.export import export_onnx

    with pytest.raises(OnnxExportError, match="a model of --long-documents sentences splits each text"):
        export_onnx(tmp_path / "m", tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()


def _split_on_host(text):
    from kbert.text.sentences import split_sentences

    return [s.decode() for s in split_sentences([text]).to_list()[0]]


def test_max_sentences_is_a_positive_whole_number():
    from kbert.errors import OptionsError
    from kbert.tasks.classification.task import TableOptions

    assert TableOptions(max_sentences=3).max_sentences == 3
    for bad in (0, -1, 2.5, True):
        with pytest.raises(OptionsError, match="--max-sentences must be a positive whole number"):
            TableOptions(max_sentences=bad)


def test_sentences_refuse_training_window_by_window(tiny_model_dir, tmp_path):
    import json

    from kbert.errors import OptionsError
    from kbert.tasks.classification.task import TableOptions
    from kbert.tasks.core.options import FinetuneOptions
    from kbert.training.finetune import finetune

    data = tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps({"text": f"One. Two {i}.", "label": str(i % 2)}) + "\n" for i in range(4)))
    with pytest.raises(OptionsError, match="--window-training windows: --long-documents sentences trains on "
                                           "documents only"):
        finetune(FinetuneOptions(task="jsonl", init=str(tiny_model_dir), model_dir=str(tmp_path / "m"),
                                 train_file=str(data), eval_file=str(data), seq_length=32, long_documents="sentences",
                                 task_options=TableOptions(text_columns=("text",), window_training="windows")),
                 progress_bar=False, log=lambda *a, **k: None)
    assert not (tmp_path / "m" / "kbert.json").exists()


@pytest.mark.slow
def test_sentences_reload_and_predict_alike_under_jax(tiny_model_dir, tmp_path):
    """Under JAX the sentences are split and packed on the host (document batches for attention):
    the same logits as TensorFlow's from the reloaded model directory."""
    import json
    import subprocess
    import sys

    from conftest import REPO, cli_env

    texts = [t for t, _ in DOCUMENTS]
    expected = {}
    for how in ("attention", "mean"):
        model = _model(tiny_model_dir, window_pooling=how)
        model.save_model_dir(tmp_path / how)
        expected[how] = model.predict_logits(np.array(texts, dtype=object)).tolist()
    code = ("import json, numpy as np\nfrom kbert.tasks import load_task_model\n"
            f"print(json.dumps({{h: load_task_model({str(tmp_path)!r} + '/' + h).predict_logits("
            f"np.array({texts!r}, dtype=object), batch_size=2).tolist() for h in ('attention', 'mean')}}))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=600,
                         env={**cli_env(), "KERAS_BACKEND": "jax"})
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    for how in expected:
        np.testing.assert_allclose(got[how], expected[how], atol=1e-5)
