"""tf.data input pipelines for fine-tuning, with length bucketing.

Fine-tuning data is small and held in memory (numpy arrays of raw strings, or of packed ids for
the tagging and QA features), so the pipeline is from_tensor_slices -> shuffle -> batch ->
prefetch. With ``bucket_boundaries`` examples are grouped by token length
(``tf.data.Dataset.bucket_by_sequence_length``, no padding: the string-in models pack and trim
each batch themselves) so that a batch of short sentences is not padded to the longest sentence
of a random batch: on SST-2 (median 10 WordPieces) most batches then cost 16-24 positions
instead of 50-66 (random batches trimmed to their longest) or 128 (fixed length).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

# Upper bounds (exclusive) of the length buckets; lengths count [CLS]/[SEP].
DEFAULT_BOUNDARIES = (8, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 448)


def bucket_boundaries(seq_length: int, boundaries=DEFAULT_BOUNDARIES) -> list:
    """The boundaries below seq_length (longer examples are truncated to seq_length anyway)."""
    return [b for b in boundaries if b <= seq_length]


def token_lengths(tokenizer, segments, seq_length: int, batch_size: int = 2048) -> np.ndarray:
    """Packed length per example: WordPieces of all segments + [CLS] + one [SEP] each, capped at
    seq_length. ``segments``: a list of [n] string arrays (one per text input), raw texts (run through
    the tokenizer's Python step, ``pre_tokenize``, here)."""
    segments = [np.asarray(s, dtype=object) for s in segments]
    n = len(segments[0])
    total = np.full(n, len(segments) + 1, dtype=np.int64)
    for segment in segments:
        for start in range(0, n, batch_size):
            texts = tokenizer.pre_tokenize(list(segment[start:start + batch_size]))
            pieces = tokenizer.tokenize_flat(tf.constant(texts, tf.string, shape=[len(texts)]), pre_tokenized=True)
            total[start:start + batch_size] += pieces.row_lengths().numpy()
    return np.minimum(total, seq_length)


def num_batches(lengths, batch_size: int, boundaries=None) -> int:
    """Batches per pass: one partial batch per bucket at most (bucket_by_sequence_length)."""
    n = len(lengths)
    if not boundaries:
        return -(-n // batch_size)
    buckets = np.searchsorted(np.asarray(boundaries), np.asarray(lengths), side="right")
    counts = np.bincount(buckets, minlength=len(boundaries) + 1)
    return int(sum(-(-c // batch_size) for c in counts))


def make_dataset(x, y=None, *, batch_size: int, lengths=None, boundaries=None, shuffle: bool = False,
                 seed=None, map_batch=None) -> tf.data.Dataset:
    """Batches of (x, y) (or x when y is None).

    Args:
      x, y: arrays (or dicts/tuples of arrays) with the examples along the first axis.
      lengths: [n] token length per example, for bucketing.
      boundaries: bucket boundaries (see bucket_boundaries); None or empty: plain batches.
      shuffle: reshuffle every epoch (a full-size buffer: the data is in memory).
      map_batch: a function applied to each batch (e.g. trimming packed ids to the longest row).

    The dataset's cardinality is set, so Keras' progress bar knows the number of steps.
    """
    elements = (x,) if y is None else (x, y)
    n = len(lengths) if lengths is not None else _length(x)
    bucketed = bool(boundaries) and lengths is not None
    if bucketed:
        elements = elements + (np.asarray(lengths, dtype=np.int32),)
    ds = tf.data.Dataset.from_tensor_slices(elements)
    if shuffle:
        ds = ds.shuffle(n, seed=seed, reshuffle_each_iteration=True)
    if bucketed:
        ds = ds.bucket_by_sequence_length(lambda *e: e[-1], list(boundaries),
                                          [batch_size] * (len(boundaries) + 1), no_padding=True)
        ds = ds.map(lambda *e: e[:-1])
        steps = num_batches(lengths, batch_size, boundaries)
    else:
        ds = ds.batch(batch_size)
        steps = num_batches(np.zeros(n), batch_size)
    ds = ds.map(lambda *e: e[0] if len(e) == 1 else e)
    if map_batch is not None:
        ds = ds.map(map_batch, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.apply(tf.data.experimental.assert_cardinality(steps))
    return ds.prefetch(tf.data.AUTOTUNE)


def _length(x) -> int:
    while isinstance(x, (dict, tuple)):  # a structure of arrays: its first array
        x = next(iter(x.values())) if isinstance(x, dict) else x[0]
    return len(x)
