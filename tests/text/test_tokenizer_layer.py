"""The tokenizer base layer: raw texts in every entry point, and its helpers (the CJK share of a
vocabulary, offset units, words grouped per row).

``kbert.load_tokenizer(DIR)(texts)`` on RAW texts gives transformers' (or the sentencepiece package's) ids
for every tokenizer type kbert has, on every line of the shared Japanese references: a type with a
Python step (MeCab) runs it itself when called eagerly. Inside a graph, where MeCab cannot run, such
a type refuses raw texts (``TokenizerInputError``) and takes ``pre_tokenize()``'s strings with
``pre_tokenized=True``; the in-graph types take raw texts there too.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
from conftest import REPO
from fixtures.tokenizer_references import PYTHON_STEP, REFERENCES, type_model_dirs
from fixtures.tokenizer_references import reference_rows as _rows
from kbert.text.registry import tokenizer_class, tokenizer_types
from kbert.text.tokenizer_layer import TokenizerInputError, check_offset_unit, cjk_share, group_words


@pytest.fixture(scope="module")
def model_dirs(request, tmp_path_factory, tiny_model_dir):
    """{type: a model directory whose kbert.json names it} (fixtures.tokenizer_references)."""
    return type_model_dirs(request, tmp_path_factory, tiny_model_dir)


def _ids(ragged):
    return ragged.merge_dims(-2, -1).to_list()


def test_every_tokenizer_type_of_kbert_is_checked_here():
    ours = {name for name in tokenizer_types() if tokenizer_class(name).__module__.startswith("kbert.")}
    assert ours == set(REFERENCES)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_a_call_on_raw_texts_gives_the_reference_ids(model_dirs, name):
    texts, want = _rows(name)
    tokenizer = kbert.load_tokenizer(model_dirs[name])
    assert tokenizer.spec.type == name
    got = _ids(tokenizer(texts))
    wrong = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not wrong, f"{name}: {len(wrong)} of {len(texts)} lines differ, first: {texts[wrong[0]][:80]!r}"
    assert len(texts) >= 600
    # The other entry points and shapes: a numpy array, one text, a [n, 1] tensor.
    assert tokenizer.tokenize_flat(np.array(texts[:50], dtype=object)).to_list() == want[:50]
    assert tokenizer.tokenize(texts[7]).merge_dims(0, 1).numpy().tolist() == want[7]
    assert _ids(tokenizer.tokenize_serial(tf.constant(texts[:20])[:, None])) == [[w] for w in want[:20]]


@pytest.mark.parametrize("name", PYTHON_STEP)
def test_a_graph_call_on_raw_texts_is_refused(model_dirs, name):
    texts, want = _rows(name)
    tokenizer = kbert.load_tokenizer(model_dirs[name])
    strings = tf.constant(texts[:8])
    graph_calls = {
        "tf.function": lambda: tf.function(lambda s: tokenizer(s))(strings),
        "tf.function, no AutoGraph": lambda: tf.function(tokenizer.tokenize_flat, autograph=False)(strings),
        "tf.data map": lambda: next(iter(tf.data.Dataset.from_tensor_slices(strings).batch(4).map(tokenizer))),
        "Keras functional": lambda: tokenizer(keras.Input(shape=(), dtype="string")),
    }
    for where, call in graph_calls.items():
        with pytest.raises(TokenizerInputError, match=f"'{name}' tokenizer.*raw text inside a TensorFlow graph"):
            call()
    assert issubclass(TokenizerInputError, kbert.Error)
    # pre_tokenize()'s strings, said to be so, are what the graph part takes: the same ids.
    words = tokenizer.pre_tokenize(texts)
    dataset = tf.data.Dataset.from_tensor_slices(words).batch(256).map(lambda s: tokenizer(s, pre_tokenized=True))
    assert [row for batch in dataset for row in _ids(batch)] == want
    assert _ids(tokenizer(words, pre_tokenized=True)) == want


@pytest.mark.parametrize("name", sorted(set(REFERENCES) - set(PYTHON_STEP)))
def test_in_graph_types_take_raw_texts_in_a_graph(model_dirs, name):
    texts, want = _rows(name)
    tokenizer = kbert.load_tokenizer(model_dirs[name])
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(256).map(tokenizer)
    assert [row for batch in dataset for row in _ids(batch)] == want
    assert _ids(tf.function(lambda s: tokenizer(s, pre_tokenized=True))(tf.constant(texts))) == want


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


def test_the_japanese_page_example_gives_the_ids_of_the_graph_part(model_dirs):
    """docs/japanese.md's raw-text call, run as written on the converted ja-tiny-random-bert."""
    page = (REPO / "docs" / "japanese.md").read_text(encoding="utf-8")
    block = page.split("Called on raw text, every tokenizer", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert block.count('"runs/ja-tiny"') == 1
    namespace = {}
    exec(block.replace('"runs/ja-tiny"', repr(str(model_dirs["mecab-wordpiece"]))), namespace)
    tokenizer, texts = namespace["tokenizer"], ["本日は晴天なり。", "吾輩は猫である。"]
    assert namespace["ids"].to_list() == tokenizer(tokenizer.pre_tokenize(texts), pre_tokenized=True).to_list()
    assert "吾輩は猫である。" in block and "本日は晴天なり。" in block
