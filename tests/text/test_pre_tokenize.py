"""The Python step of tokenizers not wholly in the graph, on the shapes fit/predict and tf.data meet."""

import numpy as np
import pytest
import tensorflow as tf

from kbert.text.pre_tokenize import needs_pre_tokenize, pre_tokenize_data, pre_tokenize_dataset, pre_tokenize_tensor


class Upper:
    """A stand-in tokenizer whose Python step upper-cases each text."""
    in_graph = False

    def pre_tokenize(self, texts):
        return [t.upper() for t in texts]


class InGraph:
    in_graph = True


def test_in_graph_tokenizers_get_their_input_back():
    data = {"text": ["a"], "label": [1]}
    assert not needs_pre_tokenize(InGraph()) and needs_pre_tokenize(Upper())
    assert pre_tokenize_data(InGraph(), data) is data
    strings = tf.constant(["a"])
    assert pre_tokenize_tensor(InGraph(), strings) is strings


def test_texts_in_every_shape_fit_takes_and_other_entries_untouched():
    tok = Upper()
    assert pre_tokenize_data(tok, "ab") == "AB"
    assert pre_tokenize_data(tok, ["ab", b"c\xffd"]) == ["AB", "C\ufffdD"]
    assert pre_tokenize_data(tok, [["a", "b"], ["c", "d"]]) == [["A", "B"], ["C", "D"]]
    labels = np.array([0, 1])
    out = pre_tokenize_data(tok, {"left": np.array(["x", "y"]), "label": labels})
    assert out["left"].tolist() == ["X", "Y"] and out["label"] is labels
    pair = pre_tokenize_data(tok, (["q"], ["p"], labels))
    assert pair[:2] == (["Q"], ["P"]) and pair[2] is labels
    with pytest.raises(TypeError):
        pre_tokenize_data(type("T", (Upper,), {"spec": type("S", (), {"type": "t"})()})(),
                          tf.data.Dataset.from_tensor_slices(["a"]))


def test_tensors_and_datasets_in_a_graph():
    tok = Upper()
    assert pre_tokenize_tensor(tok, tf.constant([["ab"], ["cd"]])).numpy().tolist() == [[b"AB"], [b"CD"]]
    ds = tf.data.Dataset.from_tensor_slices(({"t": ["ab", "é"]}, [0, 1]))
    got = [(x["t"].numpy().decode(), int(y)) for x, y in pre_tokenize_dataset(tok, ds)]
    assert got == [("AB", 0), ("É", 1)]
    ids = tf.data.Dataset.from_tensor_slices([[1, 2]])
    assert pre_tokenize_dataset(tok, ids) is ids
