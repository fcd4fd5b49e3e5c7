"""Dynamic masked-LM masking in the graph (tensorflow-text's ``mask_language_model``).

15% of the non-special tokens (``selection_rate``), at most ``max_predictions`` per sequence,
are selected; of those 80% become [MASK], 10% a random token, 10% stay unchanged (the rates are
arguments: the paper's ablation table varies them). With ``whole_word=True`` whole words are
selected: every piece of a word is masked together. The words are the tokenizer's when the packed
inputs carry ``word_starts`` (``preprocessor(texts, word_starts=True)``: MeCab words for the
``mecab-*`` types, whose ``mecab-character`` pieces carry no ``##``), else a token and the ``##``
pieces after it (``starts_word``). As in google-research/bert's ``create_pretraining_data.py``, the
budget is counted in tokens, ``round(15% of the sequence)`` (at most ``max_predictions``): words are
taken in random order and a word that no longer fits is skipped, so no word is cut.

Works on packed inputs (``BertPacker``'s output) so that packing has one implementation.
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

from kbert.errors import OptionsError


class MlmMasker:
    def __init__(
        self,
        vocabulary,
        max_predictions=20,
        selection_rate=0.15,
        mask_token_rate=0.8,
        random_token_rate=0.1,
        whole_word=False,
        mask_token="[MASK]",
        unselectable_tokens=("[CLS]", "[SEP]", "[PAD]"),  # the original masks [UNK] too
        starts_word=None,
    ):
        """``vocabulary``: the list of tokens (id = index); ``starts_word``: for each id, whether that
        piece begins a word (whole-word masking; default: all but WordPiece's ``##`` pieces)."""
        if not 0.0 < selection_rate <= 1.0:
            raise OptionsError(f"selection_rate must be in (0, 1], got {selection_rate}", option="mask_rate",
                               value=selection_rate)
        if mask_token_rate < 0 or random_token_rate < 0 or mask_token_rate + random_token_rate > 1:
            raise OptionsError(
                f"mask_token_rate ({mask_token_rate}) + random_token_rate ({random_token_rate}) must be in [0, 1]",
                option="mask_token_rate")
        if max_predictions < 1:
            raise OptionsError(f"max_predictions must be >= 1, got {max_predictions}", option="max_predictions",
                               value=max_predictions)
        vocab = list(vocabulary)
        index = {t: i for i, t in enumerate(vocab)}
        if mask_token not in index:
            raise OptionsError(f"the vocabulary has no {mask_token} token")
        self.vocab_size = len(vocab)
        self.max_predictions = int(max_predictions)
        self.whole_word = whole_word
        unselectable = [index[t] for t in unselectable_tokens if t in index]
        self._selector = _OriginalCountSelector(
            max_selections_per_batch=self.max_predictions,
            selection_rate=selection_rate,
            unselectable_ids=unselectable,
        )
        self._chooser = tf_text.MaskValuesChooser(
            self.vocab_size, index[mask_token], mask_token_rate=mask_token_rate,
            random_token_rate=random_token_rate,
        )
        if starts_word is None:  # a token starts a word unless it is a "##" continuation piece
            starts_word = [not t.startswith("##") for t in vocab]
        if len(starts_word) != len(vocab):
            raise ValueError(f"starts_word has {len(starts_word)} entries for {len(vocab)} tokens")
        self._word_start = tf.constant([bool(b) for b in starts_word], tf.bool)

    @classmethod
    def from_tokenizer(cls, tokenizer, **kwargs):
        """A masker for any tokenizer type: its vocabulary, special tokens and word starts."""
        ids = tokenizer.special_token_ids
        kwargs.setdefault("mask_token", tokenizer.id_to_token(ids["mask_id"]))
        kwargs.setdefault("unselectable_tokens", tuple(tokenizer.id_to_token(ids[k]) for k in (
            "start_of_sequence_id", "end_of_segment_id", "padding_id")))
        if hasattr(tokenizer, "starts_word"):  # else the WordPiece "##" rule (types without the method)
            kwargs.setdefault("starts_word", tokenizer.starts_word())
        return cls(tokenizer.get_vocabulary(), **kwargs)

    def __call__(self, packed: dict) -> dict:
        """Adds ``masked_lm_positions``/``_ids``/``_weights`` and masks ``input_word_ids``."""
        ids = packed["input_word_ids"]
        seq_length = tf.shape(ids)[1]
        lengths = tf.reduce_sum(tf.cast(packed["input_mask"], tf.int32), axis=1)
        tokens = tf.RaggedTensor.from_tensor(ids, lengths=lengths)
        if self.whole_word:
            if "word_starts" in packed:  # the tokenizer's words, carried through packing
                starts = tf.RaggedTensor.from_tensor(tf.not_equal(packed["word_starts"], 0), lengths=lengths)
                tokens = _words_from_starts(tokens, starts.flat_values)
            else:
                tokens = self._group_words(tokens)
        masked, positions, masked_ids = tf_text.mask_language_model(
            tokens, item_selector=self._selector, mask_values_chooser=self._chooser
        )
        if self.whole_word:
            if masked.ragged_rank > 1:
                masked = masked.merge_dims(1, 2)
            positions, masked_ids = _truncate(positions, masked_ids, self.max_predictions)
        word_ids = masked.to_tensor(default_value=0, shape=[None, None])
        word_ids = tf.pad(word_ids, [[0, 0], [0, seq_length - tf.shape(word_ids)[1]]])
        positions, weights = tf_text.pad_model_inputs(positions, self.max_predictions)
        masked_ids, _ = tf_text.pad_model_inputs(masked_ids, self.max_predictions)
        return {
            **{k: v for k, v in packed.items() if k != "word_starts"},
            "input_word_ids": tf.cast(word_ids, tf.int32),
            "masked_lm_positions": tf.cast(positions, tf.int32),
            "masked_lm_ids": tf.cast(masked_ids, tf.int32),
            "masked_lm_weights": tf.cast(weights, tf.float32),
        }

    def _group_words(self, tokens: tf.RaggedTensor) -> tf.RaggedTensor:
        """[batch, tokens] -> [batch, words, pieces] from the ids (``starts_word``: ``##`` marks)."""
        return _words_from_starts(tokens, tf.gather(self._word_start, tokens.flat_values))


def _words_from_starts(tokens: tf.RaggedTensor, starts) -> tf.RaggedTensor:
    """[batch, tokens] -> [batch, words, pieces]; ``starts``: bool per flat token, True where a word begins."""
    # The first token of each row always starts a word.
    starts = starts | tf.scatter_nd(
        tf.expand_dims(tokens.row_starts(), 1), tf.ones_like(tokens.row_starts(), tf.bool),
        tf.shape(starts, out_type=tf.int64),
    )
    words = tf.RaggedTensor.from_row_starts(tokens.flat_values, tf.where(starts)[:, 0])
    words_per_row = tf.math.segment_sum(tf.cast(starts, tf.int64), tokens.value_rowids())
    words_per_row = tf.pad(words_per_row, [[0, tokens.nrows() - tf.shape(words_per_row, out_type=tf.int64)[0]]])
    return tf.RaggedTensor.from_row_lengths(words, words_per_row)


class _OriginalCountSelector(tf_text.RandomItemSelector):
    """tensorflow-text's RandomItemSelector with the original per-sequence count.

    tensorflow-text selects ``ceil(rate * selectable)`` items per row, which over-masks short
    sequences (16.6% instead of 15% at 64 tokens). google-research/bert selects
    ``min(max_predictions, max(1, round(rate * num_tokens)))`` where ``num_tokens`` counts every
    token, [CLS] and [SEP] included. For whole words ([batch, words, pieces]) that count is of
    tokens too: the words are shuffled and taken in that order while they fit (``fit_in_order``),
    as the original's loop does. Otherwise selection is the library's (``get_selection_mask`` is
    overridden because that is where the count is computed).
    """

    def get_selection_mask(self, input_ids, axis):
        selectable = self.get_selectable(input_ids, axis)
        positions = input_ids.with_flat_values(tf.range(tf.size(input_ids.flat_values)))
        positions = tf.ragged.boolean_mask(positions, selectable)
        positions = positions.merge_dims(1, axis) if axis > 1 else positions
        whole_words = positions.ragged_rank > 1
        # Tokens per sequence (all pieces of all words with whole-word masking).
        num_tokens = input_ids.merge_dims(1, -1).row_lengths() if input_ids.ragged_rank > 1 else input_ids.row_lengths()
        # Python's round() (half to even), as the original.
        num = tf.math.round(tf.cast(num_tokens, tf.float32) * self.selection_rate)
        num = tf.cast(tf.minimum(tf.maximum(num, 1.0), float(self.max_selections_per_batch)), tf.int64)
        if not whole_words:
            num = tf.minimum(num, positions.row_lengths())

        def shuffle_and_trim(x):  # as the library's
            row, top_n = x
            if isinstance(row, tf.RaggedTensor):  # [words, pieces]: all shuffled, chosen below
                return tf.gather(row, self._shuffle_fn(tf.range(row.nrows())))
            return self._shuffle_fn(row)[:top_n]

        # One row at a time: the rows share the shuffle's stateful random kernel, and parallel
        # iterations would draw from it in thread order (other masks for the same seed).
        chosen = tf.map_fn(
            shuffle_and_trim, (positions, num), parallel_iterations=1,
            fn_output_signature=tf.RaggedTensorSpec(ragged_rank=positions.ragged_rank - 1, dtype=positions.dtype),
        )
        if whole_words:  # [batch, words, pieces] in random order: whole words within each row's budget
            chosen = tf.ragged.boolean_mask(chosen, fit_in_order(chosen.with_values(chosen.values.row_lengths()), num))
        flat = tf.cast(chosen.flat_values, tf.int64)
        mask = tf.scatter_nd(tf.expand_dims(flat, -1), tf.ones_like(flat, tf.bool),
                             tf.shape(input_ids.flat_values, out_type=tf.int64))
        result = input_ids.with_flat_values(mask)
        if axis < result.ragged_rank:
            result = tf.reduce_all(result, list(range(result.ragged_rank, axis, -1)))
        return result


def fit_in_order(lengths, budget):
    """The items google-research/bert's whole-word loop takes, for every row at once: going through
    a row's items in order, an item is taken when its length still fits in what is left of the row's
    budget, else skipped. ``lengths``: int RaggedTensor [batch, (items)]; ``budget``: int [batch];
    returns a bool RaggedTensor shaped as ``lengths``.

    A loop over runs, not items: each pass takes, in every row, the longest run of items from the
    row's ``start`` that fit one after another (a cumulative sum), skips the first one that does
    not, and goes on at the next item that fits alone; at most ``max(budget) + 1`` passes (each
    takes a token or more, or ends the row)."""
    lengths = tf.cast(lengths, tf.int64)
    flat, rows, nrows, row_len = lengths.values, lengths.value_rowids(), lengths.nrows(), lengths.row_lengths()
    row_start = tf.gather(lengths.row_starts(), rows)
    position = tf.range(tf.size(flat, out_type=tf.int64)) - row_start
    none = tf.zeros_like(flat)

    def per_item(values):
        return tf.gather(values, rows)

    def first(condition):  # per row: the first position where ``condition`` holds, else the row's length
        return tf.minimum(tf.math.unsorted_segment_min(tf.where(condition, position, per_item(row_len)), rows, nrows),
                          row_len)  # (an empty row's minimum is the largest int64)

    def take_run(start, left, taken):
        rest = position >= per_item(start)
        counted = tf.where(rest, flat, none)
        cumulative = tf.cumsum(counted) - tf.gather(tf.cumsum(counted, exclusive=True), row_start)  # within the row
        stop = first(rest & (cumulative > per_item(left)))
        run = rest & (position < per_item(stop))
        left = left - tf.math.unsorted_segment_sum(tf.where(run, flat, none), rows, nrows)
        return first((position > per_item(stop)) & (flat <= per_item(left))), left, taken | run

    budget = tf.cast(budget, tf.int64)
    start = first(flat <= per_item(budget))
    _, _, taken = tf.while_loop(lambda start, left, taken: tf.reduce_any(start < row_len), take_run,
                                (start, budget, tf.zeros_like(flat, tf.bool)))
    return lengths.with_values(taken)


def _truncate(positions, ids, limit):
    """At most ``limit`` predictions a row (whole words are chosen within it already: a guard)."""
    return positions[:, :limit], ids[:, :limit]
