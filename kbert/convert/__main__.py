"""python -m kbert.convert {hf,google,to-google} ...

  hf HF_DIR OUT_MODEL_DIR                 Hugging Face BERT folder -> kbert model directory
  google CKPT_PREFIX OUT_MODEL_DIR [--config bert_config.json --vocab vocab.txt] [--cased] [--tokenizer TYPE]
                                          Google's TF1 checkpoint -> kbert model directory
  to-google MODEL_DIR OUT_PREFIX          kbert model directory -> Google's TF1 checkpoint
"""

import argparse
import sys


def main(argv=None):
    from kbert.cli_support import ArgumentParser, add_verbose_flag, prog

    parser = ArgumentParser(prog=prog("convert"), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_verbose_flag(parser)
    sub = parser.add_subparsers(dest="what", required=True)
    hf = sub.add_parser("hf", help="Hugging Face BERT folder -> model directory")
    hf.add_argument("hf_dir")
    hf.add_argument("out_dir")
    g = sub.add_parser("google", help="Google TF1 checkpoint -> model directory")
    g.add_argument("ckpt_prefix")
    g.add_argument("out_dir")
    g.add_argument("--config", help="bert_config.json (default: beside the checkpoint)")
    g.add_argument("--vocab", help="vocab.txt (default: beside the checkpoint)")
    g.add_argument("--cased", action="store_true", help="the vocab is cased (do_lower_case=False)")
    g.add_argument("--tokenizer", default="wordpiece", metavar="TYPE",
                   help="tokenizer type the checkpoint was trained with: wordpiece (default), mecab-wordpiece, "
                        "mecab-character, sentencepiece (then --vocab is the .model)")
    g.add_argument("--mecab-dic", default="unidic_lite", help="MeCab dictionary of the mecab-* types (default unidic_lite)")
    t = sub.add_parser("to-google", help="model directory -> Google TF1 checkpoint")
    t.add_argument("model_dir")
    t.add_argument("out_prefix")
    args = parser.parse_args(argv)
    from kbert.cli_support import require_dir

    if args.what == "hf":
        require_dir(args.hf_dir, "Hugging Face model directory")
    elif args.what == "to-google":
        require_dir(args.model_dir, "model directory")

    from kbert.convert import google, hf as hf_convert
    from kbert.convert.names import ConversionError
    from kbert.config import ConfigError
    from kbert.model_dir import ModelDirError
    from kbert.text.mecab import MecabError
    from kbert.text.spec import TokenizerSpecError

    try:
        if args.what == "hf":
            out = hf_convert.convert(args.hf_dir, args.out_dir)
        elif args.what == "google":
            out = google.convert(args.ckpt_prefix, args.out_dir, args.config, args.vocab, not args.cased,
                                 tokenizer=args.tokenizer, mecab_dic=args.mecab_dic)
        else:
            out = google.to_google(args.model_dir, args.out_prefix)
    except (ConversionError, ConfigError, ModelDirError, TokenizerSpecError, MecabError) as e:
        print(f"{prog('convert')}: error: {e}", file=sys.stderr)
        return 1
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    from kbert.cli_support import run as run_cli

    sys.exit(run_cli("convert", main))
