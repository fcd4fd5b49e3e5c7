"""The text inputs of string-in task models: one text, a pair, or a dict naming them."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

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
            raise ValueError(f"{who} takes the dict keys {list(TEXT_KEYS[:num_segments])}; "
                             f"got {sorted(inputs)} (missing {missing}, unexpected {unknown})")
        segments = [inputs[k] for k in TEXT_KEYS[:num_segments]]
    elif isinstance(inputs, (list, tuple)) and inputs and not all(isinstance(x, (str, bytes)) for x in inputs):
        segments = list(inputs)
    else:
        segments = [inputs]
    if len(segments) != num_segments:
        raise ValueError(f"{who} was built for {num_segments} text input(s) per example "
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
