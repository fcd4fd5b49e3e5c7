"""kbert.tasks.core.words_inputs on hand-written cases: the words-in names, the padded requests
words_request makes, join_words' strings (the exports that use them: tests/export/test_mecab.py)."""

import numpy as np
import tensorflow as tf

from kbert.tasks.core.words_inputs import join_words, words_name, words_request


def test_words_names_and_request():
    assert [words_name(n) for n in ("text", "text_a", "text_b", "context", "choices")] == [
        "words", "words_a", "words_b", "context_words", "choices_words"]

    class Spaces:  # a Python-step tokenizer that splits characters
        in_graph = False

        def pre_tokenize(self, texts):
            return [" ".join(t) for t in texts]

    # Each input padded with "" to its own longest row (at least one entry).
    assert words_request(Spaces(), {"context": ["ab", ""], "choices": [["cd", "e"], ["", "fgh"]]}) == {
        "context_words": [["a", "b"], ["", ""]],
        "choices_words": [[["c", "d", ""], ["e", "", ""]], [["", "", ""], ["f", "g", "h"]]]}
    assert words_request(Spaces(), {"text": "xy"}) == {"words": ["x", "y"]}
    assert words_request(Spaces(), {"text": [""]}) == {"words": [[""]]}
    array = words_request(Spaces(), {"text_a": np.array(["a", "bc"], dtype=object)})["words_a"]
    assert isinstance(array, np.ndarray) and array.tolist() == [["a", ""], ["b", "c"]]

    class InGraph:
        in_graph = True

    assert words_request(InGraph(), {"text": ["ab"]}) == {"text": ["ab"]}


def test_join_words_gives_the_python_step_strings():
    """Each row's non-empty words joined by one space, whatever the padding (hand-written cases)."""
    words = tf.constant([["吾輩", "は", "猫", ""], ["", "名前", "", "は"], ["", "", "", ""], ["\r", "猫", "\t", ""]])
    assert join_words(words).numpy().tolist() == [s.encode() for s in ["吾輩 は 猫", "名前 は", "", "\r 猫 \t"]]
    choices = tf.constant([[["a", ""], ["b", "c"]]])  # [batch, choices, words]
    assert join_words(choices).numpy().tolist() == [[b"a", b"b c"]]
    assert join_words(tf.zeros([2, 0], tf.string)).numpy().tolist() == [b"", b""]
