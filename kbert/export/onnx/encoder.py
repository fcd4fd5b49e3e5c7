"""kbert's BERT encoder as ONNX nodes, from its weights (``kbert.export.onnx.graph.Graph``).

Two forms of the same function:

* ``"ort"`` (default): ONNX Runtime's fused transformer kernels (``com.microsoft`` domain), the
  ones its transformer optimizer makes of a torch export: ``EmbedLayerNormalization`` (word +
  position + type embeddings and their LayerNorm), per block ``Attention`` (Q, K and V as one
  projection, scaled dot-product attention over the raw 0/1 mask), ``SkipLayerNormalization``
  (bias + residual + LayerNorm after both projections) and ``FastGelu`` (kbert's ``gelu``, the tanh
  approximation) or ``BiasGelu`` (``gelu_exact``, erf); other activations are plain ops.
* ``"standard"``: plain ONNX opset-17 operators only (Gather, MatMul, Softmax,
  LayerNormalization, Tanh/Erf, ...), for runtimes without the contrib domain.

Both follow kbert's encoder (``kbert.models.encoder``) exactly: positions 0..seq-1 whatever the
padding, LayerNorm epsilon 1e-12, padded keys masked (kbert adds -1e9 to their scores; ONNX
Runtime's Attention gets that value as ``mask_filter_value``), the pooler a tanh dense layer on
the first position.
"""

from __future__ import annotations

import math

import numpy as np

from kbert.errors import OptionsError
from kbert.export.onnx.graph import Graph
from kbert.export.onnx.runtime import OnnxExportError
from kbert.layers.attention import MASK_FILTER

FORMS = ("ort", "standard")  # the encoder's two forms (the module's docstring)


def encoder_weights(encoder) -> dict:
    """The weights of a built ``kbert.BertEncoder`` as float32 numpy arrays, by role:
    ``embeddings`` (word, position, type, gamma, beta), ``blocks`` (one dict per block) and ``pooler``."""
    def value(variable):
        return np.asarray(variable.numpy(), dtype=np.float32)

    def dense(layer):
        return value(layer.kernel), value(layer.bias)

    def norm(layer):
        return value(layer.gamma), value(layer.beta)

    emb = encoder.embeddings
    blocks = []
    for block in encoder.blocks:
        att = block.attention
        blocks.append({"query": dense(att.query), "key": dense(att.key), "value": dense(att.value),
                       "attention_output": dense(att.output_dense), "attention_norm": norm(block.attention_layer_norm),
                       "intermediate": dense(block.intermediate), "output": dense(block.output_dense),
                       "output_norm": norm(block.output_layer_norm)})
    return {"word": value(emb.word_embeddings.embeddings), "position": value(emb.position_embeddings),
            "type": value(emb.token_type_embeddings.embeddings), "norm": norm(emb.layer_norm),
            "blocks": blocks, "pooler": dense(encoder.pooler)}


def encoder_nodes(g: Graph, weights: dict, config, ids: str, mask: str, types: str, form: str = "ort") -> tuple:
    """Adds the encoder on int32 [batch, seq] ``ids``, ``mask`` and ``types``; returns the names of
    (sequence_output [batch, seq, H], pooled_output [batch, H])."""
    if form not in FORMS:
        raise OptionsError(f"ONNX form must be one of {FORMS}, got {form!r}", option="form", value=form)
    eps = float(_epsilon())
    if form == "ort":
        x = _embeddings_fused(g, weights, ids, types, eps)
    else:
        x = _embeddings_standard(g, weights, ids, types, eps)
        mask = _mask_bias(g, mask)
    for i, block in enumerate(weights["blocks"]):
        block_fn = _block_fused if form == "ort" else _block_standard
        x = block_fn(g, block, config, x, mask, eps, f"layer_{i}")
    first = g.op("Gather", x, g.scalar(0, np.int64), axis=1)
    pooled = g.op("Tanh", g.dense(first, *weights["pooler"], "pooler"))
    return x, pooled


def _epsilon():
    from kbert.layers.normalization import LAYER_NORM_EPSILON

    return LAYER_NORM_EPSILON


# -- ONNX Runtime's fused kernels ---------------------------------------------------------------------
def _embeddings_fused(g, w, ids, types, eps):
    gamma, beta = w["norm"]
    # Its second output (the mask's row sums) is unused: Attention takes the raw mask.
    return g.ms("EmbedLayerNormalization", ids, types, g.const("embeddings/word", w["word"]),
                g.const("embeddings/position", w["position"]), g.const("embeddings/type", w["type"]),
                g.const("embeddings/gamma", gamma), g.const("embeddings/beta", beta), epsilon=eps, outputs=2)[0]


def _skip_norm(g, x, skip, bias, norm, eps, prefix):
    """LayerNorm(x + bias + skip), one SkipLayerNormalization."""
    gamma, beta = norm
    return g.ms("SkipLayerNormalization", x, skip, g.const(f"{prefix}/gamma", gamma), g.const(f"{prefix}/beta", beta),
                g.const(f"{prefix}/bias", bias), epsilon=eps)


def _block_fused(g, w, config, x, mask, eps, prefix):
    kernel = np.concatenate([w[k][0] for k in ("query", "key", "value")], axis=1)
    bias = np.concatenate([w[k][1] for k in ("query", "key", "value")])
    context = g.ms("Attention", x, g.const(f"{prefix}/qkv/kernel", kernel), g.const(f"{prefix}/qkv/bias", bias), mask,
                   num_heads=config.num_attention_heads, mask_filter_value=MASK_FILTER)
    kernel, bias = w["attention_output"]
    projected = g.op("MatMul", context, g.const(f"{prefix}/attention_output/kernel", kernel))
    x = _skip_norm(g, projected, x, bias, w["attention_norm"], eps, f"{prefix}/attention_norm")
    kernel, bias = w["intermediate"]
    hidden = g.op("MatMul", x, g.const(f"{prefix}/intermediate/kernel", kernel))
    hidden = _fused_activation(g, hidden, g.const(f"{prefix}/intermediate/bias", bias), config.hidden_act)
    kernel, bias = w["output"]
    out = g.op("MatMul", hidden, g.const(f"{prefix}/output/kernel", kernel))
    return _skip_norm(g, out, x, bias, w["output_norm"], eps, f"{prefix}/output_norm")


def _fused_activation(g, x, bias, act):
    if act == "gelu":  # tanh approximation: FastGelu computes exactly that formula
        return g.ms("FastGelu", x, bias)
    if act == "gelu_exact":
        return g.ms("BiasGelu", x, bias)
    return _activation(g, g.op("Add", x, bias), act)


# -- plain ONNX --------------------------------------------------------------------------------------
def _embeddings_standard(g, w, ids, types, eps):
    words = g.op("Gather", g.const("embeddings/word", w["word"]), ids)
    kinds = g.op("Gather", g.const("embeddings/type", w["type"]), types)
    length = g.op("Shape", ids, start=1, end=2)
    positions = g.op("Slice", g.const("embeddings/position", w["position"]), g.ints([0]), length, g.ints([0]))
    total = g.op("Add", g.op("Add", words, kinds), positions)
    return _layer_norm(g, total, w["norm"], eps, "embeddings")


def _layer_norm(g, x, norm, eps, prefix):
    gamma, beta = norm
    return g.op("LayerNormalization", x, g.const(f"{prefix}/gamma", gamma), g.const(f"{prefix}/beta", beta),
                axis=-1, epsilon=eps)


def _mask_bias(g, mask):
    """[batch, seq] 0/1 -> additive [batch, 1, 1, seq] float bias (0, or -1e9 for padding)."""
    padding = g.op("Sub", g.scalar(1.0, np.float32), g.op("Cast", mask, to=g.onnx.TensorProto.FLOAT))
    return g.op("Unsqueeze", g.op("Mul", padding, g.scalar(MASK_FILTER, np.float32)), g.ints([1, 2]))


def _heads(g, x, heads, size, perm):
    """[batch, seq, H] -> [batch, heads, ...] transposed by ``perm`` from [batch, seq, heads, size]."""
    return g.op("Transpose", g.op("Reshape", x, g.ints([0, 0, heads, size])), perm=perm)


def _block_standard(g, w, config, x, mask_bias, eps, prefix):
    heads = config.num_attention_heads
    size = config.hidden_size // heads
    q = _heads(g, g.dense(x, *w["query"], f"{prefix}/query"), heads, size, [0, 2, 1, 3])
    k = _heads(g, g.dense(x, *w["key"], f"{prefix}/key"), heads, size, [0, 2, 3, 1])
    v = _heads(g, g.dense(x, *w["value"], f"{prefix}/value"), heads, size, [0, 2, 1, 3])
    scores = g.op("Mul", g.op("MatMul", q, k), g.scalar(1.0 / math.sqrt(size), np.float32))
    probabilities = g.op("Softmax", g.op("Add", scores, mask_bias), axis=-1)
    context = g.op("Transpose", g.op("MatMul", probabilities, v), perm=[0, 2, 1, 3])
    context = g.op("Reshape", context, g.ints([0, 0, config.hidden_size]))
    attended = g.op("Add", g.dense(context, *w["attention_output"], f"{prefix}/attention_output"), x)
    x = _layer_norm(g, attended, w["attention_norm"], eps, f"{prefix}/attention_norm")
    hidden = _activation(g, g.dense(x, *w["intermediate"], f"{prefix}/intermediate"), config.hidden_act)
    out = g.op("Add", g.dense(hidden, *w["output"], f"{prefix}/output"), x)
    return _layer_norm(g, out, w["output_norm"], eps, f"{prefix}/output_norm")


def _activation(g, x, act):
    """``hidden_act`` (kbert.layers.activations) of ``x`` in plain ops."""
    if act == "gelu":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = g.op("Mul", g.op("Mul", x, x), x)
        inner = g.op("Add", x, g.op("Mul", cube, g.scalar(0.044715, np.float32)))
        tanh = g.op("Tanh", g.op("Mul", inner, g.scalar(math.sqrt(2.0 / math.pi), np.float32)))
        return g.op("Mul", g.op("Mul", x, g.scalar(0.5, np.float32)), g.op("Add", tanh, g.scalar(1.0, np.float32)))
    if act == "gelu_exact":  # 0.5 x (1 + erf(x / sqrt(2)))
        erf = g.op("Erf", g.op("Mul", x, g.scalar(1.0 / math.sqrt(2.0), np.float32)))
        return g.op("Mul", g.op("Mul", x, g.scalar(0.5, np.float32)), g.op("Add", erf, g.scalar(1.0, np.float32)))
    if act == "silu":
        return g.op("Mul", x, g.op("Sigmoid", x))
    if act in ("relu", "tanh"):
        return g.op(act.capitalize(), x)
    if act == "linear":
        return x
    raise OnnxExportError(f"no ONNX form for hidden_act {act!r}")
