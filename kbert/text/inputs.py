"""Checking and reshaping string inputs of the text layers."""

from __future__ import annotations

import functools
import os

import numpy as np
import tensorflow as tf

# Shards of a batch that the string ops work on at once (see ``shard_rows``).
MAX_SHARDS = 8
MIN_ROWS_PER_SHARD = 64


def as_string_tensor(inputs, who: str):
    """``inputs`` as a tf.string Tensor or RaggedTensor; anything else is a TypeError naming it."""
    if isinstance(inputs, tf.RaggedTensor):
        if inputs.dtype != tf.string:
            raise TypeError(f"{who} expects strings, got a RaggedTensor of {inputs.dtype.name}")
        return inputs
    if isinstance(inputs, (tf.Tensor, tf.Variable)) or tf.is_symbolic_tensor(inputs):
        if inputs.dtype != tf.string:
            raise TypeError(f"{who} expects strings (a tf.string tensor), got {inputs.dtype.name}")
        return inputs
    if isinstance(inputs, (list, tuple)) and len(inputs) == 0:
        return tf.constant([], tf.string)
    if isinstance(inputs, np.ndarray) and inputs.dtype.kind not in "OSU":
        raise TypeError(f"{who} expects strings, got a numpy array of {inputs.dtype}")
    try:
        tensor = tf.convert_to_tensor(inputs)
    except (ValueError, TypeError) as e:
        raise TypeError(f"{who} expects strings or a list of strings, got {type(inputs).__name__}: {e}") from None
    if tensor.dtype != tf.string:
        raise TypeError(f"{who} expects strings, got {type(inputs).__name__} of {tensor.dtype.name}")
    return tensor


def map_flat(strings, fn):
    """Applies ``fn`` ([n] strings -> RaggedTensor [n, ...]) to strings of any shape.

    Scalars give fn's result for one string, rank-k inputs a RaggedTensor whose first k
    dimensions are the input's; RaggedTensor inputs keep their row partitions.
    """
    if isinstance(strings, tf.RaggedTensor):
        return _each(fn(strings.flat_values), strings.with_flat_values)
    rank = strings.shape.rank
    if rank == 1:
        return fn(strings)
    if rank == 0:
        return _each(fn(tf.reshape(strings, [1])), lambda r: r[0])
    if rank is None:
        raise ValueError("string inputs need a known rank")
    shape = tf.shape(strings, out_type=tf.int64)

    def restore(result):
        for axis in range(rank - 1, 0, -1):
            result = tf.RaggedTensor.from_uniform_row_length(result, shape[axis], validate=False)
        return result

    return _each(fn(tf.reshape(strings, [-1])), restore)


def default_shards() -> int:
    """The CPUs this process may run on, at most MAX_SHARDS."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_SHARDS))


def shard_rows(fn, inputs, shards: int, min_rows: int = MIN_ROWS_PER_SHARD):
    """``fn(*inputs)``, computed on ``shards`` contiguous row ranges at once in a graph.

    tensorflow-text's and tf.strings' kernels loop over a batch on one thread, so a batch of
    strings uses one core however many there are (Rust ``tokenizers`` spreads ``encode_batch``
    over all of them). Cut into independent slices, the graph executor runs the slices'
    kernels on its inter-op threads in parallel; the results (Tensors or RaggedTensors, in any
    structure) are concatenated back in order, so the output is exactly ``fn(*inputs)``.

    Eager calls, and batches whose static size is under ``min_rows * shards``, run unsharded.
    A batch of unknown size is always cut: choosing at run time (``tf.cond``) measured slower
    for large batches and no faster for one string (docs/bench/code-notes).

    ``fn`` is traced once, as a function the graph calls ``shards`` times: tracing a tokenizer and
    packer builds thousands of ops in Python (seconds each time), and copies of it per shard made
    an export trace the preprocessing ``shards`` times over (8 on an 8-core machine).
    """
    if shards <= 1 or tf.executing_eagerly():
        return fn(*inputs)
    static_rows = inputs[0].shape[0]
    if static_rows is not None and static_rows < min_rows * shards:
        return fn(*inputs)
    rows = tf.shape(inputs[0], out_type=tf.int64)[0]
    # The slices' row counts are tensors, so every slice has the same (unknown-length) spec and
    # the first call's trace serves all of them.
    once = tf.function(fn, autograph=False)
    parts = [once(*[x[rows * i // shards:rows * (i + 1) // shards] for x in inputs]) for i in range(shards)]
    return tf.nest.map_structure(lambda *p: tf.concat(p, axis=0), *parts)


def _each(result, transform):
    """``fn`` may return one RaggedTensor or a tuple of them (ids and offsets)."""
    if isinstance(result, tuple):
        return tuple(transform(r) for r in result)
    return transform(result)


class Untracked:
    """Holds attributes out of Keras / TensorFlow object tracking.

    The layers keep their per-layer ``tf.function`` graphs here: they are an eager speed-up,
    not state, and a tracked dict of them would be written into (and can break) SavedModels.
    """

    def __init__(self, **values):
        self.__dict__.update(values)


def entry_graphs(owner, tokenize_1d, tokenize_1d_with_offsets=None, units=()) -> "Untracked":
    """A tokenizer's graphs, one per entry point: ``ids`` (the batch cut into ``owner.shards`` slices
    run in parallel, read when traced), ``serial_ids`` (one slice) and one per offset unit. Eager
    calls then run as one graph call instead of some 40 op dispatches (docs/bench/code-notes);
    inside tf.function and tf.data they are inlined."""
    spec = [tf.TensorSpec([None], tf.string)]

    def graph(fn):
        return tf.function(lambda s: shard_rows(fn, [s], owner.shards), input_signature=spec, autograph=False)

    return Untracked(
        ids=graph(tokenize_1d),
        serial_ids=tf.function(tokenize_1d, input_signature=spec, autograph=False),
        **{unit: graph(functools.partial(tokenize_1d_with_offsets, unit=unit)) for unit in units},
    )
