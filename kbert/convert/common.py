"""Build a kbert model directory from Google-named arrays (shared by every converter)."""

from __future__ import annotations

import os
import pathlib

from kbert.config import BertConfig
from kbert.convert.names import ConversionError, assign, encoder_variables, head_variables, heads_present
from kbert.layers.heads import build_head
from kbert.model_dir import METADATA_FILE, count_vocab, replace_dir, save_model_dir


def check_output_dir(out_dir, overwrite: bool = False) -> None:
    """A converter writes a new model directory: ``out_dir`` must not exist or be empty, unless
    ``overwrite`` (its old content is then replaced whole: ``kbert.model_dir.replace_dir``)."""
    out_dir = pathlib.Path(out_dir)
    if not os.path.lexists(out_dir):
        return
    if not out_dir.is_dir() or out_dir.is_symlink():
        raise ConversionError(f"the output {out_dir} exists and is not a directory; name another directory")
    if overwrite or not any(out_dir.iterdir()):
        return
    what = "a model (kbert.json)" if (out_dir / METADATA_FILE).exists() else "files"
    raise ConversionError(f"the output {out_dir} already holds {what}; pass --overwrite to replace its content "
                          "whole, or name another directory")


def write_model_dir(config: BertConfig, arrays: dict, vocab_file, out_dir, tokenizer_spec, source: str,
                    overwrite: bool = False):
    """``tokenizer_spec``: the ``TokenizerSpec`` recorded in ``kbert.json`` (a bool is the older
    ``do_lower_case``: WordPiece); ``vocab_file`` is saved as its ``vocab_file``.

    The directory is written whole into a temporary sibling and renamed into place: a failure
    leaves ``out_dir`` as it was. An existing ``out_dir`` that is not empty is refused unless
    ``overwrite``, which replaces its content whole (files of an older model never remain)."""
    out_dir = pathlib.Path(out_dir)
    check_output_dir(out_dir, overwrite)
    from kbert.models import BertEncoder
    from kbert.text.spec import TokenizerSpec

    if isinstance(tokenizer_spec, bool):
        tokenizer_spec = TokenizerSpec(lower_case=tokenizer_spec)

    vocab_file = pathlib.Path(vocab_file)
    if not vocab_file.exists():
        raise ConversionError(f"vocab file not found: {vocab_file}")
    # A one-token-per-line vocabulary must match the embeddings (a SentencePiece model is binary).
    n_vocab = count_vocab(vocab_file) if vocab_file.suffix == ".txt" else None
    table = arrays.get("bert/embeddings/word_embeddings")
    rows = None if table is None else table.shape[0]
    if len({n_vocab, rows, config.vocab_size} - {None}) > 1:
        raise ConversionError(
            f"vocabulary sizes differ: {vocab_file} has {n_vocab} tokens, the word embeddings in "
            f"{source} have {rows} rows, the config says vocab_size={config.vocab_size}"
        )
    encoder = BertEncoder(config)
    variables = encoder_variables(encoder)
    heads = {}
    for name in heads_present(arrays):
        heads[name] = build_head(name, config)
        variables.update(head_variables(name, heads[name]))
    assign(variables, arrays, source)
    replace_dir(out_dir, lambda new_dir: save_model_dir(
        new_dir,
        encoder,
        tokenizer_spec=tokenizer_spec,
        asset_files={tokenizer_spec.vocab_file: vocab_file},
        heads={name: (layer, {"type": name}) for name, layer in heads.items()},
    ))
    return out_dir
