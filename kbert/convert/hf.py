"""Hugging Face BERT folders -> kbert model directories.

Reads ``config.json``, ``model.safetensors`` (with the ``safetensors`` package, never torch) or
``pytorch_model.bin`` (torch, ``weights_only=True``), ``vocab.txt`` and, when present,
``tokenizer_config.json`` for the tokenizer (``kbert.convert.tokenizer_source``: WordPiece, the
Japanese MeCab tokenizers, SentencePiece; anything else is refused). Keys may carry a ``bert.`` prefix (BertForPreTraining,
BertForMaskedLM) or not (BertModel). MLM and NSP heads are converted when present.
"""

from __future__ import annotations

import pathlib
import re

import numpy as np

from kbert.config import BertConfig
from kbert.convert.common import check_output_dir, write_model_dir
from kbert.convert.inputs import input_file, read_json_object, typed
from kbert.convert.names import ConversionError
from kbert.convert.tokenizer_source import read_hf_tokenizer
from kbert.layers.normalization import LAYER_NORM_EPSILON

# transformers' activation names -> kbert's (Google semantics: kbert's "gelu" is the tanh form).
HF_ACTIVATIONS = {
    "gelu": "gelu_exact",
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_fast": "gelu",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
    "tanh": "tanh",
    "linear": "linear",
}

_LAYER_RULES = [
    (r"attention\.self\.(query|key|value)\.", r"attention/self/\1/"),
    (r"attention\.output\.dense\.", "attention/output/dense/"),
    (r"attention\.output\.LayerNorm\.", "attention/output/LayerNorm/"),
    (r"intermediate\.dense\.", "intermediate/dense/"),
    (r"output\.dense\.", "output/dense/"),
    (r"output\.LayerNorm\.", "output/LayerNorm/"),
]
_SUFFIX = {"weight": "kernel", "bias": "bias", "gamma": "gamma", "beta": "beta"}
_LN_SUFFIX = {"weight": "gamma", "bias": "beta", "gamma": "gamma", "beta": "beta"}
# Buffers and tied copies, not weights of their own (checked, not silently dropped: see below).
_BUFFERS = ("embeddings.position_ids",)


def config_from_hf(hf: dict, source: str) -> BertConfig:
    model_type = typed(hf, "model_type", str, source, "bert")
    if model_type != "bert":
        raise ConversionError(f"{source}: model_type is {model_type!r}, expected 'bert'")
    act = typed(hf, "hidden_act", str, source, "gelu")
    if act not in HF_ACTIVATIONS:
        raise ConversionError(f"{source}: hidden_act {act!r} is not supported ({', '.join(HF_ACTIVATIONS)})")
    eps = typed(hf, "layer_norm_eps", float, source, LAYER_NORM_EPSILON)
    if abs(eps - LAYER_NORM_EPSILON) > 1e-15:
        raise ConversionError(f"{source}: layer_norm_eps is {eps}; BERT (and kbert) use {LAYER_NORM_EPSILON}")
    position = typed(hf, "position_embedding_type", str, source, "absolute")
    if position != "absolute":
        raise ConversionError(f"{source}: position_embedding_type {position!r}; only 'absolute' is BERT")
    fields = {k: hf[k] for k in BertConfig.__dataclass_fields__ if k in hf}
    for name in fields:  # each field's type is its default's (int, float or str)
        typed(fields, name, type(BertConfig.__dataclass_fields__[name].default), source)
    fields["hidden_act"] = HF_ACTIVATIONS[act]
    return BertConfig.from_dict(fields, source=source)


def google_name(key: str) -> str | None:
    """HF state-dict key -> Google variable name (None for buffers)."""
    if key.startswith("bert."):
        key = key[len("bert."):]
    if key in _BUFFERS:
        return None
    m = re.fullmatch(r"embeddings\.(word|position|token_type)_embeddings\.weight", key)
    if m:
        return f"bert/embeddings/{m.group(1)}_embeddings"
    m = re.fullmatch(r"embeddings\.LayerNorm\.(weight|bias|gamma|beta)", key)
    if m:
        return f"bert/embeddings/LayerNorm/{_LN_SUFFIX[m.group(1)]}"
    m = re.fullmatch(r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias|gamma|beta)", key)
    if m:
        index, middle, suffix = m.groups()
        for pattern, replacement in _LAYER_RULES:
            if re.fullmatch(pattern, middle + "."):
                path = re.sub(pattern, replacement, middle + ".")
                table = _LN_SUFFIX if "LayerNorm" in path else _SUFFIX
                return f"bert/encoder/layer_{index}/{path}{table[suffix]}"
    m = re.fullmatch(r"pooler\.dense\.(weight|bias)", key)
    if m:
        return f"bert/pooler/dense/{_SUFFIX[m.group(1)]}"
    m = re.fullmatch(r"cls\.predictions\.transform\.dense\.(weight|bias)", key)
    if m:
        return f"cls/predictions/transform/dense/{_SUFFIX[m.group(1)]}"
    m = re.fullmatch(r"cls\.predictions\.transform\.LayerNorm\.(weight|bias|gamma|beta)", key)
    if m:
        return f"cls/predictions/transform/LayerNorm/{_LN_SUFFIX[m.group(1)]}"
    if key == "cls.predictions.bias":
        return "cls/predictions/output_bias"
    if key in ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias"):
        return None  # tied copies; verified in hf_to_google
    m = re.fullmatch(r"cls\.seq_relationship\.(weight|bias)", key)
    if m:
        return f"cls/seq_relationship/output_{'weights' if m.group(1) == 'weight' else 'bias'}"
    raise ConversionError(f"unknown Hugging Face BERT weight {key!r}")


def hf_to_google(state: dict, source: str) -> dict:
    arrays, unknown = {}, []
    for key, value in state.items():
        try:
            name = google_name(key)
        except ConversionError:
            unknown.append(key)
            continue
        if name is None:
            continue
        value = np.asarray(value, dtype=np.float32)
        # nn.Linear stores [out, in]; Google's dense kernels are [in, out]. The NSP matrix is [2, H]
        # in both.
        if name.endswith("/kernel"):
            value = value.T
        arrays[name] = np.ascontiguousarray(value)
    if unknown:
        raise ConversionError(f"{source} holds weights that are not BERT's: {', '.join(sorted(unknown))}")
    _check_tied(state, arrays, source)
    return arrays


def _check_tied(state, arrays, source):
    decoder = state.get("cls.predictions.decoder.weight")
    if decoder is not None and not np.array_equal(np.asarray(decoder), arrays["bert/embeddings/word_embeddings"]):
        raise ConversionError(
            f"{source}: cls.predictions.decoder.weight differs from the word embeddings; BERT ties them"
        )
    bias = state.get("cls.predictions.decoder.bias")
    if bias is not None and "cls/predictions/output_bias" in arrays:
        if not np.array_equal(np.asarray(bias), arrays["cls/predictions/output_bias"]):
            raise ConversionError(f"{source}: cls.predictions.decoder.bias differs from cls.predictions.bias")
    elif bias is not None:
        arrays["cls/predictions/output_bias"] = np.asarray(bias, dtype=np.float32)


def load_state(hf_dir: pathlib.Path) -> tuple[dict, str]:
    st = input_file(hf_dir, "model.safetensors")
    if st is not None:
        from safetensors.numpy import load_file

        try:
            return load_file(str(st)), str(st)
        except Exception as e:  # noqa: BLE001 - SafetensorError and friends: a damaged or foreign file
            raise ConversionError(f"{st} is not a readable safetensors file: {e}") from None
    pt = input_file(hf_dir, "pytorch_model.bin")
    if pt is not None:
        try:
            import torch
        except ImportError:
            raise ConversionError(
                f"{pt} is a PyTorch file and torch is not installed; install torch or save the model "
                "as model.safetensors"
            ) from None
        # weights_only=True: a checkpoint must never execute code while loading. torch's own message
        # for a refused file suggests weights_only=False; ours does not.
        try:
            state = torch.load(str(pt), map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - UnpicklingError, RuntimeError (not a torch file), ...
            reason = next((line.strip() for line in str(e).splitlines() if "GLOBAL" in line), "")
            raise ConversionError(
                f"{pt} was refused: it is not a plain tensor checkpoint that loads with weights_only=True"
                + (f" ({reason})" if reason else f" ({type(e).__name__})")
                + ". Files that need arbitrary Python objects can run code; kbert never loads them. "
                "Use model.safetensors instead") from None
        if not isinstance(state, dict) or not all(hasattr(v, "numpy") for v in state.values()):
            raise ConversionError(f"{pt} does not hold a state dict of tensors")
        return {k: v.float().numpy() for k, v in state.items()}, str(pt)
    raise ConversionError(f"{hf_dir} holds neither model.safetensors nor pytorch_model.bin")


def convert(hf_dir, out_dir, overwrite: bool = False) -> pathlib.Path:
    """``out_dir`` is written whole or not at all; one that exists and is not empty is refused
    unless ``overwrite`` (then its old content is replaced whole)."""
    hf_dir = pathlib.Path(hf_dir)
    out_dir = pathlib.Path(out_dir)
    root, out = hf_dir.resolve(), out_dir.resolve()
    if out == root or out in root.parents or root in out.parents:
        raise ConversionError(f"the output {out_dir} is (or holds, or is inside) the input folder {hf_dir}; "
                              "name another directory")
    check_output_dir(out_dir, overwrite)
    config_path = hf_dir / "config.json"
    hf_config = read_json_object(hf_dir, "config.json")
    if hf_config is None:
        raise ConversionError(f"{hf_dir} has no config.json")
    config = config_from_hf(hf_config, str(config_path))
    state, source = load_state(hf_dir)
    arrays = hf_to_google(state, source)
    spec, vocab_file = read_hf_tokenizer(hf_dir)
    vocab_file = pathlib.Path(vocab_file)
    if vocab_file.parent.resolve() == root:
        vocab_file = input_file(hf_dir, vocab_file.name) or vocab_file  # not there: write_model_dir says so
    return write_model_dir(config, arrays, vocab_file, out_dir, spec, source, overwrite=overwrite)
