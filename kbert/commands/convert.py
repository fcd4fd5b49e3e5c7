"""python -m kbert.convert {hf,google,to-google,to-hf} ...

  hf SOURCE OUT_MODEL_DIR [--check] [--overwrite]
          SOURCE: a Hugging Face BERT folder, or a model name ORG/NAME[@REVISION] fetched through
          huggingface_hub (its cache, HF_HOME, HF_TOKEN, HF_HUB_OFFLINE=1 for the cache alone).
          --check compares the result with transformers (needs torch and transformers).
  google SOURCE OUT_MODEL_DIR [--sha256 HEX] [--config bert_config.json --vocab vocab.txt] [--cased]
          [--tokenizer TYPE] [--overwrite]
          SOURCE: a google-research/bert release zip by URL (downloaded with resume, its sha256
          printed and checked against --sha256) or path, a release folder, or a checkpoint prefix.
  to-google MODEL_DIR OUT_PREFIX          kbert model directory -> Google's TF1 checkpoint
  to-hf MODEL_DIR OUT [--check] [--overwrite]
          kbert model directory (pre-trained or fine-tuned) -> a Hugging Face folder (config.json,
          model.safetensors, the tokenizer's files) that transformers loads; --check loads it with
          transformers and compares ids and outputs with kbert's (needs torch and transformers).

An output directory that already holds files is refused unless --overwrite, which replaces its
content whole; the new model is written beside it and renamed into place, so a failed conversion
leaves the output as it was.
"""

import argparse
import sys

from kbert.commands.signals import stop_on_sigterm


def main(argv=None):
    # A user's error (a kbert.Error: the conversion's, the config's, the tokenizer's) propagates to
    # kbert.cli_support.run, which shows it as one line with exit status 1.
    args = _parser().parse_args(argv)
    with stop_on_sigterm("convert"):
        return _convert(args)


def _convert(args):
    from kbert.cli_support import require_dir

    if args.what in ("to-google", "to-hf"):
        require_dir(args.model_dir, "model directory")
    if args.what == "to-hf":
        return _to_hf(args)
    if args.what == "hf":
        source, out = _hf(args)
    elif args.what == "google":
        out = _google(args)
    else:
        from kbert.convert import google

        out = google.to_google(args.model_dir, args.out_prefix)
    print(f"written: {out}")
    if args.what == "hf" and args.check:
        return _check(source, out)
    return 0


def _parser():
    from kbert.cli_support import ArgumentParser, add_verbose_flag, prog

    parser = ArgumentParser(prog=prog("convert"), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_verbose_flag(parser)
    sub = parser.add_subparsers(dest="what", required=True)
    hf = sub.add_parser("hf", help="Hugging Face BERT folder or model name -> model directory")
    hf.add_argument("hf_dir", metavar="SOURCE", help="a folder, or a Hub model name ORG/NAME[@REVISION]")
    hf.add_argument("out_dir")
    hf.add_argument("--check", action="store_true",
                    help="compare ids and encoder outputs with transformers on sentences in English, Japanese, "
                         "Chinese, Korean and Russian; a mismatch exits 1 (needs torch and transformers)")
    g = sub.add_parser("google",
                       help="Google TF1 checkpoint (release zip URL or path, folder, prefix) -> model directory")
    g.add_argument("ckpt_prefix", metavar="SOURCE", help="a release zip's URL or path, a release folder, or a "
                                                         "checkpoint prefix (bert_model.ckpt)")
    g.add_argument("out_dir")
    g.add_argument("--sha256", help="the zip's expected SHA-256 (the download is refused if it differs)")
    g.add_argument("--config", help="bert_config.json (default: beside the checkpoint)")
    g.add_argument("--vocab", help="vocab.txt (default: beside the checkpoint)")
    g.add_argument("--cased", action="store_true", help="the vocab is cased (do_lower_case=False); google-research/"
                                                        "bert's releases are recognised by name")
    g.add_argument("--tokenizer", default="wordpiece", metavar="TYPE",
                   help="tokenizer type the checkpoint was trained with: wordpiece (default), mecab-wordpiece, "
                        "mecab-character, sentencepiece (then --vocab is the .model)")
    g.add_argument("--mecab-dic", default="unidic_lite", help="MeCab dictionary of the mecab-* types (default unidic_lite)")
    for p in (hf, g):
        p.add_argument("--overwrite", action="store_true",
                       help="replace an output directory that already holds files (its old content goes, whole)")
    t = sub.add_parser("to-google", help="model directory -> Google TF1 checkpoint")
    t.add_argument("model_dir")
    t.add_argument("out_prefix")
    h = sub.add_parser("to-hf", help="model directory -> Hugging Face folder (transformers' BertFor... class)")
    h.add_argument("model_dir")
    h.add_argument("out_dir", metavar="OUT")
    h.add_argument("--check", action="store_true",
                   help="load OUT with transformers and compare ids and outputs with kbert's; a difference exits 1 "
                        "(needs torch and transformers)")
    h.add_argument("--overwrite", action="store_true",
                   help="replace an output folder that already holds files (its old content goes, whole)")
    return parser


def _to_hf(args) -> int:
    """``convert to-hf``: the folder written, its notes, and the check when asked."""
    from kbert.export.to_hf import convert_to_hf, read_record

    out = convert_to_hf(args.model_dir, args.out_dir, overwrite=args.overwrite)
    print(f"written: {out} ({read_record(out)['architecture']})")
    for note in read_record(out)["notes"]:
        print(f"note: {note}")
    if not args.check:
        return 0
    from kbert.export.to_hf_check import check_to_hf, record_check

    report = check_to_hf(args.model_dir, out)
    record_check(out, report)
    return _print_report(report, f"{out} does not reproduce {args.model_dir} in transformers")


def _hf(args):
    """``convert hf``: (the Hugging Face folder converted, the model directory written)."""
    from kbert.cli_support import require_dir
    from kbert.convert import hf as hf_convert
    from kbert.convert.common import check_output_dir
    from kbert.convert.hub import hub_snapshot, is_hub_name

    check_output_dir(args.out_dir, args.overwrite)  # before any download
    if is_hub_name(args.hf_dir):
        source = hub_snapshot(args.hf_dir)
    else:
        source = require_dir(args.hf_dir, "Hugging Face model directory")
    return source, hf_convert.convert(source, args.out_dir, overwrite=args.overwrite)


def _google(args):
    """``convert google``: the model directory written."""
    from kbert.convert import google
    from kbert.convert.common import check_output_dir
    from kbert.convert.names import ConversionError

    source = args.ckpt_prefix
    check_output_dir(args.out_dir, args.overwrite)
    if _is_url(source) or source.endswith(".zip"):
        source = _release_zip(source, args.sha256)
    elif args.sha256:
        raise ConversionError("--sha256 checks a release zip (a URL or a .zip path)")
    return google.convert(source, args.out_dir, args.config, args.vocab, False if args.cased else None,
                          tokenizer=args.tokenizer, mecab_dic=args.mecab_dic, overwrite=args.overwrite)


def _check(source, out) -> int:
    """``convert hf --check``: the comparison with transformers printed; 1 where it does not pass."""
    from kbert.convert.check import check_conversion

    return _print_report(check_conversion(source, out), f"{out} does not reproduce transformers on {source}")


def _print_report(report, failure: str) -> int:
    """A check's lines printed; 1 with ``failure`` as the command's error where it does not pass."""
    from kbert.cli_support import prog

    for line in report.lines():
        print(line)
    if not report.passed:
        print(f"{prog('convert')}: error: {failure}", file=sys.stderr)
        return 1
    return 0


def _is_url(source: str) -> bool:
    from kbert.convert.download import is_url

    return is_url(source)


def _release_zip(source: str, sha256):
    """The zip on disk (downloaded first for a URL); its sha256 is printed and checked."""
    from kbert.convert.api import release_zip

    path, digest = release_zip(source, sha256, progress=True)
    print(f"sha256: {digest}  {path}")
    return path
