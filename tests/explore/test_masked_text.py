"""kbert.explore.masked_text: a literal [MASK] in text -> the mask id between the separately tokenized
parts (WordPiece and SentencePiece, eager and in a tf.function), and word pieces -> readable text."""

import pytest
import tensorflow as tf

from conftest import SHARED, UNCASED_VOCAB
from kbert.explore.masked_text import _is_cjk, is_sentencepiece_vocab, join_pieces, tokenize_with_masks


def _expected(tokenize_flat, text, mask_id):
    """The reference: each part between the [MASK]s tokenized alone, the mask id between them."""
    parts = text.split("[MASK]")
    ids = []
    for i, part in enumerate(parts):
        ids += tokenize_flat([part]).to_list()[0] + ([mask_id] if i < len(parts) - 1 else [])
    return ids


@pytest.fixture(scope="module")
def wordpiece():
    from kbert.text import BertTokenizer

    return BertTokenizer(UNCASED_VOCAB)


def test_mask_in_text_becomes_the_mask_id_for_every_part(wordpiece):
    texts = ["the man went to the [MASK] store.", "no mask here", "", "[MASK][MASK] x [MASK]",
             "grocery[MASK]store", "a [mask] is text, not a mask"]
    got = tokenize_with_masks(wordpiece.tokenize_flat, texts, 103)
    assert got.dtype == tf.int32 and got.shape[0] == len(texts)
    for text, row in zip(texts, got.to_list()):
        assert row == _expected(wordpiece.tokenize_flat, text, 103), text
    rows = got.to_list()
    assert rows[0][5] == 103 and wordpiece.tokenize_flat(["[MASK]"]).to_list()[0] != [103]  # split as [ mask ]
    assert rows[3][:2] == [103, 103] and rows[3][-1] == 103 and rows[2] == []
    assert 103 not in rows[5]  # only [MASK] as written is a mask


def test_in_a_tf_function_as_an_export_runs_it(wordpiece):
    texts = ["the man went to the [MASK] store.", "[MASK] is the capital of [MASK]."]
    graph = tf.function(lambda s: tokenize_with_masks(wordpiece.tokenize_flat, s, 103),
                        input_signature=[tf.TensorSpec([None], tf.string)])
    assert graph(tf.constant(texts)).to_list() == tokenize_with_masks(wordpiece.tokenize_flat, texts, 103).to_list()
    assert graph(tf.constant([], tf.string)).to_list() == []


def test_sentencepiece_parts_are_tokenized_alone():
    from kbert.text.sentencepiece import SentencePieceTokenizer

    tokenizer = SentencePieceTokenizer(str(SHARED / "vocab" / "ja-sentencepiece" / "spm.model"))
    mask_id = tokenizer.special_token_ids["mask_id"]
    texts = ["吾輩は[MASK]である。", "[MASK]", "名前はまだ無い。"]
    got = tokenize_with_masks(tokenizer.tokenize_flat, texts, mask_id).to_list()
    assert got == [_expected(tokenizer.tokenize_flat, t, mask_id) for t in texts]
    assert got[1] == [mask_id] and mask_id not in got[2]


def test_join_pieces():
    assert join_pieces(["the", "gro", "##cer", "##y", "store", "."]) == "the grocery store."
    assert join_pieces(["\u2581the", "\u2581gro", "cery"]) == "the grocery"
    assert join_pieces(["吾", "##輩", "は", "猫", "cat"]) == "吾輩は猫 cat"
    assert join_pieces(["gro", "[MASK]", "\u2581store"], sentencepiece=True) == "gro [MASK] store"
    # closing punctuation takes no space before it; opening and other tokens do
    assert join_pieces(["(", "a", ")", ",", "b", "!", "?", "]", "}", ";", ":", "c"]) == "( a), b!?]};: c"
    # a lone "##" is a token, not a continuation; [CLS]-like tokens are words
    assert join_pieces(["a", "##", "b"]) == "a ## b" and join_pieces(["[CLS]", "a", "[SEP]"]) == "[CLS] a [SEP]"
    # CJK beside CJK: no space; CJK beside Latin or Hangul: a space
    assert join_pieces(["東京", "タワー", "。", "tokyo", "タワー", "서울", "역"]) == "東京タワー。 tokyo タワー 서울 역"
    # WordPiece text is not read as SentencePiece unless told: "▁" pieces are then plain tokens
    assert join_pieces(["a", "\u2581b"], sentencepiece=False) == "a \u2581b"
    assert join_pieces([]) == ""


def test_vocab_kind_and_cjk_ranges():
    assert is_sentencepiece_vocab(["[PAD]", "\u2581a", "\u2581b", "c"])
    assert not is_sentencepiece_vocab(UNCASED_VOCAB.read_text(encoding="utf-8").splitlines())
    assert not is_sentencepiece_vocab(["\u2581a", "##b"])  # a tie is WordPiece
    spm_vocab = (SHARED / "vocab" / "ja-sentencepiece" / "spm.vocab").read_text(encoding="utf-8").splitlines()
    assert is_sentencepiece_vocab([line.split("\t")[0] for line in spm_vocab])
    # hiragana, katakana, CJK ideographs (and extension A, compatibility), full-width forms, CJK punctuation
    assert all(_is_cjk(c) for c in "ぁあゟァアヿ㐀䶿一龥豈！ｚ。「　")
    assert not any(_is_cjk(c) for c in ("a", "é", "한", "Ω", "\u2581", ""))
