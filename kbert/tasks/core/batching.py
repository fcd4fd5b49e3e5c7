"""Batch shapes shared by every task model: trimming packed ids to the batch's longest row, and
prediction in order of length (little padding per batch), results back in input order."""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def trim_to_longest(inputs: dict, *companions):
    """Cuts packed inputs (and [batch, seq] companions: labels, word ids) to the longest real
    sequence of the batch (dynamic sequence length).

    The packer pads to seq_length; positions past the longest input_mask are padding for every
    row, so dropping them changes no output at real positions and saves their compute. An empty
    batch keeps one position.
    """
    length = tf.maximum(tf.reduce_max(tf.reduce_sum(inputs["input_mask"], axis=1)), 1)
    trimmed = {k: v[:, :length] for k, v in inputs.items()}
    return (trimmed, *(c[:, :length] for c in companions)) if companions else trimmed


def length_order(lengths) -> np.ndarray:
    """Row indices from shortest to longest (stable: equal lengths keep their order)."""
    return np.argsort(np.asarray(lengths), kind="stable")


def in_input_order(values, order) -> np.ndarray:
    """``values`` computed for the rows ``order`` (see length_order), put back in input order."""
    result = np.empty_like(values)
    result[order] = values
    return result


def length_sorted_batches(inputs: dict, batch_size: int, trim: bool = True):
    """Yields (rows, width, batch) over packed numpy ``inputs`` ([n, seq] arrays), shortest rows
    first: ``rows`` the batch's row indices, ``batch`` the rows as int tensors cut to ``width``
    (the batch's longest row when ``trim``, else the full width)."""
    lengths = inputs["input_mask"].sum(axis=1)
    order = length_order(lengths)
    full = next(iter(inputs.values())).shape[1]
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        width = max(int(lengths[rows].max()), 1) if trim else full
        yield rows, width, {k: tf.constant(v[rows, :width]) for k, v in inputs.items()}


def progress_callbacks(progress, num_rows: int, batch_size: int):
    """Keras callbacks for ``model.predict`` that call ``progress(rows)`` after each batch (None
    when ``progress`` is None): how the task models report rows done to kbert.predict's bar."""
    if progress is None:
        return None
    import keras

    class RowsDone(keras.callbacks.Callback):
        def on_predict_batch_end(self, batch, logs=None):
            progress(max(min(batch_size, num_rows - batch * batch_size), 0))

    return [RowsDone()]
