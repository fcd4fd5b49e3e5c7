"""python -m kbert.export {encoder,preprocessor,task} ...

  encoder MODEL_DIR OUT_DIR            TF Hub-style BERT encoder SavedModel (``mlm`` when the
                                       model directory holds the MLM head)
  preprocessor MODEL_DIR_OR_VOCAB OUT_DIR [--cased] [--seq-length 128]
                                       TF Hub-style BERT preprocessor SavedModel
"""

import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kbert.export", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)

    enc = sub.add_parser("encoder", help="TF Hub-style encoder SavedModel")
    enc.add_argument("model_dir")
    enc.add_argument("out_dir")

    pre = sub.add_parser("preprocessor", help="TF Hub-style preprocessor SavedModel")
    pre.add_argument("model_dir_or_vocab")
    pre.add_argument("out_dir")
    pre.add_argument("--cased", action="store_true", help="keep case and accents (cased vocab)")
    pre.add_argument("--seq-length", type=int, default=128)

    args = parser.parse_args(argv)
    if args.what == "encoder":
        from kbert.export.encoder import export_encoder

        path = export_encoder(args.model_dir, args.out_dir)
    else:
        from kbert.export.preprocessor import export_preprocessor

        path = export_preprocessor(
            args.model_dir_or_vocab,
            args.out_dir,
            lower_case=False if args.cased else None,
            seq_length=args.seq_length,
        )
    print(f"SavedModel written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
