"""The metadata files of a model directory, below everything that builds models or tokenizers.

Names, ``kbert.json`` read and written (atomically), file names resolved inside the directory, the
vocabulary's line count and ``bert_config.json``: what any layer may need to read about a model
directory without importing the tokenizer or the models (kbert.model_dir loads and saves those).
"""

from __future__ import annotations

import json
import os
import pathlib
import secrets

from kbert.errors import Error
from kbert.config import BertConfig

CONFIG_FILE = "bert_config.json"
VOCAB_FILE = "vocab.txt"
ENCODER_WEIGHTS = "encoder.weights.h5"
METADATA_FILE = "kbert.json"
FORMAT_VERSION = 1


class ModelDirError(Error, ValueError):
    """A model directory that is missing files or does not match its config."""


def read_metadata(model_dir) -> dict:
    path = pathlib.Path(model_dir) / METADATA_FILE
    if not path.exists():
        return {"format": FORMAT_VERSION, "do_lower_case": True, "heads": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise ModelDirError(f"{path} is not UTF-8 (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ModelDirError(f"{path} is not valid JSON: {e}") from None
    except RecursionError:
        raise ModelDirError(f"{path} nests JSON past Python's recursion limit") from None
    if not isinstance(data, dict) or not isinstance(data.get("heads", {}), dict):
        raise ModelDirError(f"{path}: expected an object with a 'heads' object")
    for name, info in data.get("heads", {}).items():
        if not isinstance(info, dict):
            raise ModelDirError(f"{path}: head {name!r} must be an object, got {info!r}")
        if not isinstance(info.get("weights"), str):
            raise ModelDirError(f"{path}: head {name!r} has no 'weights' file name (got {info.get('weights')!r})")
    data.setdefault("heads", {})
    data.setdefault("do_lower_case", True)
    return data


def is_causal(model_dir) -> bool:
    """Whether ``kbert.json`` says the encoder attends left-only (``"causal": true``, written for a
    ``kbert.BertEncoder(causal=True)``, e.g. a left-to-right language model). Kept out of
    ``bert_config.json``, which stays Google's format; absent means bidirectional."""
    value = read_metadata(model_dir).get("causal", False)
    if not isinstance(value, bool):
        raise ModelDirError(f"{pathlib.Path(model_dir) / METADATA_FILE}: 'causal' must be true or false, got {value!r}")
    return value


def write_metadata(model_dir, metadata: dict) -> None:
    text = json.dumps(metadata, indent=2, sort_keys=True) + "\n"
    atomic_write(pathlib.Path(model_dir) / METADATA_FILE, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def atomic_write(path, write) -> None:
    """Calls ``write(tmp)`` to write a temporary file next to ``path``, fsyncs it, then renames it
    over ``path``: a crash, a full disk or an exception mid-write leaves the previous file intact
    and no temporary file behind (a process killed outright may leave a ``.tmp-*`` file).

    The temporary name ends with ``path``'s own name, so format checks on the suffix (Keras wants
    ``.weights.h5``) pass; it is created by ``write`` itself, so it gets the usual permissions.
    """
    path = pathlib.Path(path)
    tmp = path.with_name(f".tmp-{secrets.token_hex(4)}-{path.name}")
    try:
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)  # the data is on disk before the rename makes it the file
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_path(path.parent)  # and the rename itself (POSIX; not possible on Windows, then skipped)


def fsync_path(path) -> None:
    """fsync a file or directory where the platform allows it (a directory cannot be opened on
    Windows): what a rename or write made is on disk before the caller goes on."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def resolve_file(model_dir, name: str) -> pathlib.Path:
    """A file named inside a model directory; names that escape it are refused."""
    root = pathlib.Path(model_dir).resolve()
    if not isinstance(name, str) or "\x00" in name or name.strip() in ("", ".", "./"):
        raise ModelDirError(f"{name!r} in {root / METADATA_FILE} is not a file name")
    path = (root / name).resolve()
    if root not in path.parents:
        raise ModelDirError(f"{name!r} in {root / METADATA_FILE} points outside the model directory"
                            + (" (or at the directory itself)" if path == root else ""))
    return path


def count_vocab(vocab_file) -> int:
    try:
        with open(vocab_file, encoding="utf-8") as f:
            return sum(1 for _ in f)
    except UnicodeDecodeError as e:
        raise ModelDirError(f"{vocab_file} is not UTF-8 (byte {e.start} of a line)") from None


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
