"""BertPacker / BertPreprocessor packing against minilm_encoder.npz and _truncate_seq_pair."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REFERENCE, UNCASED_VOCAB
from kbert.text import BertPacker, BertPreprocessor
from fixtures.google_bert_oracle import minilm_rows, truncate_seq_pair, truncate_seq_pair_at_random

CLS, SEP, PAD = 101, 102, 0


@pytest.fixture(scope="module")
def preprocessor():
    return BertPreprocessor(UNCASED_VOCAB)


@pytest.fixture(scope="module")
def packer():
    return BertPacker(128, start_of_sequence_id=CLS, end_of_segment_id=SEP, padding_id=PAD)


def test_minilm_reference_inputs_exact(preprocessor):
    """All 96 rows: ids, mask and type ids as google-research/bert packs them (round_robin)."""
    ref = np.load(REFERENCE / "minilm_encoder.npz")
    rows = minilm_rows()
    singles = [i for i, r in enumerate(rows) if r["text_b"] is None]
    pairs = [i for i, r in enumerate(rows) if r["text_b"] is not None]
    got = {}
    single_out = preprocessor([rows[i]["text_a"] for i in singles])
    pair_out = preprocessor([tf.constant([rows[i]["text_a"] for i in pairs]),
                             tf.constant([rows[i]["text_b"] for i in pairs])])
    for out, index in ((single_out, singles), (pair_out, pairs)):
        assert set(out) == {"input_word_ids", "input_mask", "input_type_ids"}
        for key, value in out.items():
            assert value.dtype == tf.int32 and value.shape == (len(index), 128), key
        for n, i in enumerate(index):
            got[i] = {k: v[n].numpy() for k, v in out.items()}
    google_rows = [i for i, r in enumerate(rows) if "google_bert_input_ids" in r]
    assert google_rows == [71, 92]
    for i, row in enumerate(rows):
        expected_ids = np.array(row.get("google_bert_input_ids", ref["input_ids"][i]))
        np.testing.assert_array_equal(got[i]["input_word_ids"], expected_ids, err_msg=f"row {i}")
        np.testing.assert_array_equal(got[i]["input_mask"], ref["attention_mask"][i], err_msg=f"row {i}")
        if i in google_rows:  # type ids follow the first [SEP] of google's packing
            first_sep = list(expected_ids).index(SEP)
            expected_types = (np.arange(128) > first_sep) & (ref["attention_mask"][i] == 1)
        else:
            expected_types = ref["token_type_ids"][i]
        np.testing.assert_array_equal(got[i]["input_type_ids"], expected_types.astype(np.int32),
                                      err_msg=f"row {i}")


def _segments(lengths, offset):
    """RaggedTensor [batch, tokens] whose row j holds ids offset+0, offset+1, ... (lengths[j] of them)."""
    values = np.concatenate([np.arange(n, dtype=np.int32) + offset for n in lengths] + [np.zeros(0, np.int32)])
    return tf.RaggedTensor.from_row_lengths(values, np.array(lengths, np.int64))


@settings(max_examples=150, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(0, 140), st.integers(0, 140)), min_size=1, max_size=40),
       seq_length=st.integers(3, 140))
def test_round_robin_is_truncate_seq_pair(packer, pairs, seq_length):
    a = _segments([p[0] for p in pairs], 1000)
    b = _segments([p[1] for p in pairs], 2000)
    out = packer([a, b], seq_length=tf.constant(seq_length))  # a tensor: no retracing per length
    ids, mask, types = (out[k].numpy() for k in ("input_word_ids", "input_mask", "input_type_ids"))
    for row, (len_a, len_b) in enumerate(pairs):
        ta, tb = truncate_seq_pair(range(1000, 1000 + len_a), range(2000, 2000 + len_b), seq_length - 3)
        tokens = [CLS, *ta, SEP, *tb, SEP]
        pad = seq_length - len(tokens)
        assert ids[row].tolist() == tokens + [PAD] * pad
        assert mask[row].tolist() == [1] * len(tokens) + [0] * pad
        assert types[row].tolist() == [0] * (len(ta) + 2) + [1] * (len(tb) + 1) + [0] * pad


def test_random_cut_keeps_a_window_cut_at_either_end_as_create_pretraining_data(packer):
    """``random_cut``: each segment keeps truncate_seq_pair's number of tokens, as one contiguous
    run, and the tokens that go leave from the front as often as from the back, as
    create_pretraining_data.py's pops by a fair coin do: the share cut from the front and the
    share of rows that keep their first token and the spread of the front cut match its over
    2,000 pairs."""
    import random

    pairs = [(random.Random(i).randint(20, 90), random.Random(-i).randint(20, 90)) for i in range(2000)]
    seq_length = 67
    tf.random.set_seed(0)
    out = packer([_segments([p[0] for p in pairs], 1000), _segments([p[1] for p in pairs], 2000)],
                 seq_length=seq_length, random_cut=True)
    ids, types = out["input_word_ids"].numpy(), out["input_type_ids"].numpy()
    rng = random.Random(0)
    got, reference = ({"front": 0, "cut": 0, "whole_start": 0, "spread": 0.0} for _ in range(2))
    for row, (len_a, len_b) in enumerate(pairs):
        want_a, want_b = truncate_seq_pair(range(len_a), range(len_b), seq_length - 3)
        ref_a, ref_b = truncate_seq_pair_at_random(range(1000, 1000 + len_a), range(2000, 2000 + len_b),
                                                   seq_length - 3, rng)
        real = ids[row][ids[row] != PAD]
        a = real[1:1 + len(want_a)]
        b = real[2 + len(want_a):-1]
        assert real[0] == CLS and real[1 + len(want_a)] == SEP and real[-1] == SEP, row
        assert (types[row][:len(want_a) + 2] == 0).all() and (types[row][len(want_a) + 2:len(real)] == 1).all()
        for kept, ref, want, first, length in ((a, ref_a, want_a, 1000, len_a), (b, ref_b, want_b, 2000, len_b)):
            assert len(kept) == len(want) == len(ref)
            assert (np.diff(kept) == 1).all(), row  # one contiguous window of the segment
            for counts, start in ((got, int(kept[0]) - first if len(kept) else 0),
                                  (reference, ref[0] - first if ref else 0)):
                counts["front"] += start
                counts["cut"] += length - len(kept)
                counts["whole_start"] += start == 0 and length > len(kept)
                counts["spread"] += (start - (length - len(kept)) / 2) ** 2  # Binomial: cut / 4 a row
    assert got["cut"] == reference["cut"] > 50_000
    assert got["front"] / got["cut"] == pytest.approx(0.5, abs=0.01)
    assert got["front"] / got["cut"] == pytest.approx(reference["front"] / reference["cut"], abs=0.01)
    assert got["whole_start"] == pytest.approx(reference["whole_start"], abs=30)
    assert got["spread"] == pytest.approx(reference["spread"], rel=0.1)


def _waterfall(lengths, budget):
    kept = []
    for n in lengths:
        kept.append(min(n, budget))
        budget -= kept[-1]
    return kept


def _round_robin(lengths, budget):
    kept = [0] * len(lengths)
    while budget > 0 and any(k < n for k, n in zip(kept, lengths)):
        for i, n in enumerate(lengths):
            if budget > 0 and kept[i] < n:
                kept[i] += 1
                budget -= 1
    return kept


THREE_SEGMENT_PACKERS = {t: BertPacker(128, CLS, SEP, PAD, truncator=t) for t in ("round_robin", "waterfall")}


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30)),
                     min_size=1, max_size=20),
       seq_length=st.integers(4, 60), truncator=st.sampled_from(["round_robin", "waterfall"]),
       num_segments=st.integers(1, 3))
def test_one_to_three_segments(rows, seq_length, truncator, num_segments):
    """Both truncators against their rule written as a loop (kbert computes the kept counts in
    closed form for one and two segments and for waterfall, tensorflow-text's trimmer otherwise)."""
    packer = THREE_SEGMENT_PACKERS[truncator]
    segments = [_segments([r[s] for r in rows], 1000 * (s + 1)) for s in range(num_segments)]
    out = {k: v.numpy() for k, v in packer(segments, seq_length=tf.constant(seq_length)).items()}
    rule = _round_robin if truncator == "round_robin" else _waterfall
    for n, lengths in enumerate(rows):
        kept = rule(list(lengths[:num_segments]), seq_length - num_segments - 1)
        tokens, types = [CLS], [0]
        for s, k in enumerate(kept):
            tokens += list(range(1000 * (s + 1), 1000 * (s + 1) + k)) + [SEP]
            types += [s] * (k + 1)
        pad = seq_length - len(tokens)
        assert out["input_word_ids"][n].tolist() == tokens + [PAD] * pad
        assert out["input_type_ids"][n].tolist() == types + [0] * pad
        assert out["input_mask"][n].tolist() == [1] * len(tokens) + [0] * pad


def test_words_and_flat_segments_and_seq_length_per_call(preprocessor):
    words = preprocessor.tokenize(["hello world", "a b c d e f"])
    packed = preprocessor.bert_pack_inputs([words], seq_length=6)
    assert packed["input_word_ids"].numpy().tolist() == [[CLS, 7592, 2088, SEP, PAD, PAD],
                                                         [CLS, 1037, 1038, 1039, 1040, SEP]]
    flat = preprocessor.tokenizer.tokenize_flat(["hello world", "a b c d e f"])
    assert preprocessor.bert_pack_inputs([flat], seq_length=6)["input_word_ids"].numpy().tolist() == \
        packed["input_word_ids"].numpy().tolist()
    dense = preprocessor.bert_pack_inputs([tf.constant([[7592, 2088]])], seq_length=5)
    assert dense["input_word_ids"].numpy().tolist() == [[CLS, 7592, 2088, SEP, PAD]]
    # A tensor seq_length inside tf.function: one graph for any length.
    pack = tf.function(lambda s, n: preprocessor.bert_pack_inputs([s, s], seq_length=n))
    a, b, c = 1037, 1038, 1039
    assert pack(words, tf.constant(5))["input_word_ids"][1].numpy().tolist() == [CLS, a, SEP, a, SEP]
    assert pack(words, tf.constant(9))["input_word_ids"][1].numpy().tolist() == [CLS, a, b, c, SEP, a, b, c, SEP]
    assert preprocessor(["x"])["input_word_ids"].shape == (1, 128)


def test_bad_packer_arguments(packer):
    segment = tf.ragged.constant([[1, 2]], dtype=tf.int32)
    with pytest.raises(ValueError, match="seq_length=2 is too short"):
        packer([segment, segment], seq_length=2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="too short"):
        packer([segment, segment], seq_length=tf.constant(2))
    with pytest.raises(ValueError, match="truncator"):
        BertPacker(128, CLS, SEP, PAD, truncator="longest_first")
    with pytest.raises(TypeError, match="integer token ids"):
        packer([tf.ragged.constant([["a"]])])
    with pytest.raises(ValueError, match="segment 0"):
        packer([tf.constant([1, 2])])
    with pytest.raises(ValueError, match="at least one segment"):
        packer([])
