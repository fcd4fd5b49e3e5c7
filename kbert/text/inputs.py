"""Checking and reshaping string inputs of the text layers."""

from __future__ import annotations

import numpy as np
import tensorflow as tf


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
