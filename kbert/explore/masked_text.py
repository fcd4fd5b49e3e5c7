"""Text with a literal ``[MASK]`` -> token ids with the mask id in its place, and pieces -> words.

Tokenizers split ``[MASK]`` like any other text (WordPiece's basic tokenizer makes ``[``, ``mask``,
``]`` of it), so the text is cut at each ``[MASK]``, the parts are tokenized on their own and the
mask id goes between them. That works for every tokenizer that maps strings to flat ids (WordPiece,
MeCab + WordPiece, characters, SentencePiece) and runs in the TensorFlow graph (an export uses it).
"""

from __future__ import annotations

import tensorflow as tf

MASK = "[MASK]"
WORDPIECE_SUFFIX = "##"
SENTENCEPIECE_SPACE = "\u2581"  # "▁" starts a word in SentencePiece vocabularies
CLOSING_PUNCTUATION = set(".,;:!?)]}")  # written without a space before them


def tokenize_with_masks(tokenize_flat, strings, mask_id: int):
    """``strings`` [batch] -> int32 RaggedTensor [batch, tokens] with ``mask_id`` at each ``[MASK]``.

    ``tokenize_flat``: strings [n] -> RaggedTensor [n, tokens] of int ids (words merged).
    """
    strings = tf.convert_to_tensor(strings, tf.string)
    parts = tf.strings.split(strings, sep=MASK)  # [batch, parts]; a row without [MASK] is one part
    pieces = tokenize_flat(parts.flat_values)  # [parts, tokens]
    pieces = tf.cast(pieces, tf.int32)
    # Every part is followed by the mask id; the last part of a row is not (dropped below).
    with_mask = tf.concat([pieces, _column(pieces, mask_id)], axis=1)
    per_string = tf.RaggedTensor.from_row_splits(with_mask, parts.row_splits, validate=False)
    flat = per_string.merge_dims(1, 2)  # [batch, tokens + masks + 1]
    return flat[:, :-1]


def _column(pieces, value):
    """A [n, 1] ragged column of ``value`` (one per row of ``pieces``)."""
    n = pieces.nrows()
    return tf.RaggedTensor.from_row_lengths(tf.fill([n], tf.constant(value, tf.int32)),
                                            tf.ones([n], tf.int64), validate=False)


def join_pieces(tokens, sentencepiece: bool | None = None) -> str:
    """Word pieces -> readable text. WordPiece: ``##`` continuations join the piece before them.
    SentencePiece (``sentencepiece=True``, or None and some token starts with ``▁``): ``▁`` starts
    a word, other pieces continue one. Other tokens are separated by a space, except between two
    CJK characters (Japanese and Chinese are written without spaces) and before closing
    punctuation."""
    tokens = list(tokens)
    if sentencepiece is None:
        sentencepiece = any(t.startswith(SENTENCEPIECE_SPACE) for t in tokens)
    text = ""
    for token in tokens:
        if sentencepiece and not (token.startswith("[") and token.endswith("]")):
            text += (" " if text and token.startswith(SENTENCEPIECE_SPACE) else "") + token.lstrip(SENTENCEPIECE_SPACE)
        elif token.startswith(WORDPIECE_SUFFIX) and len(token) > len(WORDPIECE_SUFFIX):
            text += token[len(WORDPIECE_SUFFIX):]
        elif text and not (_is_cjk(text[-1]) and _is_cjk(token[:1])) and token not in CLOSING_PUNCTUATION:
            text += " " + token
        else:
            text += token
    return text


def is_sentencepiece_vocab(vocab) -> bool:
    """True when the vocabulary marks word starts with ``▁`` (SentencePiece) rather than word
    continuations with ``##`` (WordPiece)."""
    starts = sum(t.startswith(SENTENCEPIECE_SPACE) for t in vocab)
    return starts > sum(t.startswith(WORDPIECE_SUFFIX) for t in vocab)


def _is_cjk(char: str) -> bool:
    if not char:
        return False
    code = ord(char)
    return (0x3040 <= code <= 0x30FF or 0x3400 <= code <= 0x4DBF or 0x4E00 <= code <= 0x9FFF
            or 0xF900 <= code <= 0xFAFF or 0xFF00 <= code <= 0xFFEF or 0x3000 <= code <= 0x303F)
