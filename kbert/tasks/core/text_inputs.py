"""The text inputs of string-in task models: one text, a pair, or a dict naming them."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from kbert.errors import OptionsError

TEXT_KEYS = ("text_a", "text_b")


def text_segments(inputs, num_segments: int, who: str) -> list:
    """The list of ``num_segments`` string batches in ``inputs``.

    Accepted: a [batch] string tensor/array (one text), a list/tuple of ``num_segments`` such
    batches, or a dict ``{"text_a": ..., "text_b": ...}``.
    """
    if isinstance(inputs, dict):
        unknown = sorted(set(inputs) - set(TEXT_KEYS[:num_segments]))
        missing = [k for k in TEXT_KEYS[:num_segments] if k not in inputs]
        if unknown or missing:
            raise OptionsError(f"{who} takes the dict keys {list(TEXT_KEYS[:num_segments])}; "
                               f"got {sorted(inputs)} (missing {missing}, unexpected {unknown})")
        segments = [inputs[k] for k in TEXT_KEYS[:num_segments]]
    elif isinstance(inputs, (list, tuple)) and inputs and not all(isinstance(x, (str, bytes)) for x in inputs):
        segments = list(inputs)
    else:
        segments = [inputs]
    if len(segments) != num_segments:
        raise OptionsError(f"{who} was built for {num_segments} text input(s) per example "
                           f"(num_segments={num_segments}) but got {len(segments)}")
    return segments


def text_lengths(inputs, num_segments: int) -> np.ndarray:
    """Characters per example (all segments), a cheap proxy for sorting examples by length."""
    segments = text_segments(inputs, num_segments, "text_lengths")
    total = None
    for segment in segments:
        values = segment.numpy() if isinstance(segment, tf.Tensor) else np.asarray(segment, dtype=object)
        rows = values.reshape(len(values), -1)  # [batch, choices] for multiple choice
        lengths = np.array([sum(len(v) for v in row) for row in rows], dtype=np.int64)
        total = lengths if total is None else total + lengths
    return total


def take_rows(inputs, index):
    """``inputs`` (array, tensor, tuple or dict of them) at the rows ``index``."""
    if isinstance(inputs, dict):
        return {k: take_rows(v, index) for k, v in inputs.items()}
    if isinstance(inputs, (list, tuple)) and inputs and not all(isinstance(x, (str, bytes)) for x in inputs):
        return type(inputs)(take_rows(v, index) for v in inputs)
    if isinstance(inputs, tf.Tensor):
        inputs = inputs.numpy()
    return np.asarray(inputs, dtype=object)[index]


def string_tensors(data):
    """Strings given as numpy arrays (unicode, bytes or object) or (nested) lists -> tf.string
    tensors: Keras' data adapters refuse numpy '<U' arrays and object arrays of rank > 1."""
    def is_text(x):
        if isinstance(x, np.ndarray):
            return x.dtype.kind in "USO" and x.size > 0 and all(isinstance(v, (str, bytes)) for v in x.flat)
        if isinstance(x, list) and x:
            flat = x if not isinstance(x[0], (list, tuple)) else [v for row in x for v in row]
            return all(isinstance(v, (str, bytes)) for v in flat)
        return False

    def convert(x):
        return tf.constant(x.tolist() if isinstance(x, np.ndarray) else x, tf.string) if is_text(x) else x

    if isinstance(data, dict):
        return {k: convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and data and not all(isinstance(v, (str, bytes)) for v in data):
        return tuple(convert(v) for v in data)
    return convert(data)


def label_arrays(data):
    """Labels given as plain (nested) Python lists of numbers -> numpy arrays: Keras' data adapters
    accept a list of strings turned into a tensor only beside array-like labels, not a list."""
    def convert(y):
        if isinstance(y, list) and y:
            array = np.asarray(y)
            if array.dtype.kind in "biuf":
                return array
        return y

    if isinstance(data, dict):
        return {k: convert(v) for k, v in data.items()}
    return convert(data)
