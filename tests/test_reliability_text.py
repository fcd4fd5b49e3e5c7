"""Issue 8, text input: any Unicode and any bytes through BertPreprocessor and the exported
preprocessor SavedModel never crash; ids stay in the vocabulary; shapes and packing are as
documented (TF Hub's contract).

Unlike tests/text/test_robustness.py (the tokenizer against google-research/bert's oracle, with
assigned characters only), nothing is excluded here: unassigned and private-use code points,
noncharacters, invalid UTF-8 (lone surrogates encoded with surrogatepass, overlong forms,
truncated sequences, random bytes), very long words and long texts, and text pairs.
Every generated string is counted: each generating test checks that it saw at least its share of
the lower bound these settings guarantee (``generates``), whatever order the tests run in.
"""

from __future__ import annotations

import collections
import functools

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CHINESE_VOCAB, UNCASED_VOCAB
from kbert.text import BertPreprocessor

GENERATED = collections.Counter()
SEQ_LENGTH = 64
BATCH = dict(min_size=32, max_size=40)
KEYS = ("input_word_ids", "input_mask", "input_type_ids")
# (examples, minimum strings per example) of each generating test, for the guaranteed lower bound.
PLAN = {"unicode": (100, 32), "pairs": (40, 64), "bytes": (100, 32), "chinese": (20, 32), "exported": (30, 32),
        "pack": (20, 32)}
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                                      HealthCheck.data_too_large])


def generates(plan):
    """Outermost decorator of a generating test, which counts its strings in GENERATED[plan]: once
    hypothesis ran all its examples, at least PLAN[plan]'s examples x strings must have been
    generated in this call, or the settings do not test what they promise."""

    def wrap(test):
        @functools.wraps(test)
        def run(*args, **kwargs):
            before = GENERATED[plan]
            test(*args, **kwargs)
            examples, per_example = PLAN[plan]
            seen = GENERATED[plan] - before
            print(f"\ngenerated text inputs ({plan}): {seen}")
            assert seen >= examples * per_example, f"{plan}: {seen} strings, fewer than {examples} x {per_example}"

        return run

    return wrap


NASTY = ["\x00", "\ufffd", "\ufeff", "\u200b", "\u0301" * 50, "\U000e0001", "\uffff", "\U0010ffff", "\ue000",
         "\u0378", "\ud7ff", "\U0001f3fd\u200d", "İ", "ß", "ﬃ", "Σ", "\u3000", "\u2028", "\x85", "##", "[CLS]",
         "[SEP]", "[MASK]", "[UNK]", "[PAD]", "a" * 250, "中" * 40, "x" * 1000]
# Every code point Python can encode (all but surrogates), including unassigned ones.
CHARACTERS = st.characters(exclude_categories=("Cs",))
PIECES = st.one_of(st.text(CHARACTERS, max_size=12), st.sampled_from(NASTY))
# Long texts by repetition: generating hundreds of random characters per string would make
# hypothesis, not kbert, the cost of this module.
TEXT = st.one_of(st.lists(PIECES, max_size=4).map("".join), PIECES.map(lambda t: t * 10))
INVALID_UTF8 = st.sampled_from([b"\xff", b"\xfe\xff", b"\xc0\x80", b"\xe0\x80\x80", b"\xed\xa0\x80",
                                b"\xf4\x90\x80\x80", b"\xc3", b"\xe4\xb8", b"\x80\x80", b"\xf8\x88\x80\x80\x80"])
BYTES = st.lists(st.one_of(st.binary(max_size=16), TEXT.map(lambda t: t.encode("utf-8")), INVALID_UTF8,
                           st.text(st.characters(categories=("Cs",)), max_size=4).map(
                               lambda t: t.encode("utf-8", "surrogatepass"))),
                 max_size=6).map(b"".join)


@pytest.fixture(scope="module")
def preprocessor():
    return BertPreprocessor(UNCASED_VOCAB, seq_length=SEQ_LENGTH)


@pytest.fixture(scope="module")
def chinese():
    return BertPreprocessor(CHINESE_VOCAB, seq_length=SEQ_LENGTH)


@pytest.fixture(scope="module")
def exported(uncased_preprocessor_export):
    """conftest's export of this vocabulary at SEQ_LENGTH (shared with text/test_preprocessor)."""
    assert SEQ_LENGTH == 64  # the length conftest.uncased_preprocessor_export is exported with
    return tf.saved_model.load(str(uncased_preprocessor_export))


def check_packed(out, batch, segments, seq_length=SEQ_LENGTH, vocab_size=30522, cls=101, sep=102):
    """TF Hub's packing contract, row by row."""
    assert sorted(out) == sorted(KEYS)
    ids, mask, types = (np.asarray(out[k]) for k in KEYS)
    for key in KEYS:
        assert out[key].dtype == tf.int32 and tuple(out[key].shape) == (batch, seq_length), key
    assert ((0 <= ids) & (ids < vocab_size)).all()
    assert set(np.unique(mask)) <= {0, 1} and set(np.unique(types)) <= set(range(segments))
    lengths = mask.sum(axis=1)
    assert (np.diff(mask, axis=1) <= 0).all()  # real tokens first, then padding
    assert (lengths >= segments + 1).all()
    assert (ids[:, 0] == cls).all()
    rows = np.arange(batch)
    assert (ids[rows, lengths - 1] == sep).all()
    assert ((ids == sep) & (mask == 1)).sum(axis=1).tolist() == [segments] * batch
    assert (ids[mask == 0] == 0).all() and (types[mask == 0] == 0).all()
    assert (np.diff(np.where(mask == 1, types, segments), axis=1) >= 0).all()  # segment ids only grow


def _ragged_ok(tokens, n, vocab_size=30522):
    assert isinstance(tokens, tf.RaggedTensor) and tokens.shape.rank == 3 and tokens.dtype == tf.int32
    assert tokens.nrows() == n
    flat = tokens.flat_values.numpy()
    assert ((0 <= flat) & (flat < vocab_size)).all()


@pytest.mark.slow
@generates("unicode")
@settings(max_examples=PLAN["unicode"][0], **SETTINGS)
@given(texts=st.lists(TEXT, **BATCH))
def test_any_unicode_through_the_preprocessor(preprocessor, texts):
    GENERATED["unicode"] += len(texts)
    out = preprocessor(tf.constant(texts))
    check_packed(out, len(texts), 1)
    tokens = preprocessor.tokenize(tf.constant(texts))
    _ragged_ok(tokens, len(texts))
    # the packed ids are the first tokens of each text
    ids, lengths = np.asarray(out["input_word_ids"]), np.asarray(out["input_mask"]).sum(axis=1)
    flat = tokens.merge_dims(1, 2)[:, : SEQ_LENGTH - 2]
    np.testing.assert_array_equal(flat.row_lengths().numpy(), lengths - 2)
    body = np.where(np.arange(SEQ_LENGTH - 2) < (lengths - 2)[:, None], ids[:, 1:SEQ_LENGTH - 1], 0)
    np.testing.assert_array_equal(flat.to_tensor(shape=[len(texts), SEQ_LENGTH - 2]).numpy(), body)


@pytest.mark.slow
@generates("pairs")
@settings(max_examples=PLAN["pairs"][0], **SETTINGS)
@given(pairs=st.lists(st.tuples(TEXT, TEXT), **BATCH))
def test_any_unicode_pairs_through_the_preprocessor(preprocessor, pairs):
    GENERATED["pairs"] += 2 * len(pairs)
    a, b = (tf.constant([p[i] for p in pairs]) for i in (0, 1))
    out = preprocessor([a, b])
    check_packed(out, len(pairs), 2)


@pytest.mark.slow
@generates("bytes")
@settings(max_examples=PLAN["bytes"][0], **SETTINGS)
@given(data=st.lists(BYTES, **BATCH))
def test_any_bytes_through_the_preprocessor(preprocessor, data):
    GENERATED["bytes"] += len(data)
    out = preprocessor(tf.constant(data))
    check_packed(out, len(data), 1)
    _ragged_ok(preprocessor.tokenize(tf.constant(data)), len(data))
    # invalid bytes are dropped like google-research/bert's errors="ignore": same ids as the clean text
    clean = [d.decode("utf-8", "ignore").encode("utf-8") for d in data]
    np.testing.assert_array_equal(preprocessor(tf.constant(clean))["input_word_ids"], out["input_word_ids"])


@generates("chinese")
@settings(max_examples=PLAN["chinese"][0], **SETTINGS)
@given(data=st.lists(st.one_of(BYTES, TEXT.map(lambda t: t.encode("utf-8"))), **BATCH))
def test_any_input_through_a_chinese_vocabulary(chinese, data):
    GENERATED["chinese"] += len(data)
    check_packed(chinese(tf.constant(data)), len(data), 1, vocab_size=21128)


@generates("pack")
@settings(max_examples=PLAN["pack"][0], **SETTINGS)
@given(segments=st.lists(st.lists(TEXT, min_size=32, max_size=32), min_size=1, max_size=3),
       seq_length=st.sampled_from([4, 33]))
@pytest.mark.slow
def test_bert_pack_inputs_any_segments_any_length(preprocessor, segments, seq_length):
    GENERATED["pack"] += sum(len(s) for s in segments)
    tokens = [preprocessor.tokenize(tf.constant(s)) for s in segments]
    out = preprocessor.bert_pack_inputs(tokens, seq_length=seq_length)
    check_packed(out, 32, len(segments), seq_length=seq_length)


@pytest.mark.slow
@generates("exported")
@settings(max_examples=PLAN["exported"][0], **SETTINGS)
@given(data=st.lists(st.one_of(BYTES, TEXT.map(lambda t: t.encode("utf-8"))), **BATCH),
       seq_length=st.sampled_from([3, 16, 64]))
def test_the_exported_preprocessor_savedmodel_on_any_input(exported, preprocessor, data, seq_length):
    """Every signature of the SavedModel: root call, serving_default, tokenize, tokenize_with_offsets,
    bert_pack_inputs; the same ids as the eager layer."""
    GENERATED["exported"] += len(data)
    strings = tf.constant(data)
    out = exported(strings)
    check_packed(out, len(data), 1)
    eager = preprocessor(strings)
    for key in KEYS:
        np.testing.assert_array_equal(out[key], eager[key])
    serving = exported.signatures["serving_default"](text=strings)
    for key in KEYS:
        np.testing.assert_array_equal(serving[key], eager[key])
    tokens = exported.tokenize(strings)
    _ragged_ok(tokens, len(data))
    ids, starts, ends = exported.tokenize_with_offsets(strings)
    assert ids.to_list() == tokens.to_list()
    for raw, s, e in zip(data, starts.to_list(), ends.to_list()):
        assert all(0 <= a <= b <= len(raw) for ws, we in zip(s, e) for a, b in zip(ws, we))
    half = len(data) // 2
    pair = exported.bert_pack_inputs([tokens[:half], tokens[half:2 * half]], seq_length=tf.constant(seq_length))
    check_packed(pair, half, 2, seq_length=seq_length)


def test_inputs_that_are_not_strings_are_clear_errors_in_the_savedmodel(exported):
    for bad in (tf.constant([1, 2]), tf.constant([["a"]]), tf.constant("a")):
        with pytest.raises((TypeError, ValueError), match=r"(?i)(string|shape|signature|structure|match)"):
            exported(bad)


def test_the_plan_generates_at_least_ten_thousand_strings():
    """The settings' lower bound (each generating test checks its own share, ``generates``), with
    tests/text/test_robustness.py (up to 1,200 examples of up to 24 strings) on top."""
    assert sum(n * k for n, k in PLAN.values()) >= 10_000
