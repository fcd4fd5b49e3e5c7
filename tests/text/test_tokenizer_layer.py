"""The tokenizer base layer's helpers: the CJK share of a vocabulary, offset units, words grouped per row."""

import pytest
import tensorflow as tf

from kbert.text.tokenizer_layer import check_offset_unit, cjk_share, group_words


def test_cjk_share_counts_word_initial_non_special_tokens():
    tokens = ["[PAD]", "[CLS]", "日", "本", "日本", "##語", "the", "ｶ", "a"]
    # counted: 日 本 日本 the ｶ a (6); one CJK character: 日 本 (ｶ is half-width, outside the ranges)
    assert cjk_share(tokens) == pytest.approx(2 / 6)
    assert cjk_share(tokens, whole_pieces=True) == pytest.approx(3 / 6)
    assert cjk_share(["[UNK]", "##x"]) == 0.0


def test_offset_units():
    check_offset_unit("BYTE")
    check_offset_unit("UTF8_CHAR")
    with pytest.raises(ValueError, match="unit must be one of .*got 'CHAR'"):
        check_offset_unit("CHAR")


def test_group_words_cuts_flat_pieces_into_rows_of_words():
    ids = tf.constant([10, 11, 12, 13, 14, 15], tf.int64)
    # words start at pieces 0, 2, 3, 5; row 0 has 3 words, row 1 has 1
    word_starts = tf.constant([0, 2, 3, 5], tf.int64)
    words_per_row = tf.constant([3, 1], tf.int64)
    grouped, starts, ends = group_words([ids], word_starts, words_per_row)
    assert starts is None and ends is None
    assert grouped.to_list() == [[[10, 11], [12], [13, 14]], [[15]]]
    out = group_words([ids, ids * 2, ids * 3], word_starts, words_per_row)
    assert [t.to_list() for t in out] == [[[[10 * m, 11 * m], [12 * m], [13 * m, 14 * m]], [[15 * m]]] for m in (1, 2, 3)]
