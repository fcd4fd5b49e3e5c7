"""Embeddings for TensorBoard's projector (``tensorboard --logdir LOGDIR``, tab "Projector").

``write_projector(logdir, vectors, labels)`` writes the three files the projector reads: a
checkpoint holding the [N, D] vectors, ``metadata.tsv`` (one row of labels per vector, with a
header) and ``projector_config.pbtxt`` tying them together.

``write_features_projector(logdir, arrays, rows, vocab)`` does it for the arrays of
``python -m kbert.features`` (``input_word_ids``, ``input_mask`` and a [rows, seq, H] layer such
as ``last_hidden``): ``level="token"``, one point per real token (labelled with the token, its row
and position), or ``level="sentence"``, one point per row (the mean of its real tokens' vectors,
labelled with the text).
"""

from __future__ import annotations

import pathlib

import numpy as np

from kbert.errors import OptionsError

TENSOR_NAME = "embedding/.ATTRIBUTES/VARIABLE_VALUE"
METADATA_FILE = "metadata.tsv"
LEVELS = ("token", "sentence")


def _cell(value) -> str:
    # A TSV cell: tabs and newlines would split rows and columns; the projector reads no quoting.
    text = " ".join(str(value).split())
    return text if text else "(empty)"


def write_projector(logdir, vectors, labels, columns=None) -> pathlib.Path:
    """``vectors`` [N, D]; ``labels``: N strings, or N tuples with ``columns`` naming them."""
    import tensorflow as tf
    from tensorboard.plugins import projector

    vectors = np.asarray(vectors, np.float32)
    if vectors.ndim != 2 or vectors.shape[0] == 0:
        raise OptionsError(f"projector vectors must be a non-empty [N, D] array, got shape {vectors.shape}")
    labels = list(labels)
    if len(labels) != len(vectors):
        raise OptionsError(f"{len(vectors)} vectors but {len(labels)} labels")
    logdir = pathlib.Path(logdir)
    logdir.mkdir(parents=True, exist_ok=True)
    with open(logdir / METADATA_FILE, "w", encoding="utf-8") as f:
        if columns:  # several columns: a header line first (one column: no header, as the projector wants)
            f.write("\t".join(_cell(c) for c in columns) + "\n")
            for row in labels:
                if len(row) != len(columns):
                    raise OptionsError(f"label {row!r} has {len(row)} fields but there are {len(columns)} columns")
                f.write("\t".join(_cell(v) for v in row) + "\n")
        else:
            for label in labels:
                f.write(_cell(label) + "\n")
    checkpoint = tf.train.Checkpoint(embedding=tf.Variable(vectors, name="embedding"))
    checkpoint.save(str(logdir / "embedding.ckpt"))
    config = projector.ProjectorConfig()
    embedding = config.embeddings.add()
    embedding.tensor_name = TENSOR_NAME
    embedding.metadata_path = METADATA_FILE
    projector.visualize_embeddings(str(logdir), config)
    return logdir


def write_features_projector(logdir, arrays: dict, rows, vocab, level="token", layer="last_hidden") -> pathlib.Path:
    """The arrays of ``kbert.features`` (a dict or a loaded .npz) -> projector files in ``logdir``.

    ``rows``: the input rows (dicts with ``text_a`` and optionally ``text_b``, as the JSONL lines)
    for the labels; ``vocab``: the token list (id -> token).
    """
    if level not in LEVELS:
        raise OptionsError(f"level must be one of {LEVELS}, got {level!r}", option="level", value=level)
    for key in ("input_word_ids", "input_mask", layer):
        if key not in arrays:
            raise OptionsError(f"the features have no {key!r} (found: {', '.join(sorted(arrays))})")
    ids, mask, hidden = (np.asarray(arrays[k]) for k in ("input_word_ids", "input_mask", layer))
    if hidden.ndim != 3 or hidden.shape[:2] != ids.shape:
        raise OptionsError(f"{layer!r} must be [rows, seq, H] matching input_word_ids {ids.shape}, got {hidden.shape}")
    rows = list(rows)
    if len(rows) != len(ids):
        raise OptionsError(f"{len(ids)} rows of features but {len(rows)} input rows")
    texts = [r["text_a"] + (" | " + r["text_b"] if r.get("text_b") is not None else "") for r in rows]
    mask = mask.astype(bool)
    if level == "sentence":
        counts = np.maximum(mask.sum(1, keepdims=True), 1)
        vectors = (hidden * mask[..., None]).sum(1) / counts
        return write_projector(logdir, vectors, texts)
    row_index, position = np.nonzero(mask)
    labels = [(vocab[ids[r, p]], r, p, texts[r]) for r, p in zip(row_index, position)]
    return write_projector(logdir, hidden[row_index, position], labels, columns=("token", "row", "position", "text"))
