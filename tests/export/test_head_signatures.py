"""kbert.export.head_signatures, in-process on kbert.random_model's directory (MLM and NSP heads): which
signatures a directory's heads give, their input and output specs, their answers for known texts
against the encoder and heads called directly on ids packed by hand with a numpy softmax, and the
TF Serving warm-up requests (raw text, or words for a MeCab tokenizer) that run through them. The
saved export in a TensorFlow-only process is tests/explore/test_heads_model.py's."""

import numpy as np
import pytest
import tensorflow as tf

from conftest import SHARED
from kbert.export.head_signatures import DEFAULT_TOP_K, add_head_signatures, warmup_requests
from kbert.random_model import VOCAB, random_model_dir

CLS, SEP, MASK = VOCAB.index("[CLS]"), VOCAB.index("[SEP]"), VOCAB.index("[MASK]")
TEXTS = ["the [MASK] went home .", "[MASK] is the capital of [MASK] .", "a good day"]
PAIR = (["the man went to the store .", "the man went to the store ."], ["he bought milk .", "the lazy dog"])


def ids(text) -> list:
    """kbert.random_model's vocabulary spells each of these words as one token (the words are its own)."""
    return [VOCAB.index(w if w == "[MASK]" else w.lower()) for w in text.split()]


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    from kbert.model_dir import load_encoder, load_heads

    model_dir = random_model_dir(tmp_path_factory.mktemp("head_signatures") / "tiny")
    encoder = load_encoder(model_dir)
    return model_dir, encoder, load_heads(model_dir, encoder.config)


@pytest.fixture(scope="module")
def signatures(loaded):
    model_dir, encoder, heads = loaded
    module = tf.Module()
    found = add_head_signatures(module, encoder, heads, model_dir, top_k=3)
    return module, found


def encode(encoder, rows, types=None):
    """The encoder on one row of ids at a time (no padding): sequence and pooled outputs."""
    out = [encoder({"input_word_ids": np.array([r], np.int32), "input_mask": np.ones((1, len(r)), np.int32),
                    "input_type_ids": np.array([t if types else [0] * len(r)], np.int32)}, training=False)
           for r, t in zip(rows, types or rows)]
    return out


@pytest.mark.slow
def test_the_signatures_a_directorys_heads_give(loaded, signatures):
    model_dir, encoder, heads = loaded
    module, found = signatures
    assert sorted(found) == ["fill_mask", "next_sentence"]
    assert module.fill_mask.get_concrete_function() is not None and module.explore.encoder is encoder
    for present in ({"mlm": None, "nsp": None}, {}):
        bare = tf.Module()
        assert add_head_signatures(bare, encoder, present, model_dir) == {}
        assert not hasattr(bare, "explore")  # nothing attached for a directory without heads


@pytest.mark.slow  # two more modules traced: ~5 s on 2 cores
def test_one_head_gives_its_own_signature(loaded):
    model_dir, encoder, heads = loaded
    for present, expected in [({"mlm": heads["mlm"]}, ["fill_mask"]), ({"nsp": heads["nsp"], "mlm": None},
                                                                        ["next_sentence"])]:
        bare = tf.Module()
        assert sorted(add_head_signatures(bare, encoder, present, model_dir)) == expected
        assert hasattr(bare, "fill_mask") == ("fill_mask" in expected)
        assert hasattr(bare, "next_sentence") == ("next_sentence" in expected)
        if "fill_mask" in expected:  # top_k not given: the default
            assert bare.fill_mask(tf.constant(["the [MASK] ."]))["ids"].shape == (1, 1, DEFAULT_TOP_K)


@pytest.mark.slow
def test_the_specs(signatures):
    _, found = signatures
    fill = found["fill_mask"]
    assert fill.structured_input_signature == ((tf.TensorSpec([None], tf.string, name="text"),), {})
    assert {k: (v.shape.rank, v.dtype) for k, v in fill.structured_outputs.items()} == {
        "positions": (2, tf.int32), "ids": (3, tf.int32), "tokens": (3, tf.string), "probabilities": (3, tf.float32)}
    pair = found["next_sentence"]
    assert pair.structured_input_signature == ((tf.TensorSpec([None], tf.string, name="text_a"),
                                                 tf.TensorSpec([None], tf.string, name="text_b")), {})
    assert {k: (v.shape.rank, v.dtype) for k, v in pair.structured_outputs.items()} == {
        "is_next_probability": (1, tf.float32)}


@pytest.mark.slow
def test_fill_mask_answers_the_heads_top_k(loaded, signatures):
    _, encoder, heads = loaded
    out = signatures[1]["fill_mask"](text=tf.constant(TEXTS))
    rows = [[CLS] + ids(t) + [SEP] for t in TEXTS]
    masks = [[i for i, t in enumerate(r) if t == MASK] for r in rows]
    assert masks == [[2], [1, 6], []]  # hand-counted: [CLS] the [MASK] ... / [CLS] [MASK] is ...
    assert out["positions"].numpy().tolist() == [m + [-1] * (2 - len(m)) for m in masks]
    assert out["ids"].shape == (3, 2, 3)
    for row, (r, positions, encoded) in enumerate(zip(rows, masks, encode(encoder, rows))):
        for m in range(2):
            if m >= len(positions):  # no mask there: the padding values
                assert out["ids"][row, m].numpy().tolist() == [-1] * 3
                assert out["tokens"][row, m].numpy().tolist() == [b""] * 3
                assert out["probabilities"][row, m].numpy().tolist() == [0.0] * 3
                continue
            logits = heads["mlm"](encoded["sequence_output"], np.array([[positions[m]]], np.int32),
                                  encoder.word_embeddings)
            p = softmax(np.asarray(logits, np.float64)[0, 0])
            best = np.argsort(-p, kind="stable")[:3]
            assert out["ids"][row, m].numpy().tolist() == best.tolist()
            assert [t.decode() for t in out["tokens"][row, m].numpy()] == [VOCAB[i] for i in best]
            np.testing.assert_allclose(out["probabilities"][row, m].numpy(), p[best], rtol=2e-5)


def test_next_sentence_answers_the_nsp_softmax(loaded, signatures):
    _, encoder, heads = loaded
    got = signatures[1]["next_sentence"](text_a=tf.constant(PAIR[0]), text_b=tf.constant(PAIR[1]))
    rows = [[CLS] + ids(a) + [SEP] + ids(b) + [SEP] for a, b in zip(*PAIR)]
    types = [[0] * (len(ids(a)) + 2) + [1] * (len(ids(b)) + 1) for a, b in zip(*PAIR)]
    expected = [softmax(np.asarray(heads["nsp"](e["pooled_output"]), np.float64))[0, 0]
                for e in encode(encoder, rows, types)]
    np.testing.assert_allclose(got["is_next_probability"].numpy(), expected, rtol=1e-5)


def test_warmup_requests_run_through_the_signatures(signatures):
    _, found = signatures
    requests = warmup_requests(found)
    assert [(name, len(next(iter(inputs.values())))) for name, inputs in requests] == [
        ("fill_mask", 1), ("fill_mask", 8), ("next_sentence", 1), ("next_sentence", 8)]
    for name, inputs in requests:
        out = found[name](**{k: tf.constant(v) for k, v in inputs.items()})
        batch = len(next(iter(inputs.values())))
        assert all(v.shape[0] == batch for v in out.values())
        if name == "fill_mask":  # every warm-up text holds a [MASK]: the head is exercised
            assert (out["positions"].numpy()[:, 0] >= 0).all()
    assert warmup_requests({"fill_mask": found["fill_mask"]}) == requests[:2]
    assert warmup_requests({}) == []


def test_warmup_requests_for_a_mecab_tokenizer_are_words():
    from kbert.tasks.core.words_inputs import words_request
    from kbert.text import TokenizerSpec, create_tokenizer

    tokenizer = create_tokenizer(TokenizerSpec(type="mecab-wordpiece", lower_case=False, vocab_file=str(
        SHARED / "weights" / "ja-tiny-random-bert" / "vocab.txt")))
    raw = warmup_requests({"fill_mask": 1, "next_sentence": 1})
    words = warmup_requests({"fill_mask": 1, "next_sentence": 1}, tokenizer)
    assert [name for name, _ in words] == [name for name, _ in raw]
    assert [sorted(inputs) for _, inputs in words] == [["words"]] * 2 + [["words_a", "words_b"]] * 2
    assert [inputs for _, inputs in words] == [words_request(tokenizer, inputs) for _, inputs in raw]
    assert "[MASK]" in words[0][1]["words"][0]  # a word of its own


@pytest.mark.slow  # a MeCab model directory made and its signatures traced: ~5 s on 2 cores
def test_a_mecab_directorys_signatures_take_words(tmp_path):
    """string [batch, words] in (padded with ""), the Python API's answers on the raw text out."""
    import keras

    from kbert import BertConfig, BertEncoder
    from kbert.explore import fill_mask, next_sentence
    from kbert.layers.heads import build_head
    from kbert.model_dir import load_heads, save_model_dir
    from kbert.tasks.core.words_inputs import words_request
    from kbert.text import TokenizerSpec, create_tokenizer

    tokenizer = create_tokenizer(TokenizerSpec(type="mecab-character", lower_case=False,
                                               vocab_file=str(SHARED / "vocab" / "ja-char" / "vocab.txt")))
    keras.utils.set_random_seed(3)
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size, max_position_embeddings=64))
    model_dir = save_model_dir(tmp_path / "ja", encoder, tokenizer=tokenizer, heads={
        name: (build_head(name, encoder.config), {"type": name}) for name in ("mlm", "nsp")})
    found = add_head_signatures(tf.Module(), encoder, load_heads(model_dir, encoder.config), model_dir, top_k=2)
    words = tf.TensorSpec([None, None], tf.string)
    assert found["fill_mask"].structured_input_signature == ((tf.TensorSpec.from_spec(words, name="words"),), {})
    assert [s.name for s in found["next_sentence"].structured_input_signature[0]] == ["words_a", "words_b"]
    texts = ["吾輩は[MASK]である。", "名前は[MASK]無い。どこで生れたか[MASK]。"]
    got = found["fill_mask"](words=tf.constant(words_request(tokenizer, {"text": texts})["words"]))
    for row, answers in enumerate(fill_mask(model_dir, texts, top_k=2)):
        assert got["positions"][row, :len(answers)].numpy().tolist() == [a["position"] for a in answers]
        for m, answer in enumerate(answers):
            assert got["ids"][row, m].numpy().tolist() == answer["ids"]
            np.testing.assert_allclose(got["probabilities"][row, m].numpy(), answer["probabilities"], rtol=1e-5)
    a, b = ["吾輩は猫である。", "名前はまだ無い。"], ["名前はまだ無い。", "吾輩は猫である。"]
    request = words_request(tokenizer, {"text_a": a, "text_b": b})
    got = found["next_sentence"](**{k: tf.constant(v) for k, v in request.items()})
    np.testing.assert_allclose(got["is_next_probability"].numpy(), next_sentence(model_dir, a, b), rtol=1e-5)
