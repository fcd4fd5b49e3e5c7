"""Build a kbert model directory from Google-named arrays (shared by every converter)."""

from __future__ import annotations

import pathlib

from kbert.config import BertConfig
from kbert.convert.names import ConversionError, assign, encoder_variables, head_variables, heads_present
from kbert.layers.heads import build_head
from kbert.model_dir import count_vocab, save_model_dir


def write_model_dir(config: BertConfig, arrays: dict, vocab_file, out_dir, tokenizer_spec, source: str):
    """``tokenizer_spec``: the ``TokenizerSpec`` recorded in ``kbert.json`` (a bool is the older
    ``do_lower_case``: WordPiece)."""
    from kbert.models import BertEncoder
    from kbert.model_dir import read_metadata, write_metadata
    from kbert.text.spec import TokenizerSpec

    if isinstance(tokenizer_spec, bool):
        tokenizer_spec = TokenizerSpec(lower_case=tokenizer_spec)

    vocab_file = pathlib.Path(vocab_file)
    if not vocab_file.exists():
        raise ConversionError(f"vocab file not found: {vocab_file}")
    n_vocab = count_vocab(vocab_file)
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
    save_model_dir(
        out_dir,
        encoder,
        vocab_file=vocab_file,
        do_lower_case=tokenizer_spec.lower_case,
        heads={name: (layer, {"type": name}) for name, layer in heads.items()},
    )
    metadata = read_metadata(out_dir)
    metadata["tokenizer"] = tokenizer_spec.to_json()
    write_metadata(out_dir, metadata)
    return pathlib.Path(out_dir)
