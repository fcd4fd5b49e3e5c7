"""Model directories by name: ``hf://ORG/NAME[@REVISION]`` wherever a model directory is taken.

The Python counterpart of ``kbert convert hf ORG/NAME DIR --check``: the Hub snapshot is fetched
through ``huggingface_hub`` (its cache, ``HF_TOKEN``, ``HF_HUB_OFFLINE=1``), converted once into a
folder beside the Hugging Face cache (``$HF_HOME/kbert/models--ORG--NAME/COMMIT``, next to
``$HF_HOME/hub``), compared with transformers as ``--check`` does, and reused from then on. A
conversion that fails the check is removed and raised as a ``ConversionError``.
"""

from __future__ import annotations

import os
import pathlib
import shutil

from kbert import model_dir as model_dir_lib
from kbert.api_export import kbert_export
from kbert.convert.names import ConversionError

SCHEME = "hf://"
CHECKED = "kbert-check.txt"  # beside each converted folder: the check's report, written when it passed


def converted_root() -> pathlib.Path:
    """Where converted Hub models live: ``kbert/`` beside the Hugging Face hub cache."""
    from huggingface_hub import constants

    return pathlib.Path(constants.HF_HUB_CACHE).parent / "kbert"


def is_hf_url(model_dir) -> bool:
    return isinstance(model_dir, str) and model_dir.startswith(SCHEME)


@kbert_export("kbert.resolve_model_dir")
def resolve_model_dir(model_dir, *, check: bool = True):
    """The local model directory of ``model_dir``: itself, or for ``hf://ORG/NAME`` its converted copy.

    A Hub name is converted on first use into ``converted_root()/models--ORG--NAME/COMMIT`` and
    reused after (a new revision on the Hub is a new commit, converted anew).

    Args:
        model_dir: a model directory, or ``"hf://ORG/NAME"`` (optionally ``@REVISION``).
        check: compare a new conversion with transformers (``kbert.check_conversion``, needs torch
            and transformers) before it is used, as ``kbert convert hf --check`` does.

    Returns:
        ``model_dir`` unchanged for a folder; the converted folder (a ``pathlib.Path``) for a name.

    Raises:
        kbert.ConversionError: a name not found (online or in the offline cache), a failed check.

    Examples:
        >>> import kbert
        >>> kbert.resolve_model_dir("runs/sst2")
        'runs/sst2'
    """
    if not is_hf_url(model_dir):
        return model_dir
    from kbert.convert import hf
    from kbert.convert.hub import hub_snapshot

    name = model_dir[len(SCHEME):]
    if not name or name.startswith("/"):
        raise ConversionError(f"{model_dir!r}: expected hf://ORG/NAME[@REVISION]")
    snapshot = hub_snapshot(name)
    repo_id = name.partition("@")[0]
    target = converted_root() / f"models--{repo_id.replace('/', '--')}" / snapshot.name
    checked = target.parent / f"{snapshot.name}.{CHECKED}"
    if target.is_dir() and (checked.exists() or not check):
        return target
    hf.convert(snapshot, target, overwrite=True)
    if check:
        from kbert.convert.check import check_conversion

        report = check_conversion(snapshot, target)
        if not report.passed:
            shutil.rmtree(target, ignore_errors=True)
            raise ConversionError(f"{model_dir}: the conversion does not reproduce transformers: "
                                  + "; ".join(report.lines()))
        tmp = checked.with_name(checked.name + f".{os.getpid()}")
        tmp.write_text("\n".join(report.lines()) + "\n", encoding="utf-8")
        os.replace(tmp, checked)
    return target


@kbert_export("kbert.load_encoder")
def load_encoder(model_dir, *args, **kwargs):
    """The ``BertEncoder`` of a model directory (or ``hf://ORG/NAME``), its weights loaded.

    Args:
        model_dir: a model directory (``bert_config.json``, ``encoder.weights.h5``, ``kbert.json``)
            or ``hf://ORG/NAME`` (``resolve_model_dir``).
        *args: passed on to ``kbert.model_dir.load_encoder`` (``dtype``).
        **kwargs: passed on as well: config fields to replace (e.g. ``hidden_dropout_prob``).

    Returns:
        A ``kbert.BertEncoder``.

    Examples:
        >>> import kbert
        >>> model_dir = kbert.random_model_dir("runs/tiny")
        >>> encoder = kbert.load_encoder(model_dir)
        >>> encoder.config.num_hidden_layers, encoder.config.hidden_size
        (2, 128)
    """
    return model_dir_lib.load_encoder(resolve_model_dir(model_dir), *args, **kwargs)


@kbert_export("kbert.load_tokenizer")
def load_tokenizer(model_dir, **kwargs):
    """The tokenizer of a model directory (or ``hf://ORG/NAME``), as its ``kbert.json`` names it.

    Args:
        model_dir: a model directory or ``hf://ORG/NAME`` (``resolve_model_dir``).
        **kwargs: passed on to ``kbert.text.load_tokenizer``.

    Returns:
        A tokenizer layer of the registered type (``kbert.text.BertTokenizer`` for WordPiece).

    Examples:
        >>> import kbert
        >>> tokenizer = kbert.load_tokenizer(kbert.random_model_dir("runs/tiny"))
        >>> type(tokenizer).tokenizer_type, tokenizer.vocab_size
        ('wordpiece', 127)
    """
    from kbert.text.registry import load_tokenizer as load

    return load(resolve_model_dir(model_dir), **kwargs)
