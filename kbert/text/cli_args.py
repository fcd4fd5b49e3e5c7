"""The tokenizer flags of the command lines (pre-training, data pipelines): one spec from them.

    --vocab FILE        the tokenizer's file (vocab.txt, or a SentencePiece .model)
    --cased             keep case and accents (lower_case false)
    --tokenizer TYPE    the tokenizer type (kbert.text.registry; default wordpiece)
    --model-dir DIR     (or another flag name) take the spec and files of a model directory's
                        kbert.json; --tokenizer and --cased then override its type and case
"""

from __future__ import annotations

import os

from kbert.text.registry import create_tokenizer, read_tokenizer_spec, tokenizer_types
from kbert.text.spec import TokenizerSpec, TokenizerSpecError


def add_tokenizer_arguments(parser, dir_flag: str | None = "--model-dir", vocab_required=False):
    """Adds --vocab, --cased, --tokenizer and (``dir_flag``) a model-directory flag to ``parser``."""
    parser.add_argument("--vocab", required=vocab_required,
                        help="the tokenizer's file (vocab.txt for WordPiece)")
    parser.add_argument("--cased", action="store_true",
                        help="cased vocabulary (no lower-casing; only WordPiece lower-cases by default)")
    parser.add_argument("--tokenizer", metavar="TYPE", choices=tokenizer_types(), default=None,
                        help=f"tokenizer type: {', '.join(tokenizer_types())} (default: wordpiece, or the "
                             "model directory's)")
    if dir_flag:
        parser.add_argument(dir_flag, help="a model directory whose tokenizer (kbert.json) to use instead of --vocab")


def tokenizer_spec_from_args(args, dir_attr: str | None = "model_dir"):
    """``(spec, directory)`` that ``create_tokenizer`` takes, from the flags of ``add_tokenizer_arguments``."""
    directory = getattr(args, dir_attr, None) if dir_attr else None
    if args.vocab:
        kind = args.tokenizer or "wordpiece"
        # Only WordPiece lower-cases by default (--cased turns it off); the Japanese types and
        # SentencePiece never do (lower-casing strips the voicing marks of kana: が -> か).
        spec = TokenizerSpec(type=kind, lower_case=kind == "wordpiece" and not args.cased,
                             vocab_file=os.path.abspath(os.path.expanduser(args.vocab)))
        return spec, None
    if not directory:
        flag = f" or --{dir_attr.replace('_', '-')}" if dir_attr else ""
        raise TokenizerSpecError(f"--vocab{flag} is required (the tokenizer)")
    spec = read_tokenizer_spec(directory)
    changes = {"type": args.tokenizer} if args.tokenizer else {}
    if args.cased:
        changes["lower_case"] = False
    return (spec.replace(**changes) if changes else spec), directory


def tokenizer_from_args(args, dir_attr: str | None = "model_dir", **kwargs):
    spec, directory = tokenizer_spec_from_args(args, dir_attr)
    return create_tokenizer(spec, directory, **kwargs)
