"""NFKC with a map back to the input characters; UTF-8 decoding with each character's byte length."""

import unicodedata

from kbert.text.nfkc_spans import byte_positions, decode_text, nfkc_spans


def test_decode_text_is_utf8_with_replacement_and_byte_lengths():
    for data in (b"a\xffb", "é€😀".encode() + b"\xe2\x82", b"\xc3(\xf0\x9f\x98\x80"):
        text, lengths = decode_text(data)
        assert text == data.decode("utf-8", "replace")
        assert sum(lengths) == len(data) and len(lengths) == len(text)
    assert decode_text(b"a\xe2\x82b") == ("a\ufffdb", [1, 2, 1])
    assert decode_text("x\ud800y") == ("x\ufffdy", None)


def test_byte_positions_are_cumulative_utf8_lengths():
    assert list(byte_positions("aé€😀")) == [0, 1, 3, 6, 10]
    assert list(byte_positions("abc")) == [0, 1, 2, 3]
    assert list(byte_positions(b"a\xffb")) == [0, 1, 2, 3]


def test_each_normalized_character_spans_the_input_it_came_from():
    # half-width katakana + voiced mark compose into one character spanning both; the ligature
    # "ﬁ" gives two characters spanning it; "①" becomes "1".
    out, starts, ends = nfkc_spans("ｶﾞｷﬁ①x")
    assert out == "ガキfi1x"
    assert list(zip(starts, ends)) == [(0, 2), (2, 3), (3, 4), (3, 4), (4, 5), (5, 6)]
    text = "Ａｂｃ　e\u0301ｳﾞ가\u11a8"
    out, starts, ends = nfkc_spans(text)
    assert out == unicodedata.normalize("NFKC", text)
    for k, ch in enumerate(out):
        assert ch in unicodedata.normalize("NFKC", text[starts[k]:ends[k]])


def test_normalized_text_maps_one_to_one():
    out, starts, ends = nfkc_spans("plain")
    assert out == "plain" and list(starts) == [0, 1, 2, 3, 4] and list(ends) == [1, 2, 3, 4, 5]
