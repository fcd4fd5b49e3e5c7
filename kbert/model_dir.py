"""A model directory: one folder = one model.

    bert_config.json     Google's format (kbert.BertConfig)
    vocab.txt            one token per line, id = line number
    encoder.weights.h5   the encoder's weights (Keras format)
    kbert.json           {"format": 1, "do_lower_case": bool, "heads": {name: {...}}}
    <head>.weights.h5    one file per head listed in kbert.json (mlm, nsp, task heads)

``kbert.json`` is kbert's own metadata (DESIGN.md sketched it as ``heads.json``): it also
records ``do_lower_case``, which Google's directories leave to the user to know.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil

from kbert.config import BertConfig

CONFIG_FILE = "bert_config.json"
VOCAB_FILE = "vocab.txt"
ENCODER_WEIGHTS = "encoder.weights.h5"
METADATA_FILE = "kbert.json"
FORMAT_VERSION = 1


class ModelDirError(ValueError):
    """A model directory that is missing files or does not match its config."""


def read_metadata(model_dir) -> dict:
    path = pathlib.Path(model_dir) / METADATA_FILE
    if not path.exists():
        return {"format": FORMAT_VERSION, "do_lower_case": True, "heads": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ModelDirError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("heads", {}), dict):
        raise ModelDirError(f"{path}: expected an object with a 'heads' object")
    data.setdefault("heads", {})
    data.setdefault("do_lower_case", True)
    return data


def write_metadata(model_dir, metadata: dict) -> None:
    path = pathlib.Path(model_dir) / METADATA_FILE
    path.write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def resolve_file(model_dir, name: str) -> pathlib.Path:
    """A file named inside a model directory; names that escape it are refused."""
    root = pathlib.Path(model_dir).resolve()
    path = (root / name).resolve()
    if root != path and root not in path.parents:
        raise ModelDirError(f"{name!r} in {root / METADATA_FILE} points outside the model directory")
    return path


def count_vocab(vocab_file) -> int:
    with open(vocab_file, encoding="utf-8") as f:
        return sum(1 for _ in f)


def check_files(model_dir) -> None:
    model_dir = pathlib.Path(model_dir)
    if not model_dir.is_dir():
        raise ModelDirError(f"model directory not found: {model_dir}")
    missing = [n for n in (CONFIG_FILE, VOCAB_FILE, ENCODER_WEIGHTS) if not (model_dir / n).exists()]
    if missing:
        raise ModelDirError(f"model directory {model_dir} is missing: {', '.join(missing)}")


def load_config(model_dir) -> BertConfig:
    model_dir = pathlib.Path(model_dir)
    config = BertConfig.from_json_file(model_dir / CONFIG_FILE)
    vocab_file = model_dir / VOCAB_FILE
    if vocab_file.exists():
        n = count_vocab(vocab_file)
        if n != config.vocab_size:
            raise ModelDirError(
                f"{vocab_file} has {n} tokens but {model_dir / CONFIG_FILE} says vocab_size={config.vocab_size}"
            )
    return config


def load_encoder(model_dir, dtype=None, **overrides):
    """Builds a BertEncoder from ``bert_config.json`` and loads ``encoder.weights.h5``.

    ``overrides`` replace config fields (e.g. dropout rates for fine-tuning).
    """
    from kbert.models import BertEncoder

    check_files(model_dir)
    config = load_config(model_dir)
    if overrides:
        config = BertConfig(**{**config.to_dict(), **overrides})
    encoder = BertEncoder(config, dtype=dtype)
    path = pathlib.Path(model_dir) / ENCODER_WEIGHTS
    try:
        encoder.load_weights(path)
    except ValueError as e:
        raise ModelDirError(f"{path} does not fit the architecture in {CONFIG_FILE}: {e}") from None
    return encoder


def save_model_dir(model_dir, encoder, vocab_file=None, vocab=None, do_lower_case=True, heads=None):
    """Writes config, vocab, encoder weights and metadata; ``heads`` maps name -> (layer, info)."""
    model_dir = pathlib.Path(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    config = encoder.config
    encoder.config.to_json_file(model_dir / CONFIG_FILE)
    target = model_dir / VOCAB_FILE
    if vocab_file is not None:
        if pathlib.Path(vocab_file).resolve() != target.resolve():
            shutil.copyfile(vocab_file, target)
    elif vocab is not None:
        target.write_text("".join(t + "\n" for t in vocab), encoding="utf-8")
    if target.exists() and count_vocab(target) != config.vocab_size:
        raise ModelDirError(
            f"vocab has {count_vocab(target)} tokens but the encoder's vocab_size is {config.vocab_size}"
        )
    _atomic_save_weights(encoder, model_dir / ENCODER_WEIGHTS)
    metadata = read_metadata(model_dir)
    metadata.update(format=FORMAT_VERSION, do_lower_case=bool(do_lower_case))
    for name, (layer, info) in (heads or {}).items():
        filename = f"{name}.weights.h5"
        _atomic_save_weights(layer, model_dir / filename)
        metadata["heads"][name] = {"weights": filename, **(info or {})}
    write_metadata(model_dir, metadata)
    return model_dir


def _atomic_save_weights(layer, path: pathlib.Path) -> None:
    """Write to a temporary name, then rename: a crash mid-write leaves the old file intact."""
    tmp = path.with_name(path.name[: -len(".weights.h5")] + ".tmp.weights.h5")
    try:
        save_weights(layer, tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a half-written file (disk full, killed) must not stay behind
        raise
    os.replace(tmp, path)


# keras.Layer (unlike keras.Model) has no public save_weights/load_weights; these are the functions
# Model.save_weights/load_weights call, so heads get the same .weights.h5 format as the encoder.
def save_weights(layer, path) -> None:
    from keras.src.saving import saving_lib

    saving_lib.save_weights_only(layer, str(path))


def load_weights(layer, path) -> None:
    from keras.src.saving import saving_lib

    saving_lib.load_weights_only(layer, str(path))


def load_heads(model_dir, config: BertConfig | None = None, names=None) -> dict:
    """The pre-training heads (``mlm``, ``nsp``) that ``kbert.json`` lists, with their weights."""
    from kbert.layers.heads import build_head

    config = config or load_config(model_dir)
    heads = {}
    for name, info in read_metadata(model_dir)["heads"].items():
        if info.get("type", name) not in ("mlm", "nsp") or (names is not None and name not in names):
            continue
        path = resolve_file(model_dir, info["weights"])
        if not path.exists():
            raise ModelDirError(f"{model_dir / METADATA_FILE} lists head {name!r} but {path} is missing")
        head = build_head(info.get("type", name), config)
        try:
            load_weights(head, path)
        except ValueError as e:
            raise ModelDirError(f"{path} does not fit head {name!r} of {CONFIG_FILE}: {e}") from None
        heads[name] = head
    return heads
