"""python -m kbert.tokenize SOURCE [--tokenizer TYPE] [--cased] < texts.txt > tokens.jsonl

Shows how a tokenizer splits texts (as ``spm_encode`` does for SentencePiece): reads UTF-8 lines on
stdin and writes one JSON object per line, {"ids": [...], "tokens": [...]}, without special tokens
([CLS], [SEP]) around them. A special token written in a line is kept as the tokenizer treats it.

SOURCE is
  * a kbert model directory (its kbert.json names the tokenizer);
  * a Hugging Face tokenizer folder (tokenizer_config.json: BertTokenizer and its options,
    BertJapaneseTokenizer with MeCab, or a SentencePiece model; or a tokenizer.json alone);
  * a vocab.txt (WordPiece; --tokenizer mecab-wordpiece or mecab-character for a Japanese one,
    --cased for a cased WordPiece vocabulary);
  * a SentencePiece .model.
--tokenizer names the type for a file; for a directory it must agree with what the directory says.

--words writes {"words": ...} instead: what an export of the model takes in place of the line (for
the mecab-* types the list of its MeCab words, ["吾輩", "は", ...]: one row of the export's
string [batch, words] input, kbert.tasks.core.words_inputs; for the in-graph types the line itself).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

BATCH_LINES = 256


def main(argv=None) -> int:
    from kbert.cli_support import ArgumentParser, prog

    parser = ArgumentParser(prog=prog("tokenize"), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", metavar="SOURCE", help="model directory, Hugging Face folder, vocab.txt or .model")
    parser.add_argument("--tokenizer", metavar="TYPE",
                        help="wordpiece, mecab-wordpiece, mecab-character, sentencepiece (default: from SOURCE; "
                             "wordpiece for a vocab.txt, sentencepiece for a .model)")
    parser.add_argument("--cased", action="store_true", help="a cased WordPiece vocabulary (no lower-casing)")
    parser.add_argument("--words", action="store_true",
                        help='write {"words": ...}: what an export takes for each line (the list of MeCab words for '
                             'mecab-*, the line for in-graph types)')
    args = parser.parse_args(argv)
    source = pathlib.Path(args.source)
    if not source.exists():
        parser.error(f"SOURCE {args.source}: no such file or directory")

    # Heavy imports (TensorFlow) only now: --help and argument errors stay fast. A tokenizer that
    # cannot be opened is a kbert.Error, one line through kbert.cli_support.run.
    tokenizer = open_tokenizer(source, args.tokenizer, args.cased)
    out = sys.stdout
    write = write_words if args.words else write_batch
    batch = []
    for line in sys.stdin.buffer:
        batch.append(line.rstrip(b"\n").rstrip(b"\r"))
        if len(batch) == BATCH_LINES:
            write(tokenizer, batch, out)
            batch = []
    if batch:
        write(tokenizer, batch, out)
    out.flush()
    return 0


def open_tokenizer(source, tokenizer_type=None, cased=False):
    """The tokenizer SOURCE describes (see the module docstring)."""
    from kbert.convert.tokenizer_source import TOKENIZER_CONFIG, TOKENIZER_JSON, read_hf_tokenizer, spec_for_type
    from kbert.model_dir import METADATA_FILE, read_tokenizer_spec
    from kbert.text.registry import create_tokenizer
    from kbert.text.spec import TokenizerSpecError

    source = pathlib.Path(source)
    if source.is_dir():
        hf_files = (TOKENIZER_CONFIG, TOKENIZER_JSON)
        if (source / METADATA_FILE).exists() or not any((source / name).exists() for name in hf_files):
            spec, directory = read_tokenizer_spec(source), source
        else:
            spec, path = read_hf_tokenizer(source)
            spec, directory = spec.replace(vocab_file=os.path.abspath(path)), None
        if tokenizer_type and tokenizer_type != spec.type:
            raise TokenizerSpecError(f"--tokenizer {tokenizer_type} but {source} describes a {spec.type} tokenizer")
        return create_tokenizer(spec, directory)
    if tokenizer_type is None:
        tokenizer_type = "sentencepiece" if source.suffix == ".model" else "wordpiece"
    return create_tokenizer(spec_for_type(tokenizer_type, cased=cased, vocab_file=os.path.abspath(source)))


def write_words(tokenizer, lines, out) -> None:
    """One ``{"words": ...}`` per line: what an export's words input takes (kbert.tasks.core.words_inputs)."""
    from kbert.tasks.core.words_inputs import split_words

    texts = [line.decode("utf-8", "replace") for line in lines]
    words = split_words(tokenizer.pre_tokenize(texts)) if not tokenizer.in_graph else texts
    for w in words:
        out.write(json.dumps({"words": w}, ensure_ascii=False) + "\n")


def write_batch(tokenizer, lines, out) -> None:
    import tensorflow as tf

    texts = tokenizer.pre_tokenize(lines) if not tokenizer.in_graph else lines
    ragged = tokenizer.tokenize_flat(tf.constant(texts, tf.string, shape=[len(texts)]), pre_tokenized=True)
    values = ragged.flat_values.numpy().tolist()
    splits = ragged.row_splits.numpy().tolist()
    for a, b in zip(splits[:-1], splits[1:]):
        ids = values[a:b]
        tokens = [tokenizer.id_to_token(i) for i in ids]
        out.write(json.dumps({"ids": ids, "tokens": tokens}, ensure_ascii=False) + "\n")
