"""Windows of the string-in models that answer once per text (classification, regression,
multi-label): packing every window of every document, and combining the windows' outputs.

One text: its word pieces are windowed (room ``seq_length - 2``). A pair: text B is windowed and
text A repeated whole in each window (room ``seq_length - 3 - len(A)``); a text A that leaves no
room is an error. Each window is packed with the model's own packer (``[CLS] A [SEP] B [SEP]``): a
text that fits gets the very input that truncation gives it.

Combining (one answer per document): the mean of the windows' logits for single-label classes
and for regression scores, the maximum per label for multi-label. Each window is trained with its
document's label, so a window without the deciding text learns to say little (logits near the
label prior, which the mean barely moves), while one window that holds it speaks clearly: the
mean keeps that window's vote and cancels the windows' noise. A multi-label document has a label
when any part of it says so: a label held by one window of ten would be averaged away, its
maximum is not (sigmoid is monotone, so the maximum logit is the maximum probability).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from kbert.tasks.text_inputs import text_segments
from kbert.tasks.windows import window_rows

COMBINE = {"text_classifier": "mean", "text_regressor": "mean", "multi_label_classifier": "max"}


def _strings(batch):
    tensor = batch if isinstance(batch, tf.Tensor) else tf.constant(np.asarray(batch, dtype=object).tolist(),
                                                                    tf.string)
    return tf.reshape(tensor, [-1])


def window_inputs(model, inputs, check: bool = True):
    """(packed int32 ids of every window [windows, seq_length], document int64 [windows]) for the
    raw texts ``inputs`` (what the model's ``call`` takes; a tokenizer's Python step already run).
    In the graph; eagerly (``check``) a pair whose text A leaves no room is a ValueError naming the
    row, in the graph an InvalidArgumentError."""
    segments = [_strings(s) for s in text_segments(inputs, model.num_segments, type(model).__name__)]
    pieces = [model.tokenizer.tokenize_flat(s) for s in segments]
    seq_length = model.seq_length
    if len(pieces) == 1:
        windows = window_rows(pieces[0], seq_length - 2, model.doc_stride)
        return model.preprocessor.packer([windows["pieces"]]), windows["document"]
    text_a, text_b = pieces
    room = seq_length - 3 - tf.cast(text_a.row_lengths(), tf.int32)
    if check and tf.executing_eagerly():
        short = np.flatnonzero(room.numpy() < 1)
        if len(short):
            row = int(short[0])
            raise ValueError(f"row {row + 1}: text A has {int(text_a.row_lengths()[row])} word pieces, which leave no "
                             f"room for text B in --seq-length {seq_length} ([CLS] and two [SEP]); with "
                             "--long-documents windows text A is kept whole: shorten it or raise --seq-length")
    else:
        tf.debugging.assert_positive(room, message="text A leaves no room for text B in a window "
                                                   "(--long-documents windows keeps text A whole)")
    windows = window_rows(text_b, tf.maximum(room, 1), model.doc_stride)
    return model.preprocessor.packer([tf.gather(text_a, windows["document"]), windows["pieces"]]), \
        windows["document"]


def combine_graph(outputs, document, num_documents, how: str):
    """One row per document from the windows' ``outputs`` (tf, [windows, ...])."""
    if how == "max":
        return tf.math.unsorted_segment_max(outputs, document, num_documents)
    return tf.math.unsorted_segment_mean(outputs, document, num_documents)


def combine_numpy(outputs, document, num_documents: int, how: str) -> np.ndarray:
    """``combine_graph`` in numpy (kbert predict and evaluation combine on the host)."""
    outputs, document = np.asarray(outputs), np.asarray(document)
    if how == "max":
        result = np.full((num_documents, *outputs.shape[1:]), -np.inf, dtype=outputs.dtype)
        np.maximum.at(result, document, outputs)
        return result
    total = np.zeros((num_documents, *outputs.shape[1:]), dtype=np.float64)
    np.add.at(total, document, outputs)
    counts = np.bincount(document, minlength=num_documents).reshape(-1, *([1] * (outputs.ndim - 1)))
    return (total / counts).astype(outputs.dtype)


def host_windows(model, inputs, batch_rows: int = 256):
    """``window_inputs`` for many texts on the host, in slices of ``batch_rows`` documents (the
    tokenizer's Python step run first): (packed numpy dict, document numpy int64)."""
    from kbert.text.pre_tokenize import pre_tokenize_data

    segments = text_segments(inputs, model.num_segments, type(model).__name__)
    segments = [np.asarray(s.numpy() if isinstance(s, tf.Tensor) else s, dtype=object).reshape(-1)
                for s in segments]
    n = len(segments[0])
    packed, documents = [], []
    for first in range(0, max(n, 1), batch_rows):
        part = [pre_tokenize_data(model.tokenizer, s[first:first + batch_rows]) for s in segments]
        part = part[0] if len(part) == 1 else {"text_a": part[0], "text_b": part[1]}
        try:
            ids, document = window_inputs(model, part)
        except ValueError as e:
            if str(e).startswith("row "):  # the row number in the whole input
                row, rest = str(e)[4:].split(":", 1)
                raise ValueError(f"row {int(row) + first}:{rest}") from None
            raise
        packed.append({k: v.numpy() for k, v in ids.items()})
        documents.append(document.numpy() + first)
    keys = packed[0].keys()
    return {k: np.concatenate([p[k] for p in packed]) for k in keys}, np.concatenate(documents)
