"""BERT's text cleaning in the graph against the same rules written with Python's unicodedata."""

import unicodedata

import pytest
import tensorflow as tf

from kbert.text.normalize import check_rules, normalize, normalize_per_char

TEXTS = ["Hello, World!", "Héllo Wörld\u00ad", "tab\there\x00\x07", "ΣΟΦΊΑ café", "日本語テキスト\u200b",
         "naïve\ufffd résumé", "ＡＢＣ", ""]


def google_clean(text, lower_case=True):
    """google-research/bert BasicTokenizer: control characters (Cc but tab/LF/CR, Cf), NUL and U+FFFD
    removed; lower-cased; then NFD with the nonspacing marks stripped."""
    text = "".join(c for c in text if not (c in "\x00\ufffd" or (
        unicodedata.category(c) in ("Cc", "Cf") and c not in "\t\n\r")))
    if lower_case:
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn")
    return text


@pytest.mark.parametrize("lower_case", [True, False])
def test_normalize_is_googles_cleaning(lower_case):
    got = [t.decode("utf-8") for t in normalize(tf.constant(TEXTS), lower_case=lower_case).numpy()]
    assert got == [google_clean(t, lower_case) for t in TEXTS]


def test_any_shape_and_invalid_bytes():
    strings = tf.constant([["Ab\xc3\xa9".encode("latin-1"), b"x\xffY"], [b"OK", b"\xe2\x82"]])
    out = normalize(strings)
    assert out.shape == (2, 2)
    assert out.numpy().tolist() == [[b"abe", b"xy"], [b"ok", b""]]


def test_per_char_lengths_and_byte_spans():
    lengths, starts, ends = normalize_per_char(tf.constant(["Aé\x00€", "b"]))
    # "A" -> "a" (1 byte), "é" (2 bytes) -> "e", NUL -> removed, "€" (3 bytes) -> itself
    assert lengths.to_list() == [[1, 1, 0, 3], [1]]
    assert starts.to_list() == [[0, 1, 3, 4], [0]]
    assert ends.to_list() == [[1, 3, 4, 7], [1]]


def test_rules_are_checked():
    assert check_rules("google") == "google"
    with pytest.raises(ValueError, match="rules must be one of"):
        check_rules("hf")
