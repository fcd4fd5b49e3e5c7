"""BertTokenizer: strings -> WordPiece ids [batch, words, pieces], in the TensorFlow graph.

The rules are google-research/bert's ``FullTokenizer`` (see ``kbert.text.normalize``). The
work is split between our in-graph cleaning (``normalize``) and tensorflow-text's
``FastWordpieceTokenizer`` (splitting on whitespace, punctuation and CJK ideographs, then
greedy longest-match-first WordPiece; a linear-time C++ kernel, the fastest exact choice
measured: see ``python -m kbert.bench tokenize``).

Two details are added around the tensorflow-text kernel:
  * words: it returns the pieces of a string as one flat list; the word a piece belongs to is
    recovered from the vocabulary (a piece starts a word unless it is a ``##`` continuation);
  * the word-length limit: the original turns a word of more than 200 *characters* into
    ``[UNK]``, tensorflow-text counts *bytes*. We give the kernel a byte limit that no word
    within the character limit can reach (4 bytes per character) and then replace words whose
    pieces add up to more than 200 characters by one ``[UNK]``.
"""

from __future__ import annotations

import os

import tensorflow as tf
import tensorflow_text as tf_text

from kbert.text import vocab as vocab_lib
from kbert.text.registry import asset_path, register_tokenizer
from kbert.text.spec import TokenizerSpec
from kbert.text.inputs import default_shards, entry_graphs
from kbert.text.normalize import normalize, normalize_per_char
from kbert.text.tokenizer_layer import OFFSET_UNITS, TokenizerLayer, group_words

SUFFIX_INDICATOR = "##"
# google-research/bert tokenization.py WordpieceTokenizer(max_input_chars_per_word=200).
MAX_CHARS_PER_WORD = 200
_MAX_UTF8_BYTES_PER_CHAR = 4


@register_tokenizer("wordpiece")
class BertTokenizer(TokenizerLayer):
    """BERT's WordPiece tokenizer as a Keras layer (eager, ``tf.function``, ``tf.data``, SavedModel).

    Args:
      vocab: path to ``vocab.txt`` or a list of tokens (id = position).
      lower_case: True for uncased models (lower-case, strip accents), False for cased ones.
      max_chars_per_word: longer words become ``[UNK]`` (200 as in google-research/bert).

    Calling it on strings of shape ``S`` gives int32 ids of shape ``S + [words, pieces]``
    (a RaggedTensor). ``tokenize_flat`` merges words and pieces, ``tokenize_with_offsets``
    also gives each piece's span in the input.
    """

    @classmethod
    def from_spec(cls, spec: TokenizerSpec, directory=None, **kwargs):
        return cls(os.fspath(asset_path(spec, directory)), lower_case=spec.lower_case, **kwargs)

    def __init__(self, vocab, lower_case=True, max_chars_per_word=MAX_CHARS_PER_WORD, **kwargs):
        super().__init__(**kwargs)
        self.set_vocab(vocab)
        self.lower_case = bool(lower_case)
        self.max_chars_per_word = int(max_chars_per_word)
        if self.max_chars_per_word < 1:
            raise ValueError(f"max_chars_per_word must be >= 1, got {max_chars_per_word}")
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            self.vocab,
            suffix_indicator=SUFFIX_INDICATOR,
            max_bytes_per_word=self.max_chars_per_word * _MAX_UTF8_BYTES_PER_CHAR,
            token_out_type=tf.int32,
            unknown_token=vocab_lib.UNK,
            no_pretokenization=False,
        )
        is_suffix = [t.startswith(SUFFIX_INDICATOR) and len(t) > len(SUFFIX_INDICATOR) for t in self.vocab]
        self._is_suffix = tf.constant(is_suffix, tf.bool)
        self._piece_chars = tf.constant(
            [len(t) - (len(SUFFIX_INDICATOR) if s else 0) for t, s in zip(self.vocab, is_suffix)], tf.int32)
        # Batches are cut into this many slices tokenized in parallel (see inputs.shard_rows);
        # read when a graph is traced (an exported model keeps the value it was traced with).
        self.shards = default_shards()
        self._graphs = entry_graphs(self, self._tokenize_1d, self._tokenize_1d_with_offsets, OFFSET_UNITS)
        self.built = True

    # -- the tokenizer interface (kbert.text.registry) -----------------------------------------
    @property
    def spec(self) -> TokenizerSpec:
        return TokenizerSpec(type=self.tokenizer_type, lower_case=self.lower_case)

    def starts_word(self) -> list:
        """For each id, whether that piece begins a word (all but the ``##`` continuations)."""
        return [not b for b in self._is_suffix.numpy().tolist()]

    # -- tokenization (the entry points: kbert.text.tokenizer_layer) ------------------------------
    def tokenize_with_offsets(self, strings, unit="BYTE"):
        """``(ids, starts, ends)``, each ``strings.shape + [words, pieces]``.

        ``[starts, ends)`` is the span of the input that a piece comes from: byte offsets into
        the UTF-8 input (``unit="BYTE"``, as tensorflow-text) or code point offsets
        (``unit="UTF8_CHAR"``, i.e. Python ``str`` indices of ``input.decode("utf-8",
        "replace")``). Where normalization turned one character into several (a Hangul
        syllable into jamo) and WordPiece split them, each of those pieces gets the whole
        character's span.
        """
        return super().tokenize_with_offsets(strings, unit)

    def _tokenize_1d(self, strings):
        pieces = self._wordpiece.tokenize(normalize(strings, self.lower_case))
        return self._words(pieces)[0]

    def _tokenize_1d_with_offsets(self, strings, unit):
        text = normalize(strings, self.lower_case)
        pieces, norm_starts, norm_ends = self._wordpiece.tokenize_with_offsets(text)
        char_lengths, char_starts, char_ends = normalize_per_char(strings, self.lower_case)
        # Map byte positions of the normalized text back to input characters. Every input
        # character occupies [cum, cum + len) of the concatenation of all normalized strings;
        # the last character with cum <= position holds the byte (empty ones are skipped).
        lengths = tf.cast(char_lengths.flat_values, tf.int64)
        cum = tf.cumsum(lengths, exclusive=True)
        row_base = tf.cumsum(tf.reduce_sum(tf.cast(char_lengths, tf.int64), axis=1), exclusive=True)
        piece_rows = pieces.value_rowids()
        base = tf.gather(row_base, piece_rows)
        lo = tf.gather(char_lengths.row_starts(), piece_rows)
        hi = tf.gather(char_lengths.row_limits(), piece_rows) - 1

        def char_index(positions):
            found = tf.searchsorted(cum[tf.newaxis], (positions + base)[tf.newaxis],
                                    side="right", out_type=tf.int64)[0] - 1
            return tf.minimum(tf.maximum(found, lo), hi)

        first = char_index(norm_starts.flat_values)
        last = char_index(norm_ends.flat_values - 1)
        if unit == "BYTE":
            starts = tf.gather(char_starts.flat_values, first)
            ends = tf.gather(char_ends.flat_values, last)
        else:
            starts, ends = first - lo, last - lo + 1
        return self._words(pieces, tf.cast(starts, tf.int64), tf.cast(ends, tf.int64))

    def _words(self, pieces, starts=None, ends=None):
        """Flat pieces [n, pieces] -> [n, words, pieces]; over-long words -> one [UNK]."""
        flat = pieces.flat_values
        begins_word = tf.logical_not(tf.gather(self._is_suffix, flat))
        word_starts = tf.where(begins_word)[:, 0]
        words_per_row = tf.math.unsorted_segment_sum(
            tf.cast(begins_word, tf.int64), pieces.value_rowids(), pieces.nrows())
        piece_word = tf.cumsum(tf.cast(begins_word, tf.int64)) - 1
        num_words = tf.shape(word_starts, out_type=tf.int64)[0]
        word_chars = tf.math.unsorted_segment_sum(tf.gather(self._piece_chars, flat), piece_word, num_words)
        too_long = word_chars > self.max_chars_per_word
        values = (flat,) if starts is None else (flat, starts, ends)

        def shorten():
            # Keep the first piece of an over-long word: [UNK], spanning the whole word.
            long_piece = tf.gather(too_long, piece_word)
            keep = tf.logical_or(tf.logical_not(long_piece), begins_word)
            ids = tf.where(long_piece, self._special_ids["unknown_id"], flat)
            kept = [tf.boolean_mask(ids, keep)]
            if starts is not None:
                word_limits = tf.concat([word_starts[1:], tf.shape(flat, out_type=tf.int64)], axis=0)
                word_ends = tf.gather(ends, word_limits - 1)
                long_ends = tf.where(long_piece, tf.gather(word_ends, piece_word), ends)
                kept += [tf.boolean_mask(starts, keep), tf.boolean_mask(long_ends, keep)]
            kept_starts = tf.where(tf.boolean_mask(begins_word, keep))[:, 0]
            return (*kept, kept_starts)

        # Words over the limit are rare: the common case skips the masking entirely.
        *values, value_word_starts = tf.cond(
            tf.reduce_any(too_long), shorten, lambda: (*values, word_starts))
        return group_words(values, value_word_starts, words_per_row)

    def get_config(self):
        config = super().get_config()
        config.update(vocab=list(self.vocab), lower_case=self.lower_case,
                      max_chars_per_word=self.max_chars_per_word)
        return config
