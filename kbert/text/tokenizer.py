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

Models converted from Hugging Face folders carry their tokenizer's options (``strip_accents``,
``tokenize_chinese_chars``, ``max_chars_per_word``, ``rules``: ``kbert.convert.tokenizer_source``).
Under their rules a special token written in the text is cut out first and kept as one piece. Where the
kernel's own word splitting would be wrong (CJK ideographs that must stay inside words; a cased
tokenizer under transformers' rules, whose ``never_split`` keeps a word that *becomes* a special token
after cleaning) words are split here with regular expressions and the kernel only does WordPiece.
"""

from __future__ import annotations

import os
import re

import tensorflow as tf
import tensorflow_text as tf_text

from kbert.errors import DataError, OptionsError
from kbert.text import vocab as vocab_lib
from kbert.text.registry import asset_path, register_tokenizer
from kbert.text.spec import TokenizerSpec, TokenizerSpecError
from kbert.text.inputs import default_shards, entry_graphs
from kbert.text.normalize import GOOGLE, TRANSFORMERS, check_rules, normalize, normalize_per_char
from kbert.text.tokenizer_layer import OFFSET_UNITS, TokenizerLayer, group_words
from kbert.api_export import kbert_export

SUFFIX_INDICATOR = "##"
# google-research/bert tokenization.py WordpieceTokenizer(max_input_chars_per_word=200).
MAX_CHARS_PER_WORD = 200
_MAX_UTF8_BYTES_PER_CHAR = 4
# The options a "wordpiece" TokenizerSpec may carry (kbert.convert.tokenizer_source writes them).
SPEC_OPTIONS = ("strip_accents", "tokenize_chinese_chars", "max_chars_per_word", "rules")
# BasicTokenizer's CJK ideograph ranges (_is_chinese_char), split into one-character words.
CJK_PATTERN = (r"[\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}"
               r"\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}]")
# After cleaning: what Python's str.split() and Rust's char::is_whitespace split words on.
WHITESPACE_PATTERN = r"[\t\n\r\p{Zs}\x{2028}\x{2029}]+"
# _is_punctuation: ASCII non-alphanumerics and Unicode P*.
PUNCTUATION_PATTERN = r"[!-/:-@\[-`{-~\p{P}]"


@kbert_export("kbert.text.BertTokenizer")
@register_tokenizer("wordpiece")
class BertTokenizer(TokenizerLayer):
    """BERT's WordPiece tokenizer as a Keras layer (eager, ``tf.function``, ``tf.data``, SavedModel).

    Args:
      vocab: path to ``vocab.txt`` or a list of tokens (id = position).
      lower_case: True for uncased models (lower-case, strip accents), False for cased ones.
      max_chars_per_word: longer words become ``[UNK]`` (200 as in google-research/bert; 100 in
        Hugging Face's tokenizers).
      strip_accents: None (as ``lower_case``), True or False: NFD and drop nonspacing marks.
      tokenize_chinese_chars: False leaves CJK ideographs inside words instead of splitting each off.
      rules: ``"google"`` (google-research/bert), ``"transformers"`` (transformers' Python
        ``BertTokenizer``) or ``"tokenizers"`` (a ``tokenizer.json``): see ``kbert.text.normalize``. With
        either Hugging Face rule a special token (``[CLS] [SEP] [MASK] [PAD] [UNK]``) written in the text
        is kept whole, as their tokenizers' added-token split does.

    Calling it on strings of shape ``S`` gives int32 ids of shape ``S + [words, pieces]``
    (a RaggedTensor). ``tokenize_flat`` merges words and pieces, ``tokenize_with_offsets``
    also gives each piece's span in the input.

    Examples:
        >>> import kbert
        >>> tokenizer = kbert.text.BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "fox", "##es"])
        >>> tokenizer.tokenize_flat(["The foxes"]).to_list()
        [[5, 6, 7]]
    """

    @classmethod
    def from_spec(cls, spec: TokenizerSpec, directory=None, **kwargs):
        unknown = sorted(set(spec.options) - set(SPEC_OPTIONS))
        if unknown:
            raise TokenizerSpecError(f"tokenizer spec: {spec.type!r} has no option(s) {', '.join(unknown)} "
                                     f"(known: {', '.join(SPEC_OPTIONS)})")
        try:
            return cls(os.fspath(asset_path(spec, directory)), lower_case=spec.lower_case,
                       **{**spec.options, **kwargs})
        except (vocab_lib.VocabError, DataError):
            raise
        except (TypeError, ValueError) as e:  # an option's value
            raise TokenizerSpecError(f"tokenizer spec: {e}") from None

    def __init__(self, vocab, lower_case=True, max_chars_per_word=MAX_CHARS_PER_WORD, strip_accents=None,
                 tokenize_chinese_chars=True, rules=GOOGLE, **kwargs):
        super().__init__(**kwargs)
        self.set_vocab(vocab)
        self.lower_case = bool(lower_case)
        self.strip_accents = None if strip_accents is None else _flag("strip_accents", strip_accents)
        self.tokenize_chinese_chars = _flag("tokenize_chinese_chars", tokenize_chinese_chars)
        self.rules = check_rules(rules)
        if isinstance(max_chars_per_word, bool) or not isinstance(max_chars_per_word, int) or max_chars_per_word < 1:
            raise OptionsError(f"max_chars_per_word must be an integer >= 1, got {max_chars_per_word!r}")
        self.max_chars_per_word = max_chars_per_word
        self._strip = self.lower_case if self.strip_accents is None else self.strip_accents
        # The kernel's own pre-tokenization splits on whitespace, punctuation and CJK ideographs: right
        # unless CJK must stay inside words, or (transformers, cased) a special token can appear only
        # after cleaning (BasicTokenizer's never_split then keeps it whole). Otherwise words are split
        # here and the kernel only does WordPiece.
        self._own_split = not self.tokenize_chinese_chars or (self.rules == TRANSFORMERS and not self.lower_case)
        wordpiece_args = dict(suffix_indicator=SUFFIX_INDICATOR,
                              max_bytes_per_word=self.max_chars_per_word * _MAX_UTF8_BYTES_PER_CHAR,
                              token_out_type=tf.int32, unknown_token=vocab_lib.UNK)
        self._wordpiece = tf_text.FastWordpieceTokenizer(self.vocab, no_pretokenization=False, **wordpiece_args)
        if self._own_split:
            self._word_wordpiece = tf_text.FastWordpieceTokenizer(self.vocab, no_pretokenization=True,
                                                                  **wordpiece_args)
        # Special tokens written in the text (Hugging Face rules): kept whole, never lower-cased.
        specials = [vocab_lib.SPECIAL_TOKEN_NAMES[k] for k in sorted(vocab_lib.SPECIAL_TOKEN_NAMES)]
        self._specials_pattern = None if self.rules == GOOGLE else "|".join(re.escape(t) for t in specials)
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
    def options(self) -> dict:
        """The spec options that differ from google-research/bert's behaviour."""
        options = {}
        if self.strip_accents is not None and self.strip_accents != self.lower_case:
            options["strip_accents"] = self.strip_accents
        if not self.tokenize_chinese_chars:
            options["tokenize_chinese_chars"] = False
        if self.max_chars_per_word != MAX_CHARS_PER_WORD:
            options["max_chars_per_word"] = self.max_chars_per_word
        if self.rules != GOOGLE:
            options["rules"] = self.rules
        return options

    @property
    def spec(self) -> TokenizerSpec:
        return TokenizerSpec(type=self.tokenizer_type, lower_case=self.lower_case, options=self.options)

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
        pieces, _, _ = self._with_specials(strings, None, self._own_split)
        return self._words(pieces)[0]

    def _tokenize_1d_with_offsets(self, strings, unit):
        pieces, starts, ends = self._with_specials(strings, unit, False)
        if self._own_split:
            # Offsets come from the kernel's word splitting; where it would give other ids than the
            # exact splitting (CJK with tokenize_chinese_chars=False, a special token made by cleaning),
            # the call fails rather than return offsets of other pieces.
            exact, _, _ = self._with_specials(strings, None, True)
            same_rows = tf.reduce_all(tf.equal(exact.row_splits, pieces.row_splits))
            same = tf.cond(same_rows, lambda: tf.reduce_all(tf.equal(exact.flat_values, pieces.flat_values)),
                           lambda: tf.constant(False))
            check = tf.debugging.Assert(same, [
                "tokenize_with_offsets: offsets are not available for this text with tokenize_chinese_chars=False "
                "or a cased tokenizer under transformers' rules (its words differ from the offset kernel's)"])
            with tf.control_dependencies([check]):
                starts = tf.identity(starts)
        return self._words(pieces, starts, ends)

    def _with_specials(self, strings, unit, own_split):
        """``(pieces [n, pieces], starts, ends)`` (flat offsets, None without ``unit``): under Hugging Face
        rules a special token written in the text is one piece, the text around it is tokenized apart."""
        if self._specials_pattern is None:
            return self._pieces(strings, unit, own_split)
        pattern = self._specials_pattern
        # tensorflow-text's regex_split ends a string at its first NUL; U+0001 is removed by cleaning as
        # NUL is, and has the same length.
        strings = tf.strings.regex_replace(strings, "\x00", "\x01")
        chunks, chunk_starts, _ = tf_text.regex_split_with_offsets(strings, pattern, pattern)
        flat = chunks.flat_values
        special = tf.strings.regex_full_match(flat, pattern)
        pieces, starts, ends = self._pieces(tf.where(special, "", flat), unit, own_split)
        # A special chunk is the token itself: its id, spanning the chunk.
        special_ids = tf.zeros(tf.shape(flat), tf.int32)
        for token_id in sorted(set(self._special_ids.values())):
            special_ids = tf.where(tf.equal(flat, self.vocab[token_id]), token_id, special_ids)
        count = tf.cast(special, tf.int64)
        whole = tf.RaggedTensor.from_row_lengths(tf.boolean_mask(special_ids, special), count, validate=False)
        ids = tf.concat([pieces, whole], axis=1)
        if unit is not None:
            if unit == "BYTE":
                base = chunk_starts.flat_values
            else:
                chars = tf.strings.unicode_split(flat, "UTF-8", errors="replace").row_lengths()
                cum = tf.cumsum(chars, exclusive=True)
                base = cum - tf.gather(cum, tf.gather(chunks.row_starts(), chunks.value_rowids()))
            piece_base = tf.gather(base, pieces.value_rowids())
            length = tf.strings.length(flat, unit="BYTE")
            special_starts = tf.boolean_mask(base, special)
            special_ends = special_starts + tf.cast(tf.boolean_mask(length, special), tf.int64)

            def place(values, special_values):
                return tf.concat([pieces.with_flat_values(values),
                                  whole.with_flat_values(special_values)], axis=1)

            starts = place(starts + piece_base, special_starts)
            ends = place(ends + piece_base, special_ends)
            starts = tf.RaggedTensor.from_row_splits(starts, chunks.row_splits, validate=False).merge_dims(1, 2)
            ends = tf.RaggedTensor.from_row_splits(ends, chunks.row_splits, validate=False).merge_dims(1, 2)
            starts, ends = starts.flat_values, ends.flat_values
        ids = tf.RaggedTensor.from_row_splits(ids, chunks.row_splits, validate=False).merge_dims(1, 2)
        return ids, starts, ends

    def _normalize(self, strings):
        return normalize(strings, self.lower_case, self._strip, self.rules)

    def _pieces(self, strings, unit, own_split):
        """``(pieces [n, pieces], starts, ends)`` of texts without special tokens (offsets: see above)."""
        if own_split:
            return self._split_pieces(strings), None, None
        if unit is None:
            return self._wordpiece.tokenize(self._normalize(strings)), None, None
        return self._kernel_offsets(strings, unit)

    def _split_pieces(self, strings):
        """BasicTokenizer's word splitting done here, WordPiece by the kernel: [n, pieces]."""
        text = self._normalize(strings)
        if self.tokenize_chinese_chars:
            text = tf.strings.regex_replace(text, CJK_PATTERN, r" \0 ")
        words = tf_text.regex_split(text, WHITESPACE_PATTERN)
        flat = words.flat_values
        if self.rules == TRANSFORMERS and not self.lower_case:
            # BasicTokenizer's never_split holds the special tokens: a word that is one after cleaning
            # and accent stripping is not split at punctuation (its WordPiece is itself).
            whole = tf.strings.regex_full_match(flat, self._specials_pattern)
        else:
            whole = tf.zeros(tf.shape(flat), tf.bool)
        parts = tf_text.regex_split(tf.where(whole, "", flat), PUNCTUATION_PATTERN, PUNCTUATION_PATTERN)
        kept = tf.RaggedTensor.from_row_lengths(tf.boolean_mask(flat, whole), tf.cast(whole, tf.int64),
                                                validate=False)
        parts = tf.concat([parts, kept], axis=1)
        pieces = self._word_wordpiece.tokenize(parts.flat_values)
        pieces = tf.RaggedTensor.from_row_splits(pieces, parts.row_splits, validate=False)
        pieces = tf.RaggedTensor.from_row_splits(pieces, words.row_splits, validate=False)
        return pieces.merge_dims(1, 3)

    def _kernel_offsets(self, strings, unit):
        text = self._normalize(strings)
        pieces, norm_starts, norm_ends = self._wordpiece.tokenize_with_offsets(text)
        char_lengths, char_starts, char_ends = normalize_per_char(strings, self.lower_case, self._strip, self.rules)
        if self.rules == TRANSFORMERS and not self._strip:
            # NFC may join characters (e + combining acute -> é): then the text is not the concatenation
            # of its characters' normalizations and the spans below would be shifted; fail instead.
            joined = tf.reduce_all(tf.equal(tf.reduce_sum(char_lengths, axis=1),
                                            tf.cast(tf.strings.length(text), char_lengths.dtype)))
            check = tf.debugging.Assert(joined, [
                "tokenize_with_offsets: offsets are not available for text that NFC normalization changes "
                "(a letter followed by a combining mark) under transformers' rules without accent stripping"])
            with tf.control_dependencies([check]):
                norm_starts = tf.identity(norm_starts)
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
        return pieces, tf.cast(starts, tf.int64), tf.cast(ends, tf.int64)

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
                      max_chars_per_word=self.max_chars_per_word, strip_accents=self.strip_accents,
                      tokenize_chinese_chars=self.tokenize_chinese_chars, rules=self.rules)
        return config


def _flag(name, value) -> bool:
    if not isinstance(value, bool):
        raise OptionsError(f"{name} must be true or false, got {value!r}")
    return value
