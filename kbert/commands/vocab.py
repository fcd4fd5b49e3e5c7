"""python -m kbert.vocab --input 'GLOB' --size 30000 [--tokenizer TYPE] [--cased] --out vocab.txt

Learns a WordPiece vocabulary from raw UTF-8 text files (one or more --input globs, ``**``
allowed) with the same normalisation and word splitting as kbert's tokenizer. The vocabulary
starts with [PAD] [UNK] [CLS] [SEP] [MASK] and --unused [unusedN] slots. Progress goes to stderr.

--tokenizer picks the type (kbert.text.registry: each type learns its own, ``learn_vocab``; the
Japanese ones need the [ja] extra): mecab-wordpiece (NFKC, MeCab words, WordPiece within words),
mecab-character (one token per character), sentencepiece (the sentencepiece trainer; --out names
the .model file). Japanese text is not lower-cased by
default (lower-casing strips the voicing marks of kana: が -> か). The output's directory records
the tokenizer spec (kbert.json "tokenizer").
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def main(argv=None) -> int:
    from kbert.cli_support import ArgumentParser, add_verbose_flag, prog
    from kbert.text.registry import tokenizer_types

    parser = ArgumentParser(prog=prog("vocab"), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_verbose_flag(parser)
    parser.add_argument("--input", action="append", required=True, metavar="GLOB",
                        help="text files to learn from (repeatable; quote the glob)")
    parser.add_argument("--size", type=int, required=True, help="maximum vocabulary size")
    parser.add_argument("--out", required=True, help="vocab.txt to write")
    parser.add_argument("--tokenizer", choices=tokenizer_types(), default="wordpiece",
                        help="tokenizer type (default wordpiece)")
    parser.add_argument("--cased", action="store_true", help="keep case and accents (cased model)")
    parser.add_argument("--uncased", action="store_true", help="lower-case even Japanese text")
    parser.add_argument("--unused", type=int, default=0, help="number of [unusedN] slots (default 0)")
    parser.add_argument("--max-unique-chars", type=int, default=None,
                        help="alphabet size: rarer characters become [UNK] (default: the characters covering "
                             "99.95%% of the text, at least 1000, at most a quarter of --size)")
    parser.add_argument("--min-count", type=int, default=None,
                        help="pieces seen fewer times are not learned (default 10; 2 for mecab-wordpiece)")
    args = parser.parse_args(argv)
    if args.size < 1:
        parser.error(f"--size must be positive, got {args.size}")
    if args.min_count is not None and args.min_count < 1:
        parser.error(f"--min-count must be >= 1, got {args.min_count}")
    if args.unused < 0:
        parser.error(f"--unused must be >= 0, got {args.unused}")
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        parser.error(f"--out {args.out}: directory {out_dir} does not exist")
    if args.cased and args.uncased:
        parser.error("--cased and --uncased contradict each other")

    import glob

    from kbert.model_dir import check_output

    # The vocabulary is written over --out (atomically); never over one of the corpus files. Every
    # refusal below is a kbert.Error, one line through kbert.cli_support.run.
    patterns = args.input if isinstance(args.input, list) else [args.input]
    check_output(args.out, [f for p in patterns for f in glob.glob(p, recursive=True)], overwrite=True)

    from kbert.text.registry import record_tokenizer_spec, tokenizer_class
    from kbert.text.vocab_learning import VocabOptions, resolve_corpus

    options = VocabOptions(args.size, lower_case=False if args.cased else (True if args.uncased else None),
                           num_unused=args.unused, max_unique_chars=args.max_unique_chars, min_count=args.min_count)
    tokenizer_type = tokenizer_class(args.tokenizer)
    tokenizer_type.check_vocab_request(args.out, options)
    start = time.monotonic()
    spec, size = tokenizer_type.learn_vocab(resolve_corpus(args.input), args.out, options, log=sys.stderr)
    record_tokenizer_spec(out_dir, spec)
    note = ""
    if size < 0.95 * args.size:
        note = (f" (fewer than --size {args.size}: the corpus gives no more at these settings; pieces seen fewer "
                "than --min-count times are not learned)")
    print(f"wrote {size} tokens ({spec.type}) to {args.out} in {time.monotonic() - start:.0f} s{note}")
    return 0
