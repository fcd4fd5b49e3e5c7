"""python -m kbert.export {encoder,preprocessor,task} ...

  encoder MODEL_DIR OUT_DIR            TF Hub-style BERT encoder SavedModel (``mlm`` when the
                                       model directory holds the MLM head)
  preprocessor MODEL_DIR_OR_VOCAB OUT_DIR [--cased] [--seq-length 128]
                                       TF Hub-style BERT preprocessor SavedModel
  task MODEL_DIR OUT_DIR [--no-warmup] a fine-tuned task model for TF Serving: raw strings in,
                                       answers out (OUT_DIR like saved_models/NAME/1)
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

    task = sub.add_parser("task", help="fine-tuned task model -> serving SavedModel")
    task.add_argument("model_dir")
    task.add_argument("out_dir")
    task.add_argument("--no-warmup", action="store_true", help="skip assets.extra warm-up requests")

    args = parser.parse_args(argv)
    if args.what == "task":
        from kbert.export.serving import write_models_config
        from kbert.export.task import export_task

        path = export_task(args.model_dir, args.out_dir, warmup=not args.no_warmup)
        print(f"SavedModel written to {path}")
        if path.parent.parent.is_dir():
            print(f"models.config: {write_models_config(path.parent.parent)}")
        return 0
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
