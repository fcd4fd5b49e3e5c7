"""The converters as one call each: a Hugging Face folder or Hub name, a Google release (URL, zip,
folder or checkpoint prefix). ``kbert convert hf|google`` is these functions plus flag parsing;
``kbert.to_google`` (the other direction) is ``kbert.convert.google.to_google``."""

from __future__ import annotations

import pathlib

from kbert.api_export import kbert_export
from kbert.convert import google, hf
from kbert.convert.common import check_output_dir
from kbert.convert.download import download, is_url, sha256_of
from kbert.convert.hub import hub_snapshot, is_hub_name
from kbert.convert.names import ConversionError
from kbert.convert.tokenizer_source import DEFAULT_MECAB_DIC


def hf_source(source) -> pathlib.Path:
    """The local folder of ``source``: the folder itself, or a Hub name's snapshot (fetched if needed)."""
    if is_hub_name(str(source)):
        return hub_snapshot(str(source))
    folder = pathlib.Path(source)
    if not folder.is_dir():
        raise ConversionError(f"Hugging Face model directory {folder} does not exist")
    return folder


@kbert_export("kbert.convert_hf")
def convert_hf(source, out_dir, *, overwrite: bool = False, check: bool = False) -> pathlib.Path:
    """Converts a Hugging Face BERT (a folder, or a Hub name ``ORG/NAME[@REVISION]``) to a model directory.

    A name is fetched through ``huggingface_hub`` into its cache (``HF_HOME``, ``HF_TOKEN`` and
    ``HF_HUB_OFFLINE=1`` apply). The directory is written whole or not at all.

    Args:
        source: a folder holding ``config.json``, the tokenizer's files and the weights, or a Hub name.
        out_dir: the model directory to write; one that holds files is refused unless ``overwrite``.
        overwrite: replace the content of an existing ``out_dir``, whole.
        check: compare the result with transformers (``kbert.check_conversion``; needs torch and
            transformers) and raise when ids or outputs differ.

    Returns:
        The model directory, a ``pathlib.Path``.

    Raises:
        kbert.ConversionError: an unreadable or unsupported source, a failed check.

    Examples:
        >>> import kbert
        >>> kbert.convert_hf("no-such-folder/", "runs/x")
        Traceback (most recent call last):
        ...
        kbert.convert.names.ConversionError: Hugging Face model directory no-such-folder does not exist
    """
    check_output_dir(out_dir, overwrite)  # before any download
    folder = hf_source(source)
    out = hf.convert(folder, out_dir, overwrite=overwrite)
    if check:
        from kbert.convert.check import check_conversion

        report = check_conversion(folder, out)
        if not report.passed:
            raise ConversionError(f"{out} does not reproduce transformers on {folder}: " + "; ".join(report.lines()))
    return pathlib.Path(out)


def release_zip(source, sha256: str | None = None, progress: bool = True) -> tuple[pathlib.Path, str]:
    """``(zip on disk, its sha256)``: a URL is downloaded (with resume) first; a ``sha256`` that
    differs is a ``ConversionError``."""
    if is_url(str(source)):
        return download(str(source), sha256=sha256, progress=progress)
    path = pathlib.Path(source)
    if not path.is_file():
        raise ConversionError(f"release zip {path} does not exist")
    digest = sha256_of(path)
    if sha256 and digest != sha256.lower():
        raise ConversionError(f"{path} has sha256 {digest}, expected {sha256.lower()}")
    return path, digest


@kbert_export("kbert.convert_google")
def convert_google(source, out_dir, *, sha256: str | None = None, config_file=None, vocab_file=None,
                   cased: bool | None = None, tokenizer: str = "wordpiece", mecab_dic: str = DEFAULT_MECAB_DIC,
                   overwrite: bool = False, progress: bool = True) -> pathlib.Path:
    """Converts a google-research/bert release (TF1 checkpoint) to a model directory.

    Args:
        source: a release zip's URL (downloaded with resume into kbert's cache) or path, a release
            folder, or a checkpoint prefix (``.../bert_model.ckpt``).
        out_dir: the model directory to write; one that holds files is refused unless ``overwrite``.
        sha256: the zip's expected SHA-256 (a URL or a ``.zip`` only).
        config_file: ``bert_config.json``, default: beside the checkpoint.
        vocab_file: the vocabulary, default: beside the checkpoint.
        cased: True for a cased vocabulary; None takes it from a known release's name (else uncased).
        tokenizer: the tokenizer type the checkpoint was trained with (``wordpiece``,
            ``mecab-wordpiece``, ``mecab-character``, ``sentencepiece``).
        mecab_dic: the MeCab dictionary of the ``mecab-*`` types.
        overwrite: replace the content of an existing ``out_dir``, whole.
        progress: show a download progress bar.

    Returns:
        The model directory, a ``pathlib.Path``.

    Raises:
        kbert.ConversionError: a missing or damaged source, a checksum that differs.

    Examples:
        >>> import kbert
        >>> kbert.convert_google("missing.zip", "runs/x")
        Traceback (most recent call last):
        ...
        kbert.convert.names.ConversionError: release zip missing.zip does not exist
    """
    check_output_dir(out_dir, overwrite)
    if is_url(str(source)) or str(source).endswith(".zip"):
        source, _ = release_zip(source, sha256, progress)
    elif sha256:
        raise ConversionError("a sha256 checks a release zip (a URL or a .zip path)")
    do_lower_case = None if cased is None else not cased
    return pathlib.Path(google.convert(source, out_dir, config_file, vocab_file, do_lower_case, tokenizer=tokenizer,
                                       mecab_dic=mecab_dic, overwrite=overwrite))
