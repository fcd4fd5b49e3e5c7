"""BertTokenizer against the reference tokenizations and the google-research/bert oracle."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from conftest import CHINESE_VOCAB, SHARED, UNCASED_VOCAB
from kbert.text import BertTokenizer, VocabError, load_vocab
from fixtures.google_bert_oracle import (GoogleBertTokenizer, expected_ids, read_vocab,
                                        reference_lines, to_lists)


@pytest.fixture(scope="module")
def lines():
    return reference_lines()


@pytest.mark.slow
def test_reference_lines_exact(uncased_tokenizer, google_oracle, lines):
    """Every line of wordpiece_uncased.jsonl (English and Japanese): ids equal, 100%."""
    words = to_lists(uncased_tokenizer([line["text"] for line in lines]))
    got = [[i for w in ws for i in w] for ws in words]
    mismatches = [line["src"] for line, ids in zip(lines, got) if ids != expected_ids(line)]
    assert len(lines) == 3000 and mismatches == []
    # The word dimension is the original's words (basic tokenization), pieces inside.
    assert words == [google_oracle.word_ids(line["text"]) for line in lines]


def test_same_ids_eager_tf_function_and_tf_data(uncased_tokenizer, lines):
    texts = [line["text"] for line in lines[::5]]
    eager = to_lists(uncased_tokenizer(texts))
    in_function = to_lists(tf.function(lambda s: uncased_tokenizer(s))(tf.constant(texts)))
    batched = tf.data.Dataset.from_tensor_slices(texts).batch(64).map(uncased_tokenizer)
    from_dataset = [row for batch in batched for row in to_lists(batch)]
    unbatched = tf.data.Dataset.from_tensor_slices(texts[:40]).map(uncased_tokenizer)
    single = [to_lists(tf.RaggedTensor.from_tensor(r[tf.newaxis])) if not isinstance(r, tf.RaggedTensor)
              else to_lists(r) for r in unbatched]
    assert in_function == eager
    assert from_dataset == eager
    assert single == eager[:40]


def test_chinese_vocab_character_by_character():
    vocab = read_vocab(CHINESE_VOCAB)
    oracle = GoogleBertTokenizer(vocab)
    tokenizer = BertTokenizer(CHINESE_VOCAB)
    chinese = ["我爱北京天安门。", "今天天气很好，我们去公园散步吧！", "BERT模型在中文NLP任务上表现很好",
               "他说：“你好，世界”", "２０２４年１２月", "這是繁體中文的句子"]
    with open(SHARED / "corpus" / "ja" / "wagahaiwa_nekodearu.txt", encoding="utf-8") as f:
        japanese = [line for line in f.read().split("\n")[:400] if line.strip()]
    texts = chinese + japanese
    got = to_lists(tokenizer(texts))
    assert got == [oracle.word_ids(t) for t in texts]
    # Each ideograph is a word of its own with one piece.
    ideographs = [c for c in chinese[0] if "\u4e00" <= c <= "\u9fff"]
    assert got[0][: len(ideographs)] == [[vocab.index(c)] for c in ideographs]
    assert tokenizer.special_token_ids == {"padding_id": 0, "start_of_sequence_id": 101,
                                           "end_of_segment_id": 102, "mask_id": 103, "unknown_id": 100}


def test_cased_vocabulary(lines):
    """lower_case=False keeps case and accents, like FullTokenizer(do_lower_case=False)."""
    base = read_vocab(UNCASED_VOCAB)
    texts = [line["text"] for line in lines[:2400:4]] + ["Café Müller, ÉCOLE naïve", "ΟΔΟΣ Σ"]
    capitalized = sorted({w for t in texts for w in t.replace(",", " ").split()
                          if w.isalpha() and w[:1].isupper() and w.lower() != w} - set(base))
    vocab = base + sorted(set(capitalized) | {"Café", "##é"})
    oracle = GoogleBertTokenizer(vocab, do_lower_case=False)
    tokenizer = BertTokenizer(vocab, lower_case=False)
    got = to_lists(tokenizer(texts))
    assert got == [oracle.word_ids(t) for t in texts]
    flat = {i for ws in got for w in ws for i in w}
    assert vocab.index("Café") in flat and vocab.index("Emma") in flat


@pytest.mark.parametrize("word,lower_case,expect_unk", [
    ("a" * 200, True, False),
    ("a" * 201, True, True),
    ("α" * 150, True, False),   # 300 UTF-8 bytes, 150 characters: within the limit
    ("α" * 201, True, True),
    ("É" * 200, True, False),   # 400 input bytes, 200 characters after accent stripping
    ("e\u0301" * 150, True, False),  # 300 characters in, 150 after dropping the accents
    ("ab" * 100 + "c", False, True),
])
def test_word_length_limit_counts_characters(word, lower_case, expect_unk):
    vocab = read_vocab(UNCASED_VOCAB)
    oracle = GoogleBertTokenizer(vocab, do_lower_case=lower_case)
    tokenizer = BertTokenizer(vocab, lower_case=lower_case)
    text = f"x {word} y"
    got = to_lists(tokenizer([text]))[0]
    assert got == oracle.word_ids(text)
    assert (got[1] == [vocab.index("[UNK]")]) == expect_unk


def _fold_sigma(s):
    return s.replace("ς", "σ")


@pytest.mark.slow
def test_offsets_point_at_the_words(uncased_tokenizer, google_oracle, lines):
    texts = [line["text"] for line in lines] + ["Héllo, ΣΑΣ wörld! 中文x\x00y", "a\u200bb İstanbul ﬁ"]
    ids, starts, ends = uncased_tokenizer.tokenize_with_offsets(texts, unit="UTF8_CHAR")
    _, byte_starts, byte_ends = uncased_tokenizer.tokenize_with_offsets(texts)
    ids, starts, ends, byte_starts, byte_ends = map(to_lists, (ids, starts, ends, byte_starts, byte_ends))
    unk = uncased_tokenizer.special_token_ids["unknown_id"]
    vocab = uncased_tokenizer.get_vocabulary()
    for n, text in enumerate(texts):
        encoded = text.encode("utf-8")
        assert len(ids[n]) == len(google_oracle.basic_tokenize(text))
        for w, word in enumerate(ids[n]):
            s, e = starts[n][w], ends[n][w]
            assert all(0 <= a <= b <= len(text) for a, b in zip(s, e))
            # Byte and character offsets describe the same spans.
            assert [encoded[a:b].decode() for a, b in zip(byte_starts[n][w], byte_ends[n][w])] == \
                   [text[a:b] for a, b in zip(s, e)]
            # The span of a word, cleaned by the google_oracle, is that word.
            span = google_oracle.basic_tokenize(text[s[0]:e[-1]])
            if word != [unk]:
                assert _fold_sigma("".join(span)) == _fold_sigma("".join(vocab[i].removeprefix("##") for i in word))
            assert len(span) == 1, (text, span)


def test_offsets_of_a_known_string(uncased_tokenizer):
    ids, starts, ends = uncased_tokenizer.tokenize_with_offsets(["Héllo, wörld!"])
    assert to_lists(starts) == [[[0], [6], [8], [14]]]
    assert to_lists(ends) == [[[6], [7], [14], [15]]]
    ids, starts, ends = uncased_tokenizer.tokenize_with_offsets(["Héllo, wörld!"], unit="UTF8_CHAR")
    assert to_lists(starts) == [[[0], [5], [7], [12]]]
    assert to_lists(ends) == [[[5], [6], [12], [13]]]
    with pytest.raises(ValueError, match="unit"):
        uncased_tokenizer.tokenize_with_offsets(["x"], unit="WORD")


def test_shapes(uncased_tokenizer):
    scalar = uncased_tokenizer("hello world")
    assert to_lists(scalar) == [[7592], [2088]]
    grid = uncased_tokenizer([["hello", "hello world"], ["", "world"]])
    assert grid.shape.rank == 4 and to_lists(grid) == [[[[7592]], [[7592], [2088]]], [[], [[2088]]]]
    ragged = uncased_tokenizer(tf.ragged.constant([["hello"], ["world", "hello world"]]))
    assert to_lists(ragged) == [[[[7592]]], [[[2088]], [[7592], [2088]]]]
    assert to_lists(uncased_tokenizer.tokenize_flat(["hello world", ""])) == [[7592, 2088], []]
    empty = uncased_tokenizer([])
    assert empty.shape[0] == 0 and empty.dtype == tf.int32
    assert uncased_tokenizer(np.array(["hello"])).dtype == tf.int32


@pytest.mark.parametrize("bad", [lambda: tf.constant([1, 2]), lambda: np.array([1.0]), lambda: [1, 2], lambda: None,
                                 lambda: {"a": "b"}], ids=["tensor", "floats", "list", "none", "dict"])
def test_non_string_input_is_a_clear_error(uncased_tokenizer, bad):
    bad = bad()  # made when the test runs: collecting starts no TensorFlow runtime (see text/test_preprocessor)
    with pytest.raises(TypeError, match="expects strings"):
        uncased_tokenizer(bad)


def test_special_tokens_are_looked_up_not_assumed(tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "##s"]
    tokenizer = BertTokenizer(vocab)
    assert tokenizer.special_token_ids == {"padding_id": 0, "unknown_id": 1, "start_of_sequence_id": 2,
                                           "end_of_segment_id": 3, "mask_id": 4}
    assert to_lists(tokenizer(["hellos x"])) == [[[5, 6], [1]]]
    specials = {k: int(v) for k, v in tokenizer.get_special_tokens_dict().items()}
    assert specials == {"vocab_size": 7, "padding_id": 0, "start_of_sequence_id": 2,
                        "end_of_segment_id": 3, "mask_id": 4}
    with pytest.raises(VocabError, match=r"\[MASK\]"):
        BertTokenizer(vocab[:4] + ["hello"])
    uncased = BertTokenizer(UNCASED_VOCAB)
    assert uncased.vocab_size == 30522 and uncased.get_vocabulary() == load_vocab(UNCASED_VOCAB)
    assert uncased.special_token_ids["mask_id"] == 103 and uncased.token_to_id("hello") == 7592


def test_config_round_trip(uncased_tokenizer):
    clone = BertTokenizer.from_config(uncased_tokenizer.get_config())
    text = ["Configs keep the vocabulary, lower_case and the word limit."]
    assert to_lists(clone(text)) == to_lists(uncased_tokenizer(text))
    assert clone.lower_case and clone.max_chars_per_word == 200
