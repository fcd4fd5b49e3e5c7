"""Span QA's answers in WORD units for the words-in exports (``mecab-*`` tokenizers); the word layout
helpers that tagging shares are in kbert.tasks.core.words_inputs.

A words-in export (kbert.tasks.core.words_inputs) is fed MeCab surfaces, string [batch, words] with
rows padded by "" at the end, and never sees the raw text; it cannot answer with character offsets
into that text as the raw-text exports do. It answers with indices into the request's words
instead (the client has the words and, from fugashi, where each word is in its text), and with
texts made of the words joined by "" (Japanese writes no spaces between words; spaces the raw text
had, e.g. inside an English phrase, are not in the words).

One implementation with the raw-text exports: the row's words joined by "" (its *word text*) is the
text that kbert.tasks.span_qa.graph's windows and answer selection run on. Each piece gets its
span in the word text from the words' lengths and the pieces' lengths (the tokenizer's own
``piece_lengths``: WordPiece's ``##`` is not text; a word of one piece — ``[UNK]``, a special token
such as JSQuAD's ``[SEP]`` — spans the whole word, as ``tokenize_with_offsets`` gives in Python).
An offset in the word text then maps to (word index, character in that word) through the words'
starts. A Python-path answer cut at the same pieces of the raw text is the same answer
(tests/tasks/span_qa/test_words_answers.py); only ties in the n-best's distinct texts can differ where
two spans' raw texts differ by what NFKC or MeCab removed (a space, a full-width form), which
changes the n-best ``score``, never the chosen answer.
"""

from __future__ import annotations

import tensorflow as tf

from kbert.tasks.span_qa.graph import build_pieces_answer_fn
from kbert.tasks.core.words_inputs import check_words, join_words, word_layout

WORDS_ANSWER_KEYS = ("answer_text", "answer_start_word", "answer_end_word", "answer_start_in_word",
                     "answer_end_in_word", "score", "null_score_diff")


def _piece_length_tables(tokenizer):
    """Characters of the word text that each id covers as a word's first piece and as a later one
    (the tokenizer's Python rule ``piece_lengths``, evaluated once per id)."""
    ids = range(tokenizer.vocab_size)
    first = [tokenizer.piece_lengths([i])[0] for i in ids]
    later = [max(tokenizer.piece_lengths([0, i])[1], 0) for i in ids]
    return tf.constant(first, tf.int32), tf.constant(later, tf.int32)


def piece_spans(tokenizer, words, layout, tables):
    """``(ids, starts, ends)`` [batch, (pieces)]: the pieces of the row's words and their spans in
    its word text (int64, as ``tokenize_with_offsets`` gives them)."""
    ids = tokenizer.tokenize(join_words(words), pre_tokenized=True)  # [batch, (words), (pieces)]
    tf.debugging.assert_equal(ids.row_lengths(), tf.cast(layout["column"].row_lengths(), ids.row_lengths().dtype),
                              message="the tokenizer's words are not the request's words")
    per_word = ids.values
    piece_word = per_word.value_rowids()
    k = tf.ragged.range(per_word.row_lengths()).flat_values  # piece index in its word
    flat_ids = per_word.flat_values
    word_length = tf.boolean_mask(layout["lengths"], layout["nonempty"])
    single = tf.gather(per_word.row_lengths(), piece_word) == 1
    length = tf.where(single, tf.gather(word_length, piece_word),
                      tf.where(k == 0, tf.gather(tables[0], flat_ids), tf.gather(tables[1], flat_ids)))
    length = tf.cast(length, tf.int64)
    before = tf.cumsum(length, exclusive=True)
    in_word = before - tf.gather(before, tf.gather(per_word.row_starts(), piece_word))
    start = tf.gather(tf.cast(tf.boolean_mask(layout["starts"], layout["nonempty"]), tf.int64), piece_word) + in_word
    flat = ids.merge_dims(1, 2)
    return flat, flat.with_flat_values(start), flat.with_flat_values(start + length)


def _word_at(layout, offset):
    """(column, character in that word) of ``offset`` [batch] in the word text; -1, -1 where < 0."""
    starts = layout["starts"]
    column = tf.searchsorted(starts, tf.maximum(offset, 0)[:, tf.newaxis], side="right")[:, 0] - 1
    column = tf.maximum(column, 0)  # gathered from one more column: rows of no words gather too
    in_word = offset - tf.gather(tf.pad(starts, [[0, 0], [0, 1]]), column, batch_dims=1)
    none = offset < 0
    return tf.where(none, -1, column), tf.where(none, -1, in_word)


def build_words_answer_fn(model):
    """``fn(question_words, context_words)`` (string [batch, words]) for a SpanQuestionAnswerer with
    a words-in tokenizer. Returns WORDS_ANSWER_KEYS, each [batch]:
      answer_text           the answer: its words joined with "" ("" for no answer)
      answer_start_word     index of the answer's first word in the row's context_words (-1: none)
      answer_end_word       index of its last word, inclusive (-1: none)
      answer_start_in_word  characters of the first word before the answer (0 unless the answer
                            starts inside a word, at a WordPiece piece; -1: none)
      answer_end_in_word    characters of the last word up to the answer's end (that word's
                            length unless it ends inside the word; -1: none)
      score, null_score_diff  as kbert.tasks.span_qa.graph.build_answer_fn
    """
    tokenizer = model.tokenizer
    answer_pieces = build_pieces_answer_fn(model)
    tables = _piece_length_tables(tokenizer)

    @tf.autograph.experimental.do_not_convert
    def answer_fn(question_words, context_words):
        question_words = check_words(question_words, "question_words")
        context_words = check_words(context_words, "context_words")
        tf.debugging.assert_equal(tf.shape(question_words)[0], tf.shape(context_words)[0],
                                  message="as many questions as contexts are needed")
        query = tokenizer.tokenize_flat(join_words(question_words), pre_tokenized=True)
        layout = word_layout(context_words)
        pieces, starts, ends = piece_spans(tokenizer, context_words, layout, tables)
        out = answer_pieces(query, pieces, starts, ends, layout["text"])
        start_word, start_in = _word_at(layout, out["answer_start"])
        end_word, end_last = _word_at(layout, out["answer_end"] - 1)  # the answer's last character
        return {"answer_text": out["answer_text"], "answer_start_word": start_word, "answer_end_word": end_word,
                "answer_start_in_word": start_in, "answer_end_in_word": tf.where(end_word < 0, -1, end_last + 1),
                "score": out["score"], "null_score_diff": out["null_score_diff"]}

    return answer_fn
