"""String inputs of any shape: the TypeErrors naming the caller, map_flat's shapes, sharded graphs."""

import numpy as np
import pytest
import tensorflow as tf

from kbert.text.inputs import as_string_tensor, map_flat, shard_rows


def _chars(strings):
    return tf.strings.unicode_split(strings, "UTF-8")


def test_as_string_tensor_takes_strings_and_names_the_caller_otherwise():
    assert as_string_tensor(["a", "b"], "tok").dtype == tf.string
    assert as_string_tensor([], "tok").shape == (0,)
    ragged = tf.ragged.constant([["a"], ["b", "c"]])
    assert as_string_tensor(ragged, "tok") is ragged
    with pytest.raises(TypeError, match="tok expects strings, got a numpy array of int64"):
        as_string_tensor(np.array([1, 2], np.int64), "tok")
    with pytest.raises(TypeError, match="tok expects strings \\(a tf.string tensor\\), got int32"):
        as_string_tensor(tf.constant([1]), "tok")
    with pytest.raises(TypeError, match="tok expects strings, got list of float32"):
        as_string_tensor([1.5], "tok")


def test_map_flat_keeps_the_input_dimensions():
    assert map_flat(tf.constant("ab"), _chars).numpy().tolist() == [b"a", b"b"]
    out = map_flat(tf.constant([["ab", "c"], ["", "def"]]), _chars)
    assert out.to_list() == [[[b"a", b"b"], [b"c"]], [[], [b"d", b"e", b"f"]]]
    out = map_flat(tf.constant([[["a", "bc", ""], ["d", "", "ef"]]]), _chars)  # [1, 2, 3]
    assert out.to_list() == [[[[b"a"], [b"b", b"c"], []], [[b"d"], [], [b"e", b"f"]]]]
    out = map_flat(tf.ragged.constant([["ab"], ["c", "d"]]), _chars)
    assert out.to_list() == [[[b"a", b"b"]], [[b"c"], [b"d"]]]


def test_shard_rows_in_a_graph_equals_one_call():
    strings = tf.constant([f"row {i} " + "x" * (i % 7) for i in range(40)])
    graph = tf.function(lambda s: shard_rows(_chars, [s], shards=3, min_rows=1),
                        input_signature=[tf.TensorSpec([None], tf.string)])
    assert graph(strings).to_list() == _chars(strings).to_list()
    assert graph(strings[:2]).to_list() == _chars(strings[:2]).to_list()  # fewer rows than shards
