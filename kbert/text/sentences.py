"""Sentence splitting in the graph (``tf.strings`` regular expressions), for
``--long-documents sentences``: an exported SavedModel splits its request's texts itself.

The rules (one set for every language; a text is split where any of them holds):

  * Latin-script punctuation: one or more of ``. ! ?`` (then any closing quotes or brackets)
    followed by whitespace ends a sentence. A decimal point (``70.0``) or a dot inside a word
    (``e.g.x``) is not followed by whitespace and does not split. Abbreviations are kept simple: a
    dot after ``Mr Mrs Ms Dr Prof St Jr Sr vs etc e.g i.e`` or after a single capital letter (an
    initial, ``J. Smith``, ``U.S.``) does not end a sentence; any other abbreviation does.
  * Japanese and Chinese: ``。 ！ ？`` and the full-width full stop ``．`` (then any closing
    quotes or brackets: ``」 』 ） ”``) end a sentence, with or without whitespace (the ideographic
    space too) after them. A quotation that ends in ``。`` inside ``「」`` is a sentence of its own.
  * Korean: sentences end in ``다. 요. 까?`` and the like, followed by a space: the Latin rule
    covers them.
  * A line break ends a sentence (blank lines too).

Each sentence is stripped of surrounding whitespace (the ideographic space U+3000 too); empty pieces are dropped, and a text with no
sentence (empty, or whitespace) keeps one empty sentence, so that every text has at least one.
Texts are read as UTF-8; the markers the split uses (U+001E, U+001F) become spaces first.
"""

from __future__ import annotations

from kbert.api_export import kbert_export

_SPLIT, _KEEP = "\x1e", "\x1f"
_MARKERS = "[\x1e\x1f]"
# a dot that does not end a sentence: a few abbreviations and single capital letters (initials)
_ABBREVIATION = r"\b((?:Mr|Mrs|Ms|Dr|Prof|St|Jr|Sr|vs|etc|e\.g|i\.e|[A-Z])\.)\s+"
_CLOSING = "[\"'\u2019\u201d)\\]\u300d\u300f\uff09]*"
_LATIN_END = r"([.!?]+" + _CLOSING + r")\s+"
_CJK_END = "([\u3002\uff01\uff1f\uff0e]+" + _CLOSING + r")[\s\x{3000}]*"
_ENDS = r"^[\s\x{3000}]+|[\s\x{3000}]+$"  # whitespace around a sentence, the ideographic space too
_LINE_BREAK = r"[\s\x{3000}]*[\n\r]+[\s\x{3000}]*"


@kbert_export("kbert.text.split_sentences")
def split_sentences(texts):
    """The sentences of each text (the module's rules), in the graph.

    Args:
        texts: a string tensor (or list of strings) [batch].

    Returns:
        A tf.string RaggedTensor [batch, (sentences)], at least one sentence per text.

    Examples:
        >>> from kbert.text.sentences import split_sentences
        >>> sentences = split_sentences(["Mr. Smith came. He left!", "吾輩は猫である。名前はまだ無い。"])
        >>> [[s.decode() for s in text] for text in sentences.to_list()]
        [['Mr. Smith came.', 'He left!'], ['吾輩は猫である。', '名前はまだ無い。']]
    """
    import tensorflow as tf

    texts = tf.reshape(tf.convert_to_tensor(texts, tf.string), [-1])
    marked = tf.strings.regex_replace(texts, _MARKERS, " ")
    marked = tf.strings.regex_replace(marked, _ABBREVIATION, "\\1" + _KEEP)
    marked = tf.strings.regex_replace(marked, _LATIN_END, "\\1" + _SPLIT)
    marked = tf.strings.regex_replace(marked, _CJK_END, "\\1" + _SPLIT)
    marked = tf.strings.regex_replace(marked, _LINE_BREAK, _SPLIT)
    marked = tf.strings.regex_replace(marked, _KEEP, " ")
    parts = tf.strings.split(marked, _SPLIT)
    parts = parts.with_flat_values(tf.strings.regex_replace(parts.flat_values, _ENDS, ""))
    nonempty = parts.with_flat_values(tf.strings.length(parts.flat_values) > 0)
    # a text without any sentence keeps its first (empty) piece
    none = tf.logical_not(tf.reduce_any(nonempty, axis=1))
    first = tf.equal(tf.ragged.range(parts.row_lengths()).flat_values, 0)
    keep = nonempty.flat_values | (first & tf.gather(none, parts.value_rowids()))
    return tf.ragged.boolean_mask(parts, parts.with_flat_values(keep))
