"""kbert.tasks.core.signatures: the ids-in spec, and valid_utf8 against Python's own decoder
(``bytes.decode("utf-8", "replace")``: one U+FFFD per maximal invalid subpart)."""

import pytest
import tensorflow as tf

from kbert.tasks.core.signatures import IDS_SPEC, valid_utf8

BYTES = [b"ab\xffc", b"\xe6\x97", b"\xe6\x97a", b"\xc3(", b"\xed\xa0\x80x", b"\xf8\x88\x80\x80\x80",
         "café 東京 😀".encode(), b""]


@pytest.mark.parametrize("data", BYTES)
def test_valid_utf8_replaces_as_python_decodes(data):
    assert valid_utf8(tf.constant(data)).numpy().decode("utf-8") == data.decode("utf-8", "replace")


def test_valid_utf8_keeps_the_batch_shape_and_valid_text():
    batch = tf.constant([[b"ok \xff"], ["東京".encode()]])
    out = valid_utf8(batch)
    assert out.shape == (2, 1) and out.numpy().tolist() == [["ok \ufffd".encode()], ["東京".encode()]]


def test_ids_spec_is_int32_batch_by_sequence():
    assert sorted(IDS_SPEC) == ["input_mask", "input_type_ids", "input_word_ids"]
    for name, spec in IDS_SPEC.items():
        assert spec.dtype == tf.int32 and spec.shape.as_list() == [None, None] and spec.name == name
