"""Windows of the string-in models that answer once per text (classification, regression,
multi-label): packing every window of every document, and combining the windows' outputs.
Under ``long_documents="sentences"`` the units are sentences instead (``sentence_inputs``): each
packed alone, pooled by the same rules, attention scoring each sentence's pooled [CLS] vector
(``heads.SentenceAttentionHead``).

One text: its word pieces are windowed (room ``seq_length - 2``). A pair: text B is windowed and
text A repeated whole in each window (room ``seq_length - 3 - len(A)``); a text A that leaves no
room is an error. Each window is packed with the model's own packer (``[CLS] A [SEP] B [SEP]``): a
text that fits gets the very input that truncation gives it.

Combining (one answer per document, ``POOLINGS``): by default log(mean(exp)) of the windows' logits
for single-label classes (between their mean and their maximum: trained on documents, it learns
where the mean does not, the window that holds the deciding text taking most of the gradient), the
mean for regression scores, the maximum per label for multi-label (a label held by one window of
ten would be averaged away, its maximum is not). Every rule gives a text of one window that
window's own output. ``attention`` (opt-in) pools the tokens, not the windows: a learned score per
token, softmax over every real token of the document's windows (``heads.TokenAttentionHead``); the
windows' logits are then averaged with weights softmax(each window's log total attention weight),
which is the same thing. It changes the answer of a text of one window too (its tokens pooled, not
its [CLS]), hence opt-in: it is for texts whose label one passage of a long page carries.

Training (``document_batches``): a batch is a set of documents; all their windows run through the
encoder together, each document's window outputs are combined by the rule prediction uses, and the
loss is taken once per document. Trained window by window instead (every window labelled with its
document's label), the windows without the deciding text, often most of a long document, are
examples labelled at random: where one sentence decides, the model learns the prior and nothing
else (docs/finetuning.md, "Long documents").
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from kbert.errors import OptionsError
from kbert.tasks.core.text_inputs import text_segments
from kbert.tasks.core.windows import DOCUMENT_MASK, WINDOW_DOCUMENT, window_rows  # noqa: F401 (the keys, here too)

POOLINGS = ("mean", "max", "logmeanexp", "attention")


def _strings(batch):
    tensor = batch if isinstance(batch, tf.Tensor) else tf.constant(np.asarray(batch, dtype=object).tolist(),
                                                                    tf.string)
    return tf.reshape(tensor, [-1])


def window_inputs(model, inputs, check: bool = True, first_row: int = 0):
    """(packed int32 ids of every window [windows, seq_length], document int64 [windows]) for the
    raw texts ``inputs`` (what the model's ``call`` takes; a tokenizer's Python step already run).
    In the graph; eagerly (``check``) a pair whose text A leaves no room is a ValueError naming the
    row (counted from ``first_row`` + 1: ``inputs`` may be a slice of a larger input), in the graph
    an InvalidArgumentError."""
    segments = [_strings(s) for s in text_segments(inputs, model.num_segments, type(model).__name__)]
    pieces = [model.tokenizer.tokenize_flat(s, pre_tokenized=True) for s in segments]
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
            raise OptionsError(f"row {first_row + row + 1}: text A has {int(text_a.row_lengths()[row])} word pieces, "
                               f"which leave no room for text B in --seq-length {seq_length} ([CLS] and two [SEP]); with "
                               "--long-documents windows text A is kept whole: shorten it or raise --seq-length",
                               option="seq_length")
    else:
        tf.debugging.assert_positive(room, message="text A leaves no room for text B in a window "
                                                   "(--long-documents windows keeps text A whole)")
    windows = window_rows(text_b, tf.maximum(room, 1), model.doc_stride)
    return model.preprocessor.packer([tf.gather(text_a, windows["document"]), windows["pieces"]]), \
        windows["document"]


def sentence_inputs(model, inputs):
    """(packed int32 ids of every unit [units, seq_length], document int64 [units], number of
    documents) for one text a row under ``long_documents="sentences"``: each text split into
    sentences in the graph (``kbert.text.sentences.split_sentences``), each sentence packed alone as
    ``[CLS] sentence [SEP]``, a sentence longer than ``seq_length - 2`` word pieces cut into windows
    as ``window_inputs`` cuts a text. A text of one sentence that fits gets one unit, the very input
    that truncation gives it."""
    from kbert.text.sentences import split_sentences

    (text,) = [_strings(s) for s in text_segments(inputs, model.num_segments, type(model).__name__)]
    sentences = split_sentences(text)
    pieces = model.tokenizer.tokenize_flat(sentences.flat_values, pre_tokenized=True)
    windows = window_rows(pieces, model.seq_length - 2, model.doc_stride)
    document = tf.gather(sentences.value_rowids(), windows["document"])
    return model.preprocessor.packer([windows["pieces"]]), document, tf.shape(text)[0]


def combine(outputs, document, num_documents, how: str, weights=None):
    """One row per document from the windows' ``outputs`` ([windows, ...]), in keras.ops (any
    backend; under JAX ``num_documents`` is a static int). Windows whose ``document`` is negative
    (padding) are dropped; a document without windows gets zeros. ``attention`` takes each window's
    log total attention weight (``weights`` [windows])."""
    ops = keras.ops
    outputs = ops.convert_to_tensor(outputs)
    document = ops.cast(document, "int32")
    if how == "attention":
        if weights is None:
            raise ValueError("window pooling 'attention' takes each window's weights")
        weights = ops.cast(weights, "float32")
        index = ops.maximum(document, 0)
        top = ops.segment_max(weights, document, num_segments=num_documents)
        shifted = ops.exp(weights - ops.take(top, index, axis=0))
        share = shifted / ops.take(ops.maximum(ops.segment_sum(shifted, document, num_segments=num_documents),
                                               1e-30), index, axis=0)
        share = ops.cast(ops.reshape(share, [-1] + [1] * (len(outputs.shape) - 1)), outputs.dtype)
        return ops.segment_sum(outputs * share, document, num_segments=num_documents)
    ones = ops.ones(ops.shape(document), dtype=outputs.dtype)
    counts = ops.segment_sum(ones, document, num_segments=num_documents)
    for _ in range(len(outputs.shape) - 1):
        counts = ops.expand_dims(counts, -1)
    present = counts > 0
    if how == "mean":
        return ops.segment_sum(outputs, document, num_segments=num_documents) / ops.maximum(counts, 1)
    top = ops.where(present, ops.segment_max(outputs, document, num_segments=num_documents), 0)
    if how == "max":
        return top
    if how == "logmeanexp":  # log(mean(exp(x))): the max, plus a log of the mean of exp(x - max)
        shifted = ops.exp(outputs - ops.take(top, ops.maximum(document, 0), axis=0))
        total = ops.segment_sum(shifted, document, num_segments=num_documents)
        return ops.where(present, top + ops.log(ops.maximum(total, 1e-30) / ops.maximum(counts, 1)), 0)
    raise OptionsError(f"window pooling must be one of {', '.join(POOLINGS)}, got {how!r}",
                       option="window_pooling", value=how)


def combine_numpy(outputs, document, num_documents: int, how: str, weights=None) -> np.ndarray:
    """``combine`` in numpy (kbert predict and evaluation combine on the host), with its rules:
    windows whose ``document`` is negative (padding) are dropped; a document without windows gets
    zeros."""
    outputs, document = np.asarray(outputs), np.asarray(document)
    if how not in POOLINGS:
        raise OptionsError(f"window pooling must be one of {', '.join(POOLINGS)}, got {how!r}",
                           option="window_pooling", value=how)
    if how == "attention" and weights is None:
        raise ValueError("window pooling 'attention' takes each window's weights")
    kept = document >= 0
    outputs, document = outputs[kept], document[kept]
    rows = (-1, *([1] * (outputs.ndim - 1)))  # per document, broadcast over the outputs' other axes
    counts = np.bincount(document, minlength=num_documents)
    present = (counts > 0).reshape(rows)
    if how == "attention":  # a document without windows keeps its zeros: no window adds to it
        weights = np.asarray(weights, np.float64)[kept]
        top = np.full(num_documents, -np.inf)
        np.maximum.at(top, document, weights)
        shifted = np.exp(weights - top[document])
        total = np.zeros(num_documents)
        np.add.at(total, document, shifted)
        share = (shifted / total[document]).reshape(rows)
        combined = np.zeros((num_documents, *outputs.shape[1:]))
        np.add.at(combined, document, outputs * share)
        return combined.astype(outputs.dtype)
    if how in ("max", "logmeanexp"):
        top = np.full((num_documents, *outputs.shape[1:]), -np.inf, dtype=outputs.dtype)
        np.maximum.at(top, document, outputs)
        top = np.where(present, top, 0).astype(outputs.dtype)
        if how == "max":
            return top
    counts = np.maximum(counts, 1).reshape(rows)
    total = np.zeros((num_documents, *outputs.shape[1:]), dtype=np.float64)
    if how == "mean":
        np.add.at(total, document, outputs)
        return (total / counts).astype(outputs.dtype)
    np.add.at(total, document, np.exp(outputs.astype(np.float64) - top[document]))
    total = np.where(present, total, 1.0)  # log(1) = 0: zeros for a document without windows
    return np.where(present, top + np.log(total / counts), 0).astype(outputs.dtype)


def host_windows(model, inputs, batch_rows: int = 256):
    """``window_inputs`` (``sentence_inputs`` under ``long_documents="sentences"``) for many texts on the host, in slices of ``batch_rows`` documents (the
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
        if getattr(model, "sentences", False):
            ids, document, _ = sentence_inputs(model, part)
        else:
            ids, document = window_inputs(model, part, first_row=first)
        packed.append({k: v.numpy() for k, v in ids.items()})
        documents.append(document.numpy() + first)
    keys = packed[0].keys()
    return {k: np.concatenate([p[k] for p in packed]) for k in keys}, np.concatenate(documents)


def document_batches(packed: dict, document, labels, *, batch_size: int, max_windows=None, shuffle=True, seed=None,
                     host=None) -> tf.data.Dataset:
    """Training batches of whole documents (document-level training of windows).

    Args:
        packed: every window's packed ids (``host_windows``), [windows, seq_length] arrays.
        document: each window's document, ascending ([windows]).
        labels: one per document ([documents, ...]).
        batch_size: documents per batch.
        max_windows: at most this many windows of a document per epoch, drawn afresh each epoch
            (in their order in the document); None: all.
        shuffle, seed: documents in a new order each epoch.
        host: (rows multiple, width multiple) for a backend that takes fixed shapes (JAX): the
            windows and the documents of a batch padded to a multiple of the first (padding windows
            belong to no document, padding documents weigh 0), the width cut to the longest window
            rounded up to the second; None (TensorFlow): the model trims the batch itself.

    Returns:
        A dataset of ``(x, labels)`` (``(x, labels, weights)`` with ``host``): ``x`` the windows'
        packed ids with ``WINDOW_DOCUMENT`` [windows] and ``DOCUMENT_MASK`` [documents].
    """
    labels = np.asarray(labels)
    document = np.asarray(document, np.int64)
    num_documents = len(labels)
    seq_length = next(iter(packed.values())).shape[1]
    ragged = {k: tf.RaggedTensor.from_value_rowids(np.asarray(v, np.int32), document, nrows=num_documents)
              for k, v in packed.items()}
    ds = tf.data.Dataset.from_tensor_slices((ragged, labels))
    if shuffle:
        ds = ds.shuffle(num_documents, seed=seed, reshuffle_each_iteration=True)
    if max_windows:
        draws = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)

        def sample(element, draw):
            windows, label = element
            count = tf.shape(windows["input_mask"])[0]
            keep = tf.sort(tf.random.experimental.stateless_shuffle(
                tf.range(count), seed=tf.stack([draw, tf.cast(count, tf.int64)]))[:max_windows])
            return {k: tf.gather(v, keep) for k, v in windows.items()}, label

        ds = tf.data.Dataset.zip((ds, draws)).map(sample)
    ds = ds.ragged_batch(batch_size)

    def flatten(windows, label):
        x = {k: v.values for k, v in windows.items()}
        x[WINDOW_DOCUMENT] = tf.cast(windows["input_mask"].value_rowids(), tf.int32)
        x[DOCUMENT_MASK] = tf.ones([tf.shape(label)[0]], tf.float32)
        if host is None:
            return x, label
        rows, width_multiple = host
        longest = tf.maximum(tf.reduce_max(tf.reduce_sum(x["input_mask"], axis=-1)), 1)
        width = tf.minimum((longest + width_multiple - 1) // width_multiple * width_multiple, seq_length)

        def pad(t, fill=0):
            size = tf.shape(t)[0]
            extra = (size + rows - 1) // rows * rows - size
            return tf.pad(t, [[0, extra]] + [[0, 0]] * (t.shape.rank - 1), constant_values=fill)

        padded = {k: pad(x[k][:, :width]) for k in packed}
        padded[WINDOW_DOCUMENT] = pad(x[WINDOW_DOCUMENT], -1)
        padded[DOCUMENT_MASK] = pad(x[DOCUMENT_MASK])
        return padded, pad(label), padded[DOCUMENT_MASK]

    ds = ds.map(flatten, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.apply(tf.data.experimental.assert_cardinality(-(-num_documents // batch_size)))
    return ds.prefetch(tf.data.AUTOTUNE)
