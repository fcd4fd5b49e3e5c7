"""The whole ONNX graph of a model directory's model: id inputs, the encoder, the task's head.

Inputs (int32, dynamic batch and length): ``input_word_ids``, ``input_mask``, ``input_type_ids``
[batch, sequence] (TF Hub's names, as kbert's ``serving_ids`` signatures); a multiple-choice model
takes [batch, choices, sequence]. Outputs: ``kbert.export.onnx.heads``.
"""

from __future__ import annotations

import numpy as np

from kbert.export.onnx import heads
from kbert.export.onnx.encoder import encoder_nodes, encoder_weights
from kbert.export.onnx.graph import Graph
from kbert.export.onnx.runtime import WINDOW_WEIGHTS
from kbert.models.encoder import INPUT_NAMES


def input_dims(task_type: str | None) -> list:
    return ["batch", "choices", "sequence"] if task_type == "multiple_choice" else ["batch", "sequence"]


def build_graph(model, form: str = "ort", producer_version: str = ""):
    """``onnx.ModelProto`` of a task model (``kbert.TaskModel``) or a bare ``kbert.BertEncoder``."""
    task_type = getattr(model, "task_type", None)
    encoder = model.encoder if task_type else model
    if getattr(encoder, "causal", False):
        from kbert.export.onnx.runtime import OnnxExportError

        raise OnnxExportError(f"the {task_type or 'encoder'} model has a causal (left-only) encoder, which the ONNX "
                              "graph cannot express (its attention takes the padding mask only)")
    g = Graph(task_type or "bert_encoder")
    ids, mask, types = (g.input(name, g.onnx.TensorProto.INT32, input_dims(task_type)) for name in INPUT_NAMES)
    features = {"mask": mask, "types": types}
    if task_type == "multiple_choice":  # [batch, choices, seq] -> [batch * choices, seq]
        features["rows"] = g.op("Shape", ids, start=0, end=2)
        flat = g.op("Concat", g.ints([-1]), g.op("Shape", ids, start=2), axis=0)
        ids, mask, types = (g.op("Reshape", x, flat) for x in (ids, mask, types))
        features.update(mask=mask, types=types)
    config = encoder.config
    features["sequence"], features["pooled"] = encoder_nodes(g, encoder_weights(encoder), config, ids, mask, types,
                                                             form)
    if task_type:
        heads.HEADS[task_type](g, model, features)
    else:
        heads.encoder(g, config, features)
    return g.model(producer_version)


def keras_outputs(model, feeds: dict) -> dict:
    """What the ONNX graph's numeric outputs should be, from the Keras model, for numpy ``feeds``:
    ``logits`` / ``scores`` / ``start_logits`` + ``end_logits`` / the encoder's two outputs; and
    ``window_weights`` of a model that pools windows by attention (each row a window)."""
    task_type = getattr(model, "task_type", None)
    feeds = {k: np.asarray(v, np.int32) for k, v in feeds.items()}
    out = model(feeds, training=False)
    if task_type is None:
        return {k: np.asarray(out[k]) for k in ("sequence_output", "pooled_output")}
    if task_type == "span_qa":
        return {k: np.asarray(out[k]) for k in ("start_logits", "end_logits")}
    result = {"scores" if task_type == "text_regressor" else "logits": np.asarray(out)}
    if getattr(model, "window_pooling", None) == "attention":
        encoded = model.encode(feeds, training=False)
        _, weights = model.head.window_outputs(encoded["sequence_output"], encoded["input_mask"], training=False)
        result[WINDOW_WEIGHTS] = np.asarray(weights)
    return result
