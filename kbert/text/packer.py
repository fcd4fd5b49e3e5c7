"""BertPacker: tokenized segments -> ``input_word_ids``, ``input_mask``, ``input_type_ids``.

``[CLS] A [SEP]``, ``[CLS] A [SEP] B [SEP]``, ... truncated to ``seq_length`` and padded: the
tensors of tensorflow-text's ``combine_segments`` + ``pad_model_inputs`` (the ops TF Hub's BERT
preprocessors are built from), written as one scatter (``_combine_and_pad`` says why).

Truncation (``seq_length - num_segments - 1`` WordPiece tokens are kept in all):
  * ``round_robin`` (default, as TF Hub): segments take one token each in turn until the budget
    is spent. For two segments this is google-research/bert's ``_truncate_seq_pair`` (pop from
    the longer one, from B on ties): both end with the shorter segment whole if it fits in half
    the budget, otherwise ``ceil(budget/2)`` tokens of A and ``floor(budget/2)`` of B.
  * ``waterfall``: the first segments keep all they can, the last ones are cut first.

A segment keeps its first tokens, as fine-tuning does. ``random_cut=True`` (pre-training data)
keeps the same number from a random place instead: google-research/bert's ``truncate_seq_pair``
in ``create_pretraining_data.py`` deletes each cut token from the front or the back by a fair coin,
so that neither end of a text is favoured.
"""

from __future__ import annotations

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from kbert import compat
from kbert.errors import OptionsError
from kbert.text.inputs import Untracked
from kbert.api_export import kbert_export

TRUNCATORS = ("round_robin", "waterfall")
OUTPUT_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


@kbert_export("kbert.text.BertPacker")
class BertPacker(keras.layers.Layer):
    """Packs a list of tokenized segments into BERT's three int32 [batch, seq_length] inputs.

    Args:
      seq_length: default total length, special tokens included.
      start_of_sequence_id, end_of_segment_id, padding_id: the ids of [CLS], [SEP], [PAD]
        (see ``BertTokenizer.special_token_ids``).
      truncator: "round_robin" or "waterfall".

    ``call(segments, seq_length=None, word_starts=False, random_cut=False)``: ``segments`` is one RaggedTensor or a
    list of them, each [batch, words, pieces] or [batch, tokens] of integer ids; ``seq_length``
    overrides the default for this call (a Python int or a scalar int tensor). With
    ``word_starts`` the output also has ``word_starts`` (int32 [batch, seq_length]): 1 where a token
    begins a word (the first piece of each word of a [batch, words, pieces] segment, every token of
    a [batch, tokens] one, [CLS] and [SEP]), 0 for the other pieces and padding. Whole-word masking
    reads it where the ids alone cannot tell (MeCab words of single characters, mecab-character).
    ``random_cut``: a segment that is cut loses tokens at both ends, each by a fair coin (the module
    docstring), instead of at its end.

    Examples:
        >>> import tensorflow as tf
        >>> import kbert
        >>> packer = kbert.text.BertPacker(6, start_of_sequence_id=2, end_of_segment_id=3, padding_id=0)
        >>> packed = packer([tf.ragged.constant([[7, 8]]), tf.ragged.constant([[9]])])
        >>> packed["input_word_ids"].numpy().tolist(), packed["input_type_ids"].numpy().tolist()
        ([[2, 7, 8, 3, 9, 3]], [[0, 0, 0, 0, 1, 1]])
    """

    def __init__(self, seq_length, start_of_sequence_id, end_of_segment_id, padding_id,
                 truncator="round_robin", **kwargs):
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        compat.accept_raw_call_inputs(self)
        if truncator not in TRUNCATORS:
            raise OptionsError(f"truncator must be one of {TRUNCATORS}, got {truncator!r}",
                               option="truncator", value=truncator)
        self.seq_length = _check_seq_length(seq_length, 1)
        self.start_of_sequence_id = int(start_of_sequence_id)
        self.end_of_segment_id = int(end_of_segment_id)
        self.padding_id = int(padding_id)
        self.truncator = truncator
        # Eager calls run as one graph (traced per segment count and seq_length) instead of
        # op by op; inside tf.function and tf.data it is inlined.
        self._graphs = Untracked(pack=tf.function(self._pack, reduce_retracing=True, autograph=False))
        self.built = True

    def call(self, segments, seq_length=None, word_starts=False, random_cut=False):
        segments = _as_segment_list(segments)
        if seq_length is None:
            seq_length = self.seq_length
        if isinstance(seq_length, (tf.Tensor, tf.Variable)):
            seq_length = tf.cast(tf.reshape(seq_length, []), tf.int32)
        seq_length = _check_seq_length(seq_length, len(segments))
        starts = [_word_start_flags(s) for s in segments] if word_starts else None
        return self._graphs.pack([_merge_words(s) for s in segments], seq_length, starts, bool(random_cut))

    def _pack(self, segments, seq_length, starts=None, random_cut=False):
        if isinstance(seq_length, tf.Tensor):
            check = tf.debugging.assert_greater_equal(
                seq_length, len(segments) + 1,
                message=f"seq_length is too short for {len(segments)} segment(s) ([CLS] and one [SEP] each)")
            with tf.control_dependencies([check]):
                seq_length = tf.identity(seq_length)
        budget = seq_length - (len(segments) + 1)
        segments, starts, kept = _trim(segments, budget, self.truncator, starts)
        if random_cut:
            segments, starts = _random_windows(segments, starts, kept)
        return _combine_and_pad(segments, starts, kept, seq_length, self.start_of_sequence_id,
                                self.end_of_segment_id, self.padding_id)

    def get_config(self):
        config = super().get_config()
        config.update(seq_length=self.seq_length, start_of_sequence_id=self.start_of_sequence_id,
                      end_of_segment_id=self.end_of_segment_id, padding_id=self.padding_id,
                      truncator=self.truncator)
        return config


def _trim(segments, budget, truncator, starts=None):
    """(segments, starts, kept): how many tokens of each row of each [batch, tokens] segment the
    truncator keeps (int64 [batch] per segment; the first ones of the row are kept), with the
    segments and ``starts`` (word-start flags shaped as the segments, or None) as they are, or
    already cut where tensorflow-text's trimmer did the cutting.

    The kept counts of one and two segments (round robin) and of any number (waterfall) have a
    closed form; that is ~6x faster than tensorflow-text's generic trimmers (3.7 us a sentence for
    RoundRobinTrimmer on one segment, most of the packer's time), which remain for round robin
    over three or more segments.
    """
    if truncator == "round_robin" and len(segments) > 2:
        trimmer = tf_text.RoundRobinTrimmer(max_seq_length=budget)
        if starts is None:
            trimmed = trimmer.trim(segments)
        else:
            masks = trimmer.generate_mask(segments)
            trimmed = [tf.ragged.boolean_mask(s, m) for s, m in zip(segments, masks)]
            starts = [tf.ragged.boolean_mask(s, m) for s, m in zip(starts, masks)]
        return trimmed, starts, [s.row_lengths() for s in trimmed]
    budget = tf.cast(budget, tf.int64)
    lengths = [s.row_lengths() for s in segments]
    if truncator == "round_robin" and len(segments) == 2:
        # One token each in turn, A first: A gets ceil(budget / 2) and B floor(budget / 2),
        # unless the other one is shorter than that and leaves more.
        (len_a, len_b), half_up, half_down = lengths, budget - budget // 2, budget // 2
        keep = [tf.minimum(len_a, tf.maximum(half_up, budget - len_b)),
                tf.minimum(len_b, tf.maximum(half_down, budget - len_a))]
    else:  # waterfall (round robin over one segment is the same): earlier segments first
        keep, left = [], budget
        for length in lengths:
            keep.append(tf.minimum(length, tf.maximum(left, 0)))
            left = left - keep[-1]
    return segments, starts, keep


def _random_windows(segments, starts, kept):
    """Each row's ``kept`` tokens of each segment taken from a random place: of the ``cut`` tokens
    that go, Binomial(cut, 1/2) go from the front (one fair coin per token, as
    ``truncate_seq_pair`` deletes them), the rest from the back. The segments (and ``starts``)
    come back holding exactly the kept tokens."""
    windows, window_starts = [], []
    for j, (segment, keep) in enumerate(zip(segments, kept)):
        coins = tf.ragged.range(segment.row_lengths() - keep)
        heads = coins.with_flat_values(tf.cast(tf.random.uniform(tf.shape(coins.flat_values)) < 0.5, tf.int64))
        begin = segment.row_starts() + tf.reduce_sum(heads, axis=1)
        take = tf.ragged.range(begin, begin + keep)
        windows.append(take.with_flat_values(tf.gather(segment.flat_values, take.flat_values)))
        if starts is not None:
            flags = tf.gather(starts[j].flat_values, take.flat_values)
            # The first token left may be a word's inner piece: it begins the segment's first word.
            firsts = tf.boolean_mask(take.row_starts(), keep > 0)[:, tf.newaxis]
            flags = tf.tensor_scatter_nd_update(flags, firsts, tf.ones(tf.shape(firsts)[:1], flags.dtype))
            window_starts.append(take.with_flat_values(flags))
    return windows, (window_starts if starts is not None else None)


def _combine_and_pad(segments, starts, kept, seq_length, cls_id, sep_id, pad_id):
    """``[CLS] A [SEP] B [SEP] ...`` of the first ``kept`` tokens of each row of the [batch, tokens]
    ``segments``, padded to ``seq_length``: the three int32 inputs (and ``word_starts`` from
    ``starts``, [CLS] and each [SEP] starting a word of their own).

    tensorflow-text's ``combine_segments`` then ``pad_model_inputs`` (after cutting the segments
    into new RaggedTensors) give the same tensors through ragged concatenations: hundreds of graph
    ops for one segment, whose tracing every traced dataset and every export pays (a preprocessor
    export traces the packer 12 times; the measurement: docs/bench/code-notes). Here each token's column is computed
    and one scatter writes the padded rows (a token that is cut goes to a spare column past the
    end, dropped afterwards). tests/text/test_packer.py checks the result against the rules
    (google-research/bert's ``_truncate_seq_pair``, the truncators as loops) for 1-3 segments.
    """
    seq_length = tf.cast(seq_length, tf.int64)
    batch = segments[0].nrows(out_type=tf.int64)
    rows = tf.range(batch, dtype=tf.int64)
    column = tf.ones_like(rows)  # where the next segment starts: after [CLS]
    at, ids, flags, type_from = [tf.stack([rows, tf.zeros_like(rows)], 1)], [tf.fill([batch], cls_id)], [
        tf.ones([batch], tf.int32)], []
    for j, (segment, keep) in enumerate(zip(segments, kept)):
        row_ids = segment.value_rowids()
        position = tf.range(tf.size(segment.flat_values, out_type=tf.int64)) - tf.gather(
            segment.row_splits, row_ids)
        target = tf.where(position < tf.gather(keep, row_ids), tf.gather(column, row_ids) + position, seq_length)
        if j:
            type_from.append(column)  # segment j (and its [SEP]) has type j from here on
        at += [tf.stack([row_ids, target], 1), tf.stack([rows, column + keep], 1)]  # its tokens, its [SEP]
        ids += [segment.flat_values, tf.fill([batch], sep_id)]
        if starts is not None:
            flags += [tf.cast(starts[j].flat_values, tf.int32), tf.ones([batch], tf.int32)]
        column = column + keep + 1
    at = tf.concat(at, 0)
    shape = tf.stack([batch, seq_length + 1])  # + the spare column

    def scatter(fill, values):
        dense = tf.tensor_scatter_nd_update(tf.fill(shape, tf.constant(fill, tf.int32)), at,
                                            tf.cast(tf.concat(values, 0), tf.int32))
        return dense[:, :-1]

    columns = tf.range(seq_length)[tf.newaxis, :]
    mask = tf.cast(columns < column[:, tf.newaxis], tf.int32)  # column: each row's length now
    types = tf.zeros_like(mask)
    for start in type_from:
        types += tf.cast(columns >= start[:, tf.newaxis], tf.int32)
    packed = {"input_word_ids": scatter(pad_id, ids), "input_mask": mask, "input_type_ids": types * mask}
    if starts is not None:
        packed["word_starts"] = scatter(0, flags)
    static = tf.get_static_value(seq_length)
    if static is not None:
        for value in packed.values():
            value.set_shape([None, int(static)])
    return packed


def _check_seq_length(seq_length, num_segments):
    """A Python seq_length must leave room for [CLS] and one [SEP] per segment."""
    if isinstance(seq_length, tf.Tensor):
        return seq_length  # a traced value: the trimmer and padding ops check it at run time
    if isinstance(seq_length, bool) or not hasattr(seq_length, "__index__"):
        raise TypeError(f"seq_length must be an int, got {seq_length!r}")
    seq_length = int(seq_length)
    if seq_length < num_segments + 1:
        raise OptionsError(
            f"seq_length={seq_length} is too short: {num_segments} segment(s) need "
            f"{num_segments + 1} special tokens ([CLS] and one [SEP] each)", option="seq_length", value=seq_length)
    return seq_length


def _as_segment_list(segments):
    if isinstance(segments, dict):
        raise TypeError("BertPacker expects a list of tokenized segments, got a dict")
    if not isinstance(segments, (list, tuple)):
        segments = [segments]
    if not segments:
        raise ValueError("BertPacker needs at least one segment")
    out = []
    for i, segment in enumerate(segments):
        if not isinstance(segment, tf.RaggedTensor):
            segment = tf.convert_to_tensor(segment)
            if segment.shape.rank != 2:
                raise ValueError(
                    f"segment {i}: expected token ids [batch, tokens] or [batch, words, pieces], "
                    f"got shape {segment.shape}")
            segment = tf.RaggedTensor.from_tensor(segment)
        if not segment.dtype.is_integer:
            raise TypeError(f"segment {i}: expected integer token ids, got {segment.dtype.name}")
        if segment.shape.rank not in (2, 3):
            raise ValueError(
                f"segment {i}: expected rank 2 [batch, tokens] or rank 3 [batch, words, pieces], "
                f"got shape {segment.shape}")
        out.append(tf.cast(segment, tf.int32))
    return out


def _merge_words(segment):
    """[batch, words, pieces] -> [batch, tokens]; [batch, tokens] as it is."""
    return segment.merge_dims(-2, -1) if segment.shape.rank == 3 else segment


def _word_start_flags(segment):
    """int32 [batch, tokens]: 1 for the first piece of each word ([batch, words, pieces]) or for
    every token ([batch, tokens], whose words are unknown), else 0."""
    if segment.shape.rank == 2:
        return tf.ones_like(segment)
    words = segment.values  # [all words, pieces]
    position = tf.range(tf.size(words.flat_values, out_type=tf.int64)) - tf.gather(
        words.row_starts(), words.value_rowids())
    return segment.with_flat_values(tf.cast(tf.equal(position, 0), tf.int32)).merge_dims(-2, -1)
