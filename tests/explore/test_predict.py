"""kbert.explore.predict (kbert.fill_mask, kbert.next_sentence and their _ids forms) on a random tiny
model with heads (kbert.random_model_dir): each answer against the heads' weights applied in numpy to
the encoder's output, the shapes of the answers (one string or a list, rows without a mask, top_k
beyond the vocabulary), and the refusals with their messages."""

import numpy as np
import pytest

import kbert
from kbert.explore import fill_mask, fill_mask_ids, next_sentence, next_sentence_ids
from kbert.explore.heads_model import PretrainingHeads
from kbert.explore.predict import load
from kbert.model_dir import ModelDirError

TEXTS = ["the man went to the [MASK] store.", "[MASK] is the capital of [MASK].", "no mask here",
         "Zürich [MASK] 東京 🎉"]
PAIRS = (["the man went to the store.", "the man went to the store."],
         ["he bought a gallon of milk.", "the fox jumps over the lazy dog."])


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return kbert.random_model_dir(tmp_path_factory.mktemp("predict") / "model")


@pytest.fixture(scope="module")
def heads(model_dir):
    return PretrainingHeads.from_model_dir(model_dir)


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _numpy_heads(heads):
    """The MLM and NSP heads written out in numpy (float64) from their weights: dense, tanh-GELU
    (BERT's "gelu"), LayerNorm (epsilon 1e-12), logits against the tied word embeddings + bias;
    the NSP dense layer. Each returns probabilities."""
    w = {v.path.split("/", 1)[1]: np.asarray(v.numpy(), np.float64) for v in heads.mlm_head.weights}
    nsp = {v.path.split("/", 1)[1]: np.asarray(v.numpy(), np.float64) for v in heads.nsp_head.weights}
    table = np.asarray(heads.encoder.word_embeddings.numpy(), np.float64)
    assert heads.encoder.config.hidden_act == "gelu"

    def mlm(rows):
        x = rows @ w["transform/kernel"] + w["transform/bias"]
        x = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
        x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
        x = x * w["layer_norm/gamma"] + w["layer_norm/beta"]
        return _softmax(x @ table.T + w["output_bias"])

    def is_next(pooled):
        return _softmax(pooled @ nsp["dense/kernel"] + nsp["dense/bias"])[:, 0]

    return mlm, is_next


def test_fill_mask_gives_the_top_k_of_the_mlm_softmax_at_each_mask(heads):
    answers = fill_mask(heads, TEXTS, top_k=3)
    packed = {k: v.numpy() for k, v in heads.pack(TEXTS).items()}
    sequence = np.asarray(heads.encoder(packed)["sequence_output"], np.float64)
    mlm, _ = _numpy_heads(heads)
    vocab = heads.preprocessor.tokenize.get_vocabulary()
    mask_id = vocab.index("[MASK]")
    assert [len(a) for a in answers] == [1, 2, 0, 1]
    for row, masks in enumerate(answers):
        # the masks: where the packed row holds the mask id, in order ([CLS] is position 0)
        assert [m["position"] for m in masks] == np.flatnonzero(packed["input_word_ids"][row] == mask_id).tolist()
        for m in masks:
            p = mlm(sequence[row, m["position"]])
            best = np.argsort(-p, kind="stable")[:3]
            assert m["ids"] == best.tolist() and m["tokens"] == [vocab[i] for i in best]
            np.testing.assert_allclose(m["probabilities"], p[best], rtol=1e-4)
    assert answers[0][0]["position"] == 6  # [CLS] the man went to the [MASK]
    # one string: that string's answers, not in a list of texts (its batch is cut to its own length, so
    # the probabilities may differ from the batch of four in the last float32 bits)
    [single] = fill_mask(heads, TEXTS[1], top_k=3)
    assert [(m["position"], m["ids"], m["tokens"]) for m in single] == [
        (m["position"], m["ids"], m["tokens"]) for m in answers[1]]
    np.testing.assert_allclose([m["probabilities"] for m in single], [m["probabilities"] for m in answers[1]],
                               rtol=1e-5)


def test_next_sentence_is_the_is_next_probability_of_the_nsp_head(heads):
    packed = {k: v.numpy() for k, v in heads.pack(*PAIRS).items()}
    _, is_next = _numpy_heads(heads)
    expected = is_next(np.asarray(heads.encoder(packed)["pooled_output"], np.float64))
    got = next_sentence(heads, *PAIRS)
    assert isinstance(got, list) and all(isinstance(p, float) for p in got)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    single = next_sentence(heads, PAIRS[0][1], PAIRS[1][1])
    assert isinstance(single, float) and single == pytest.approx(expected[1], rel=1e-5)
    ids = next_sentence_ids(heads, packed)
    assert ids.dtype == np.float32 and ids.shape == (2,)
    np.testing.assert_allclose(ids, expected, rtol=1e-5)


def test_fill_mask_ids_rows_without_masks_and_top_k_over_the_vocabulary(heads):
    inputs = {k: v.numpy() for k, v in heads.pack(["a [MASK] dog", "a"]).items()}
    inputs["input_word_ids"][1, -1] = heads.mask_id  # the mask id at a padding position is not a mask
    assert inputs["input_mask"][1, -1] == 0
    answers = fill_mask_ids(heads, inputs, top_k=1000)
    assert answers[1] == [] and len(answers[0]) == 1
    (m,) = answers[0]
    vocab_size = heads.encoder.config.vocab_size
    # every token, best first: the whole softmax
    assert sorted(m["ids"]) == list(range(vocab_size)) and len(m["tokens"]) == vocab_size
    assert sum(m["probabilities"]) == pytest.approx(1.0, abs=1e-5)
    assert m["probabilities"] == sorted(m["probabilities"], reverse=True)
    assert fill_mask_ids(heads, inputs, top_k=1)[0][0]["ids"] == m["ids"][:1]


def test_a_model_directory_or_loaded_heads_answer_alike(heads, model_dir):
    assert load(heads) is heads
    loaded = load(str(model_dir))
    assert isinstance(loaded, PretrainingHeads) and loaded is not heads
    assert next_sentence(loaded, "a man .", "a dog .") == pytest.approx(next_sentence(heads, "a man .", "a dog ."))
    assert fill_mask(loaded, "the [MASK] store .", top_k=2) == fill_mask(heads, ["the [MASK] store ."], top_k=2)


def test_empty_input_gives_no_answers(heads):
    assert fill_mask(heads, []) == [] and fill_mask(heads, ()) == []
    assert next_sentence(heads, [], []) == []


def test_bad_arguments_are_refused_naming_them(heads):
    with pytest.raises(TypeError, match=r"^texts\[1\] must be a string, got int: 3$"):
        fill_mask(heads, ["a [MASK]", 3])
    with pytest.raises(TypeError, match=r"^text_b\[0\] must be a string, got NoneType: None$"):
        next_sentence(heads, ["a"], [None])
    with pytest.raises(ValueError, match=r"^text_a has 2 strings but text_b has 1: give one B for each A$"):
        next_sentence(heads, PAIRS[0], PAIRS[1][:1])
    with pytest.raises(ValueError, match=r"^text_a has 1 strings but text_b has 2"):
        next_sentence(heads, "a man .", PAIRS[1])
    inputs = heads.pack(["a [MASK]"])
    for top_k in (0, -1, 2.0, True, "5"):
        with pytest.raises(ValueError, match=rf"^top_k must be a positive integer, got {top_k!r}$"):
            fill_mask_ids(heads, inputs, top_k=top_k)
    with pytest.raises(ValueError, match="top_k must be a positive integer, got 0"):
        fill_mask(heads, "a [MASK]", top_k=0)


def test_missing_head_is_named(tiny_model_dir):
    with pytest.raises(ModelDirError, match="no 'mlm' head"):
        fill_mask(tiny_model_dir, ["a [MASK]"])
    with pytest.raises(ModelDirError, match="no 'nsp' head"):
        next_sentence(tiny_model_dir, "a", "b")
