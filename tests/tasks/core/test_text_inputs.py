"""kbert.tasks.core.text_inputs: the forms a string-in task model takes (one text, a pair as a list
or a dict), the errors naming the model, text lengths and row selection."""

import numpy as np
import pytest
import tensorflow as tf

from kbert.tasks.core.text_inputs import take_rows, text_lengths, text_segments


def test_the_accepted_forms():
    texts = ["a", "bc"]
    assert text_segments(texts, 1, "m") == [texts]  # a list of strings is one batch
    assert text_segments("one", 1, "m") == ["one"]
    array = np.array(texts, dtype=object)
    assert text_segments(array, 1, "m")[0] is array
    first, second = ["a", "b"], ["c", "d"]
    assert text_segments([first, second], 2, "m") == [first, second]
    assert text_segments((first, second), 2, "m") == [first, second]
    assert text_segments({"text_b": second, "text_a": first}, 2, "m") == [first, second]  # in key order
    tensor = tf.constant(texts)
    assert text_segments(tensor, 1, "m")[0] is tensor


@pytest.mark.parametrize("inputs, segments, message", [
    (["a", "b"], 2, r"TextClassifier was built for 2 text input\(s\) per example \(num_segments=2\) but got 1"),
    ([["a"], ["b"]], 1, r"TextClassifier was built for 1 text input\(s\) .* but got 2"),
    ({"text_a": ["a"]}, 2, r"TextClassifier takes the dict keys \['text_a', 'text_b'\]; got \['text_a'\] "
                           r"\(missing \['text_b'\], unexpected \[\]\)"),
    ({"text": ["a"]}, 1, r"TextClassifier takes the dict keys \['text_a'\]; got \['text'\] \(missing \['text_a'\], "
                         r"unexpected \['text'\]\)"),
])
def test_errors_name_the_model_and_what_it_takes(inputs, segments, message):
    with pytest.raises(ValueError, match=message):
        text_segments(inputs, segments, "TextClassifier")


def test_text_lengths_add_the_segments_and_the_choices():
    assert text_lengths(["ab", "", "東京都"], 1).tolist() == [2, 0, 3]
    assert text_lengths(tf.constant(["ab", "xyz"]), 1).tolist() == [2, 3]  # bytes of the tensor's strings
    assert text_lengths({"text_a": ["ab", "c"], "text_b": ["d", "efgh"]}, 2).tolist() == [3, 5]
    choices = np.array([["a", "bb"], ["ccc", ""]], dtype=object)  # [batch, choices]
    assert text_lengths([["x", "yy"], choices], 2).tolist() == [1 + 3, 2 + 3]


def test_take_rows_keeps_the_form():
    index = np.array([2, 0])
    assert take_rows(["a", "b", "c"], index).tolist() == ["c", "a"]
    pair = take_rows((["a", "b", "c"], ["x", "y", "z"]), index)
    assert isinstance(pair, tuple) and [p.tolist() for p in pair] == [["c", "a"], ["z", "x"]]
    picked = take_rows({"text_a": tf.constant(["a", "b", "c"]), "text_b": ["x", "y", "z"]}, index)
    assert picked["text_a"].tolist() == [b"c", b"a"] and picked["text_b"].tolist() == ["z", "x"]


def test_string_tensors_take_what_keras_refuses():
    from kbert.tasks.core.text_inputs import label_arrays, string_tensors

    for form in (np.array(["a", "b"]), np.array(["a", "b"], dtype=object), ["a", "b"]):
        converted = string_tensors(form)
        assert converted.dtype == tf.string and converted.numpy().tolist() == [b"a", b"b"]
    pairs = string_tensors({"text_a": np.array(["a"]), "text_b": [["x", "y"]]})
    assert pairs["text_b"].shape == (1, 2)
    numbers = np.array([1.0, 2.0])
    assert string_tensors(numbers) is numbers  # not text: as given
    assert label_arrays([1, 0]).dtype.kind == "i" and label_arrays(["pos"]) == ["pos"]
