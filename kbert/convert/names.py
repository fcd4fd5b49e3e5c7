"""kbert variables <-> Google's TF1 names; all converters go through Google's names.

Google layout (``bert/...`` and ``cls/...``): dense kernels [in, out]; LayerNorm ``gamma``/``beta``;
``cls/seq_relationship/output_weights`` is [2, H] (used transposed).
"""

from __future__ import annotations

import numpy as np

from kbert.errors import Error
from kbert.api_export import kbert_export

# Google names whose kbert weight is stored transposed.
TRANSPOSED = ("cls/seq_relationship/output_weights",)

# Variables a Google checkpoint holds that are not model weights (optimizer state, step).
NON_MODEL_SUFFIXES = ("/adam_m", "/adam_v", "/Momentum", "/lamb_m", "/lamb_v")
NON_MODEL_NAMES = ("global_step", "good_steps", "loss_scale")


@kbert_export("kbert.ConversionError")
class ConversionError(Error, ValueError):
    """A checkpoint, folder or name that cannot be converted: the message says which file and why.

    Examples:
        >>> import kbert
        >>> issubclass(kbert.ConversionError, ValueError)
        True
    """


def _dense(prefix, layer):
    return {f"{prefix}/kernel": layer.kernel, f"{prefix}/bias": layer.bias}


def _layer_norm(prefix, layer):
    return {f"{prefix}/gamma": layer.gamma, f"{prefix}/beta": layer.beta}


def encoder_variables(encoder) -> dict:
    """Google name -> keras Variable for every weight of a BertEncoder (pooler included)."""
    emb = encoder.embeddings
    names = {
        "bert/embeddings/word_embeddings": emb.word_embeddings.embeddings,
        "bert/embeddings/token_type_embeddings": emb.token_type_embeddings.embeddings,
        "bert/embeddings/position_embeddings": emb.position_embeddings,
        **_layer_norm("bert/embeddings/LayerNorm", emb.layer_norm),
    }
    for i, block in enumerate(encoder.blocks):
        p = f"bert/encoder/layer_{i}"
        att = block.attention
        names.update(_dense(f"{p}/attention/self/query", att.query))
        names.update(_dense(f"{p}/attention/self/key", att.key))
        names.update(_dense(f"{p}/attention/self/value", att.value))
        names.update(_dense(f"{p}/attention/output/dense", att.output_dense))
        names.update(_layer_norm(f"{p}/attention/output/LayerNorm", block.attention_layer_norm))
        names.update(_dense(f"{p}/intermediate/dense", block.intermediate))
        names.update(_dense(f"{p}/output/dense", block.output_dense))
        names.update(_layer_norm(f"{p}/output/LayerNorm", block.output_layer_norm))
    names.update(_dense("bert/pooler/dense", encoder.pooler))
    return names


def head_variables(name, head) -> dict:
    if name == "mlm":
        return {
            **_dense("cls/predictions/transform/dense", head.transform),
            **_layer_norm("cls/predictions/transform/LayerNorm", head.layer_norm),
            "cls/predictions/output_bias": head.output_bias,
        }
    if name == "nsp":
        return {
            "cls/seq_relationship/output_weights": head.dense.kernel,
            "cls/seq_relationship/output_bias": head.dense.bias,
        }
    raise ConversionError(f"no Google names for head {name!r}")


HEAD_PREFIXES = {"mlm": "cls/predictions/", "nsp": "cls/seq_relationship/"}


def heads_present(names) -> list:
    return [h for h, prefix in HEAD_PREFIXES.items() if any(n.startswith(prefix) for n in names)]


def is_model_weight(name: str) -> bool:
    return not (name in NON_MODEL_NAMES or name.endswith(NON_MODEL_SUFFIXES))


def to_keras_layout(name, array):
    return np.ascontiguousarray(array.T) if name in TRANSPOSED else array


def to_google_layout(name, array):
    return np.ascontiguousarray(array.T) if name in TRANSPOSED else array


def assign(variables: dict, arrays: dict, source: str) -> None:
    """Assigns Google-named arrays to variables; any difference at all is an error listing them."""
    missing = sorted(set(variables) - set(arrays))
    extra = sorted(set(arrays) - set(variables))
    shapes = []
    for name in sorted(set(variables) & set(arrays)):
        want = tuple(variables[name].shape)
        got = tuple(to_keras_layout(name, arrays[name]).shape)
        if want != got:
            shapes.append(f"{name}: checkpoint {got}, model {want}")
    problems = []
    if missing:
        problems.append(f"missing from {source} ({len(missing)}): " + ", ".join(missing))
    if extra:
        problems.append(f"not used by the model ({len(extra)}): " + ", ".join(extra))
    if shapes:
        problems.append("wrong shapes: " + "; ".join(shapes))
    if problems:
        raise ConversionError(f"weights in {source} don't match the model:\n  " + "\n  ".join(problems))
    for name, var in variables.items():
        value = to_keras_layout(name, np.asarray(arrays[name]))
        var.assign(value.astype(var.dtype if isinstance(var.dtype, str) else "float32"))


def export_arrays(variables: dict) -> dict:
    return {name: to_google_layout(name, np.asarray(var.numpy())) for name, var in variables.items()}
