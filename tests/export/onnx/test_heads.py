"""Every task type's ONNX graph (kbert.export.onnx.heads, .task_graph): the Keras model's probabilities
within 1e-5 at batch 1-64 and lengths 1-512, and the answers the graph derives from them (class ids,
label strings, multi-label decisions, tags, the best span, the chosen ending) against numpy rules."""

import numpy as np
import pytest

from conftest import require

ort = require("onnxruntime")
require("onnx")

import keras  # noqa: E402

import kbert  # noqa: E402
from kbert.export.onnx.task_graph import build_graph  # noqa: E402

SHAPES = [(1, 1), (64, 37), (3, 512)]
LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
MAKERS = {
    "sst2": lambda d: kbert.TextClassifier.from_model_dir(d, label_names=["negative", "positive"], seq_length=512),
    "stsb": lambda d: kbert.TextRegressor.from_model_dir(d, num_segments=2, seq_length=512),
    "topics": lambda d: kbert.MultiLabelClassifier.from_model_dir(d, label_names=["a", "b", "c", "d"], threshold=0.7,
                                                                  at_least_one=True, seq_length=512),
    "ner": lambda d: kbert.TokenTagger.from_model_dir(d, label_names=LABELS, seq_length=512),
    "squad": lambda d: kbert.SpanQuestionAnswerer.from_model_dir(d, seq_length=512, n_best_size=5,
                                                                 max_answer_length=4),
    "swag": lambda d: kbert.MultipleChoiceModel.from_model_dir(d, seq_length=512),
}
# Long documents read in windows: each row is a window. Mean, max and logmeanexp pool the windows'
# own logits (those of the pooled [CLS], as above); attention pools each window's tokens.
WINDOWS = {"long_documents": "windows", "seq_length": 512}
MAKERS.update({
    "docs-logmeanexp": lambda d: kbert.TextClassifier.from_model_dir(d, label_names=["no", "yes"], **WINDOWS),
    "docs-attention": lambda d: kbert.TextClassifier.from_model_dir(d, label_names=["no", "yes", "maybe"],
                                                                    window_pooling="attention", **WINDOWS),
    "scores-attention": lambda d: kbert.TextRegressor.from_model_dir(d, window_pooling="attention", **WINDOWS),
    "topics-attention": lambda d: kbert.MultiLabelClassifier.from_model_dir(
        d, label_names=["a", "b", "c"], threshold=0.6, window_pooling="attention", **WINDOWS),
})


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return kbert.random_model_dir(tmp_path_factory.mktemp("onnx_heads") / "tiny", max_position_embeddings=512)


@pytest.fixture(scope="module", params=list(MAKERS))
def model(request, base):
    keras.utils.set_random_seed(0)
    model = MAKERS[request.param](base)
    for w in model.head.weights:  # answers that differ from row to row
        w.assign(np.random.default_rng(1).normal(0, 0.5, w.shape).astype("float32"))
    return model


def feeds(model, batch, length, seed=0):
    rng = np.random.default_rng(seed)
    lengths = np.linspace(1, length, batch).astype(int) if batch > 1 else np.array([length])
    shape = (batch, length)
    if model.task_type == "multiple_choice":
        lengths, shape = np.stack([lengths, lengths[::-1]], 1), (batch, 2, length)
    positions = np.arange(length)
    mask = positions < lengths[..., None]
    types = mask & (positions >= lengths[..., None] // 2)
    return {"input_word_ids": (rng.integers(5, 60, shape) * mask).astype(np.int32),
            "input_mask": mask.astype(np.int32), "input_type_ids": types.astype(np.int32)}


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def run_both(model, form, batch, length):
    sess = ort.InferenceSession(build_graph(model, form).SerializeToString(), providers=["CPUExecutionProvider"])
    x = feeds(model, batch, length)
    got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, x)))
    return x, model(x, training=False), got


def best_span(start, end, types, mask, n_best, max_length):
    """run_squad.py's candidate rules for one window, written out: (start, end, score) of the best pair."""
    length = int(mask.sum())
    context = (types == 1) & (mask == 1) & (np.arange(len(mask)) < length - 1)
    starts = np.argsort(-start, kind="stable")[:n_best]
    ends = np.argsort(-end, kind="stable")[:n_best]
    best = (-1, -1, -np.inf)
    for i in sorted(starts):
        for j in sorted(ends):
            if context[i] and context[j] and i <= j < i + max_length and start[i] + end[j] > best[2]:
                best = (i, j, start[i] + end[j])
    return best


def window_weights(model, x):
    """Each window's log total attention weight, in numpy: log(sum(exp(score))) over its real tokens."""
    sequence = model.encoder(x, training=False)["sequence_output"].numpy().astype(np.float64)
    kernel, bias = (w.astype(np.float64) for w in model.head.score.get_weights())
    scores = np.where(x["input_mask"] == 1, (sequence @ kernel)[..., 0] + bias[0], -np.inf)
    top = scores.max(axis=1)
    return top + np.log(np.exp(scores - top[:, None]).sum(axis=1))


def check_answers(model, x, want, got):
    real = x["input_mask"].astype(bool)
    kind = model.task_type
    if getattr(model, "window_pooling", None) == "attention":
        assert np.abs(got["window_weights"] - window_weights(model, x)).max() < 1e-4
    else:
        assert "window_weights" not in got
    if kind == "text_regressor":
        assert np.abs(got["scores"] - np.asarray(want)).max() < 1e-5
        return
    if kind == "span_qa":
        for name in ("start_logits", "end_logits"):
            assert np.abs(softmax(got[name]) - softmax(np.asarray(want[name]))).max() < 1e-5
            assert (got[name][~real] == -10000.0).all()
        for row in range(len(real)):
            expected = best_span(got["start_logits"][row], got["end_logits"][row], x["input_type_ids"][row],
                                 x["input_mask"][row], model.n_best_size, model.max_answer_length)
            assert (got["best_start"][row], got["best_end"][row]) == expected[:2]
            assert got["best_score"][row] == pytest.approx(expected[2]) if expected[0] >= 0 else \
                got["best_score"][row] == -np.inf
        assert np.allclose(got["null_score"], got["start_logits"][:, 0] + got["end_logits"][:, 0])
        return
    logits = np.asarray(want)
    if kind == "multi_label_classifier":
        p = 1 / (1 + np.exp(-logits))
        assert np.abs(got["probabilities"] - p).max() < 1e-5
        assert (got["predictions"] == model.indicators(logits)).all()
        return
    name = "token_probabilities" if kind == "token_tagger" else "probabilities"
    diff = np.abs(got[name] - softmax(logits))
    assert (diff[real] if kind == "token_tagger" else diff).max() < 1e-5
    ids = {"token_tagger": "token_tag_ids", "multiple_choice": "choice_ids"}.get(kind, "class_ids")
    assert (got[ids] == got[name].argmax(-1)).all()
    if kind != "multiple_choice":
        names = np.asarray(model.label_names, dtype=object)
        strings = got["token_tags" if kind == "token_tagger" else "labels"]
        assert (strings == names[got[ids]]).all()


@pytest.mark.parametrize("form", ["ort", "standard"])
def test_answers_equal_the_keras_models(model, form):
    for batch, length in SHAPES:
        x, want, got = run_both(model, form, batch, length)
        check_answers(model, x, want, got)


def test_a_window_without_context_has_no_span(base):
    model = MAKERS["squad"](base)
    sess = ort.InferenceSession(build_graph(model).SerializeToString(), providers=["CPUExecutionProvider"])
    x = feeds(model, 2, 8)
    x["input_type_ids"][:] = 0
    got = sess.run(["best_start", "best_end", "best_score"], x)
    assert (got[0] == -1).all() and (got[1] == -1).all() and np.isneginf(got[2]).all()


def test_at_least_one_label_is_in_the_graph(base):
    """A threshold nothing passes: with at_least_one every row gets its most probable label."""
    for at_least_one in (True, False):
        model = kbert.MultiLabelClassifier.from_model_dir(base, label_names=["a", "b", "c"], threshold=0.999,
                                                          at_least_one=at_least_one)
        sess = ort.InferenceSession(build_graph(model).SerializeToString(), providers=["CPUExecutionProvider"])
        p, decided = sess.run(["probabilities", "predictions"], feeds(model, 4, 10))
        assert (decided.sum(-1) == (1 if at_least_one else 0)).all()
        assert (decided.argmax(-1) == p.argmax(-1)).all() or not at_least_one
