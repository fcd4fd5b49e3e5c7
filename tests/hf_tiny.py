"""Tiny Hugging Face BERT folders written by transformers itself (the independent side of the
conversion tests): config.json, model.safetensors (or pytorch_model.bin), vocab.txt,
tokenizer_config.json."""

import json
import pathlib

from conftest import UNCASED_VOCAB


def make_hf_folder(folder, heads: bool = False, hidden: int = 32, seed: int = 0, safetensors: bool = True,
                   vocab=UNCASED_VOCAB) -> pathlib.Path:
    import torch
    import transformers

    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokens = pathlib.Path(vocab).read_text(encoding="utf-8").splitlines()
    config = transformers.BertConfig(vocab_size=len(tokens), hidden_size=hidden, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=2 * hidden, max_position_embeddings=64)
    torch.manual_seed(seed)
    model = (transformers.BertForPreTraining if heads else transformers.BertModel)(config).eval()
    model.save_pretrained(folder, safe_serialization=safetensors)
    (folder / "vocab.txt").write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "BertTokenizer", "do_lower_case": True}), encoding="utf-8")
    return folder


def hf_cache_entry(hub_cache, repo_id: str, folder, commit: str = "0123456789abcdef0123456789abcdef01234567",
                   ref: str = "main") -> pathlib.Path:
    """``folder``'s files in a Hugging Face cache laid out as huggingface_hub writes it:
    ``models--ORG--NAME/{blobs/<hash>, refs/<ref>, snapshots/<commit>/<file> -> ../../blobs/<hash>}``."""
    import hashlib
    import os

    root = pathlib.Path(hub_cache) / ("models--" + repo_id.replace("/", "--"))
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    (root / "refs").mkdir(exist_ok=True)
    snapshot = root / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    for path in sorted(pathlib.Path(folder).iterdir()):
        data = path.read_bytes()
        blob = hashlib.sha256(data).hexdigest()
        (root / "blobs" / blob).write_bytes(data)
        os.symlink(os.path.join("..", "..", "blobs", blob), snapshot / path.name)
    (root / "refs" / ref).write_text(commit)
    return snapshot


def model_weights(model_dir) -> dict:
    """Every weight of a kbert model directory (encoder and heads) by its path, as numpy arrays."""
    from kbert.model_dir import load_encoder, load_heads

    encoder = load_encoder(model_dir)
    arrays = {v.path: v.numpy() for v in encoder.weights}
    for name, head in load_heads(model_dir, encoder.config).items():
        arrays.update({f"{name}/{v.path}": v.numpy() for v in head.weights})
    return arrays
