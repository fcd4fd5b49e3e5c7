"""Each task type's head and its post-processing as ONNX nodes: what the SavedModel task export's
``serving_ids`` signature answers (kbert/tasks/*/task.py), so that a client gets answers, not logits.

  text_classifier         logits, probabilities [b, C]; class_ids [b] (int32); labels [b] (strings)
  text_regressor          scores [b]
  multi_label_classifier  logits, probabilities [b, L]; predictions [b, L] (int32 0/1: probability
                          above the threshold; with at_least_one the most probable where none is)
                          These three, under ``window_pooling="attention"``, also window_weights [b]
                          (each row's log total attention weight, see ``pooled_features``)
  token_tagger            logits, token_probabilities [b, s, T]; token_tag_ids [b, s] (int32);
                          token_tags [b, s] (strings)
  span_qa                 start_logits, end_logits [b, s] (-10000 at padding, as the model);
                          best_start, best_end [b] (int32, -1: none), best_score [b] (their logit
                          sum), null_score [b] (start + end logit of [CLS]): per window, the best
                          span run_squad.py's candidate rules allow (see ``span_qa``)
  multiple_choice         logits, probabilities [b, N]; choice_ids [b] (int32)

``HEADS[model.task_type](g, model, features)`` adds the nodes and graph outputs; ``features`` holds
the names of ``sequence`` / ``pooled`` (the encoder's outputs) and of the ``mask`` and ``types``
inputs (int32 [b, s]; for multiple choice the flattened [b * N, s] rows and ``rows`` = the input
shape [b, N] to fold the scores back into).

Each row is one window, as the model's ``call`` on packed ids answers: a long document read in
windows (``long_documents="windows"``) is combined from its windows' rows by the client
(``kbert.tasks.classification.window_inputs.combine_numpy``, which ``kbert predict --onnx`` runs).
"""

from __future__ import annotations

import numpy as np

from kbert.export.onnx.graph import Graph
from kbert.export.onnx.runtime import WINDOW_WEIGHTS, OnnxExportError
from kbert.layers.attention import MASK_FILTER
from kbert.tasks.span_qa.model import PADDING_LOGIT


def _types(g):
    return g.onnx.TensorProto


def _head_dense(g: Graph, model, x: str) -> str:
    check_plain_head(model)
    dense = model.head.dense
    return g.dense(x, np.asarray(dense.kernel.numpy()), np.asarray(dense.bias.numpy()), "head")


def check_plain_head(model) -> None:
    """An OnnxExportError for a model whose head reads more than the encoder's last layer through one
    dense layer: a BiLSTM (``bilstm``) or the frozen encoder's other layers (``features``,
    kbert.tasks.core.sequence_features), which these graphs do not build."""
    bilstm, combination = getattr(model, "bilstm", 0), getattr(model, "combination", None)
    if bilstm or combination is not None:
        what = f"features={combination!r} (a two-layer BiLSTM over the frozen encoder's layers)" if combination \
            else f"bilstm={bilstm} (a BiLSTM before its {model.head_name} layer)"
        raise OnnxExportError(f"this {model.task_type} model has {what}, which the ONNX export does not build "
                              "(it has no LSTM nodes); export it as a TF SavedModel (kbert export task) instead")


def pooled_features(g: Graph, model, f) -> tuple:
    """(what the model's dense head reads [b, H], each row's log total attention weight [b] or None).

    The pooled [CLS] output, or under ``window_pooling="attention"`` the row's tokens pooled as
    ``kbert.tasks.core.heads.TokenAttentionHead.window_outputs`` pools them: a learned score per
    token, padding at ``MASK_FILTER``, softmax over the row; the weight is the log-sum-exp of the
    scores, which ``combine_numpy(..., "attention", weights)`` takes to pool a document's windows."""
    if getattr(model, "window_pooling", None) != "attention":
        return f["pooled"], None
    t = _types(g)
    score = model.head.score
    scores = g.op("Squeeze", g.dense(f["sequence"], np.asarray(score.kernel.numpy()), np.asarray(score.bias.numpy()),
                                     "head/score"), g.ints([-1]))                       # [b, s]
    scores = g.op("Where", g.op("Cast", f["mask"], to=t.BOOL), scores, g.scalar(MASK_FILTER, np.float32))
    top = g.op("ReduceMax", scores, axes=[1], keepdims=1)                               # [b, 1]
    shifted = g.op("Exp", g.op("Sub", scores, top))
    total = g.op("ReduceSum", shifted, g.ints([1]), keepdims=1)                         # [b, 1]
    attention = g.op("Unsqueeze", g.op("Div", shifted, total), g.ints([1]))            # [b, 1, s]
    pooled = g.op("Squeeze", g.op("MatMul", attention, f["sequence"]), g.ints([1]))    # [b, H]
    weights = g.op("Squeeze", g.op("Add", top, g.op("Log", total)), g.ints([1]))       # [b]
    return pooled, weights


def _window_weights(g, weights):
    if weights is not None:
        g.output(weights, WINDOW_WEIGHTS, _types(g).FLOAT, ["batch"])


def _labels(g, ids, names):
    return g.op("Gather", g.const("label_names", np.asarray(list(names), dtype=object)), ids)


def classifier(g, model, f):
    t = _types(g)
    pooled, weights = pooled_features(g, model, f)
    logits = _head_dense(g, model, pooled)
    class_ids = g.argmax(logits)
    names = model.label_names or [str(i) for i in range(model.num_classes)]
    g.output(logits, "logits", t.FLOAT, ["batch", len(names)])
    g.output(g.op("Softmax", logits, axis=-1), "probabilities", t.FLOAT, ["batch", len(names)])
    g.output(class_ids, "class_ids", t.INT32, ["batch"])
    g.output(_labels(g, class_ids, names), "labels", t.STRING, ["batch"])
    _window_weights(g, weights)


def regressor(g, model, f):
    pooled, weights = pooled_features(g, model, f)
    scores = g.op("Squeeze", _head_dense(g, model, pooled), g.ints([-1]))
    g.output(scores, "scores", _types(g).FLOAT, ["batch"])
    _window_weights(g, weights)


def multi_label(g, model, f):
    t = _types(g)
    pooled, weights = pooled_features(g, model, f)
    logits = _head_dense(g, model, pooled)
    probabilities = g.op("Sigmoid", logits)
    chosen = g.op("Greater", probabilities, g.scalar(model.threshold, np.float32))
    if model.at_least_one:  # a row where nothing passes gets its most probable label
        best = g.op("Equal", g.const("label_index", np.arange(model.num_labels, dtype=np.int32)),
                    g.op("Unsqueeze", g.argmax(probabilities), g.ints([-1])))
        anything = g.op("ReduceMax", g.op("Cast", chosen, to=t.INT32), axes=[-1], keepdims=1)
        chosen = g.op("Or", chosen, g.op("And", g.op("Not", g.op("Cast", anything, to=t.BOOL)), best))
    width = ["batch", model.num_labels]
    g.output(logits, "logits", t.FLOAT, width)
    g.output(probabilities, "probabilities", t.FLOAT, width)
    g.output(g.op("Cast", chosen, to=t.INT32), "predictions", t.INT32, width)
    _window_weights(g, weights)


def tagger(g, model, f):
    t = _types(g)
    logits = _head_dense(g, model, f["sequence"])
    tag_ids = g.argmax(logits)
    shape = ["batch", "sequence", model.num_labels]
    g.output(logits, "logits", t.FLOAT, shape)
    g.output(g.op("Softmax", logits, axis=-1), "token_probabilities", t.FLOAT, shape)
    g.output(tag_ids, "token_tag_ids", t.INT32, ["batch", "sequence"])
    g.output(_labels(g, tag_ids, model.label_names), "token_tags", t.STRING, ["batch", "sequence"])


def span_qa(g, model, f):
    """Start and end logits as the model gives them, and per window the best span: start and end
    are context positions (type 1, before the last [SEP]), end >= start, at most
    ``max_answer_length`` tokens, the start among the ``n_best_size`` highest start logits and the
    end among the highest end logits (run_squad.py's candidates; ties to the lower position);
    ranked by start + end logit. The max-context rule needs the windows' layout over the whole
    context and is left to the client (``kbert predict --onnx`` applies it, kbert.tasks.span_qa.postprocess)."""
    t = _types(g)
    logits = _head_dense(g, model, f["sequence"])
    real = g.op("Cast", f["mask"], to=t.BOOL)
    pad = g.scalar(PADDING_LOGIT, np.float32)
    start, end = (g.op("Where", real, g.op("Gather", logits, g.scalar(i, np.int64), axis=-1), pad) for i in (0, 1))
    best_start, best_end, best_score = _best_span(g, start, end, f, model)
    null = g.op("Add", *(g.op("Gather", x, g.scalar(0, np.int64), axis=1) for x in (start, end)))
    g.output(start, "start_logits", t.FLOAT, ["batch", "sequence"])
    g.output(end, "end_logits", t.FLOAT, ["batch", "sequence"])
    g.output(best_start, "best_start", t.INT32, ["batch"])
    g.output(best_end, "best_end", t.INT32, ["batch"])
    g.output(best_score, "best_score", t.FLOAT, ["batch"])
    g.output(null, "null_score", t.FLOAT, ["batch"])


def _top_n(g, logits, n):
    """bool [b, s]: the positions of the ``n`` highest logits of each row (fewer when s < n)."""
    t = _types(g)
    width = g.op("Shape", logits, start=1, end=2)
    k = g.op("Min", width, g.ints([n]))
    _, index = g.op("TopK", logits, k, axis=-1, largest=1, sorted=1, outputs=2)
    marks = g.op("ScatterElements", g.op("ConstantOfShape", g.op("Shape", logits), value=_zero(g, t.INT32)),
                 g.op("Cast", index, to=t.INT64), g.op("Expand", g.scalar(1, np.int32), g.op("Shape", index)), axis=1)
    return g.op("Cast", marks, to=t.BOOL)


def _zero(g, elem_type):
    return g.onnx.helper.make_tensor("zero", elem_type, [1], [0])


def _best_span(g, start, end, f, model):
    t = _types(g)
    length = g.op("ReduceSum", f["mask"], g.ints([1]), keepdims=1)                      # [b, 1]
    width = g.op("Squeeze", g.op("Shape", start, start=1, end=2), g.ints([0]))
    positions = g.op("Range", g.scalar(0, np.int32), g.op("Cast", width, to=t.INT32), g.scalar(1, np.int32))
    before_last = g.op("Less", g.op("Unsqueeze", positions, g.ints([0])), g.op("Sub", length, g.scalar(1, np.int32)))
    context = g.op("And", g.op("And", g.op("Equal", f["types"], g.scalar(1, np.int32)),
                               g.op("Cast", f["mask"], to=t.BOOL)), before_last)      # [b, s]
    starts = g.op("And", context, _top_n(g, start, model.n_best_size))
    ends = g.op("And", context, _top_n(g, end, model.n_best_size))
    offset = g.op("Sub", g.op("Unsqueeze", positions, g.ints([0])), g.op("Unsqueeze", positions, g.ints([1])))
    band = g.op("And", g.op("GreaterOrEqual", offset, g.scalar(0, np.int32)),
                g.op("Less", offset, g.scalar(model.max_answer_length, np.int32)))     # [s, s]: end - start
    valid = g.op("And", g.op("And", g.op("Unsqueeze", starts, g.ints([2])), g.op("Unsqueeze", ends, g.ints([1]))),
                 g.op("Unsqueeze", band, g.ints([0])))                                  # [b, s, s]
    pair = g.op("Add", g.op("Unsqueeze", start, g.ints([2])), g.op("Unsqueeze", end, g.ints([1])))
    scores = g.op("Reshape", g.op("Where", valid, pair, g.scalar(-np.inf, np.float32)), g.ints([0, -1]))
    index = g.argmax(scores)
    found = g.op("Cast", g.op("ReduceMax", g.op("Cast", valid, to=t.INT32), axes=[1, 2], keepdims=0), to=t.BOOL)
    none = g.scalar(-1, np.int32)
    width32 = g.op("Cast", width, to=t.INT32)
    best_start = g.op("Where", found, g.op("Div", index, width32), none)
    best_end = g.op("Where", found, g.op("Mod", index, width32), none)
    best_score = g.op("ReduceMax", scores, axes=[1], keepdims=0)
    return best_start, best_end, best_score


def multiple_choice(g, model, f):
    t = _types(g)
    scores = g.op("Reshape", _head_dense(g, model, f["pooled"]), f["rows"])
    g.output(scores, "logits", t.FLOAT, ["batch", "choices"])
    g.output(g.op("Softmax", scores, axis=-1), "probabilities", t.FLOAT, ["batch", "choices"])
    g.output(g.argmax(scores), "choice_ids", t.INT32, ["batch"])


def encoder(g, config, f):
    """The bare encoder: TF Hub's ``sequence_output`` and ``pooled_output``."""
    t = _types(g)
    g.output(f["sequence"], "sequence_output", t.FLOAT, ["batch", "sequence", config.hidden_size])
    g.output(f["pooled"], "pooled_output", t.FLOAT, ["batch", config.hidden_size])


HEADS = {"text_classifier": classifier, "text_regressor": regressor, "multi_label_classifier": multi_label,
         "token_tagger": tagger, "span_qa": span_qa, "multiple_choice": multiple_choice}
