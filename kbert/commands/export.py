"""python -m kbert.export {encoder,preprocessor,task,onnx} ...

  encoder MODEL_DIR OUT_DIR            TF Hub-style BERT encoder SavedModel (``mlm`` when the
                                       model directory holds the MLM head)
  preprocessor MODEL_DIR_OR_VOCAB OUT_DIR [--cased] [--seq-length 128]
                                       TF Hub-style BERT preprocessor SavedModel
  task MODEL_DIR OUT_DIR [--no-warmup] a fine-tuned task model for TF Serving: raw strings in,
                                       answers out (OUT_DIR like saved_models/NAME/1)
  onnx MODEL_DIR OUT_DIR [--form ort|standard] [--quantize int8]
                                       any model directory as ONNX (ids in, answers out) with
                                       tokenizer.json where it is exact (the onnx extra)

OUT_DIR is written whole: into a temporary folder beside it, then renamed into place, so an
interrupted export leaves the previous version (or nothing), never a mix. An earlier kbert export
at OUT_DIR is replaced whole; any other existing OUT_DIR is refused unless --overwrite. An OUT_DIR
named like a TF Serving version (saved_models/NAME/1) also adds NAME to saved_models/models.config
(entries already there are kept as written).

Every export can be called from Keras with ``keras.layers.TFSMLayer(OUT_DIR,
call_endpoint="serving_default")`` (and ``"serve"``); see docs/serving.md.
"""

import argparse
import pathlib

from kbert.commands.signals import stop_on_sigterm


def main(argv=None):
    from kbert.cli_support import ArgumentParser, add_verbose_flag, prog

    parser = ArgumentParser(prog=prog("export"), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_verbose_flag(parser)
    sub = parser.add_subparsers(dest="what", required=True)

    enc = sub.add_parser("encoder", help="TF Hub-style encoder SavedModel",
                         description="A kbert model directory -> TF Hub-style BERT encoder SavedModel.")
    enc.add_argument("model_dir", metavar="MODEL_DIR", help="kbert model directory (bert_config.json, vocab.txt, ...)")
    enc.add_argument("out_dir", metavar="OUT_DIR", help="where to write the SavedModel, e.g. saved_models/bert_encoder/1")
    enc.add_argument("--no-head-signatures", dest="head_signatures", action="store_false",
                     help="leave out the strings-in fill_mask / next_sentence signatures (then loading needs no "
                          "tensorflow_text, as TF Hub's encoders)")
    enc.add_argument("--xla-signature", action="store_true",
                     help="add serving_xla: serving_default compiled by XLA, faster one request at a time for "
                          "small models (TF Serving needs --xla_cpu_compilation_enabled=true; docs/serving.md, Serving latency)")

    pre = sub.add_parser("preprocessor", help="TF Hub-style preprocessor SavedModel",
                         description="Raw strings -> input_word_ids, input_mask, input_type_ids "
                                     "(TF Hub's BERT preprocessor layout: tokenize, bert_pack_inputs).")
    pre.add_argument("model_dir_or_vocab", metavar="MODEL_DIR_OR_VOCAB",
                     help="a kbert model directory (its vocab.txt and do_lower_case) or a vocab.txt")
    pre.add_argument("out_dir", metavar="OUT_DIR", help="where to write the SavedModel, e.g. saved_models/bert_preprocessor/1")
    pre.add_argument("--cased", action="store_true",
                     help="keep case and accents (a cased vocab); default: the model directory's do_lower_case, "
                          "or lower-casing for a bare vocab.txt")
    pre.add_argument("--seq-length", type=int, default=128,
                     help="length the default signature pads/truncates to (default 128)")

    task = sub.add_parser("task", help="fine-tuned task model -> serving SavedModel",
                          description="A model directory written by kbert.finetune -> a SavedModel for TF Serving "
                                      "that takes raw strings and returns answers.")
    task.add_argument("model_dir", metavar="MODEL_DIR", help="the --model-dir of a kbert.finetune run")
    task.add_argument("out_dir", metavar="OUT_DIR",
                      help="where to write the SavedModel: saved_models/NAME/VERSION (NAME is added to "
                           "models.config beside it)")
    task.add_argument("--no-warmup", action="store_true", help="skip assets.extra warm-up requests")
    task.add_argument("--long-documents", default=None, choices=("truncate", "windows", "sentences"),
                      help="texts longer than the model's seq_length: cut, or read in windows or sentences cut in "
                           "the graph (one answer per input string; default: what the model was fine-tuned with)")
    task.add_argument("--doc-stride", type=int, default=None,
                      help="windows: word pieces between the starts of a text's windows (default: the model's)")

    onx = sub.add_parser("onnx", help="model directory -> ONNX (ONNX Runtime)",
                         description="A model directory (any task type, or a pre-trained encoder) -> an ONNX folder: "
                                     "model.onnx (ids in, the task's answers out, checked against Keras), "
                                     "tokenizer.json where it gives kbert's ids exactly, kbert_onnx.json. Needs the "
                                     "onnx extra (pip install 'kbert[onnx]').")
    onx.add_argument("model_dir", metavar="MODEL_DIR", help="a kbert model directory")
    onx.add_argument("out_dir", metavar="OUT_DIR", help="the export folder, e.g. saved_models/sst2-onnx")
    onx.add_argument("--form", choices=("ort", "standard"), default="ort",
                     help="ort (default): ONNX Runtime's fused transformer kernels; standard: plain ONNX opset 17")
    onx.add_argument("--quantize", choices=("int8",), default=None,
                     help="also write model.int8.onnx (dynamic int8 quantization; not exact: its agreement is printed)")
    onx.add_argument("--no-tokenizer", dest="tokenizer", action="store_false", help="write no tokenizer.json")

    for p in (enc, pre, task, onx):
        p.add_argument("--overwrite", action="store_true",
                       help="replace OUT_DIR whole even if it is not an earlier kbert export")
    args = parser.parse_args(argv)
    from kbert.export.serving import is_kbert_export
    from kbert.model_dir import check_output

    source = args.model_dir_or_vocab if args.what == "preprocessor" else args.model_dir
    replaceable = is_kbert_export
    if args.what == "onnx":  # an earlier ONNX export folder is replaced whole, as a SavedModel version is
        from kbert.export.onnx.export import is_onnx_export as replaceable
    check_output(args.out_dir, [source], overwrite=args.overwrite, replaceable=replaceable)
    with stop_on_sigterm("export"):
        return _export(args)


def _export(args):
    from kbert.cli_support import UserError, require_dir

    if args.what == "preprocessor":
        source = pathlib.Path(args.model_dir_or_vocab)
        if not source.exists():
            raise UserError(f"model directory or vocab {source} does not exist")
    else:
        require_dir(args.model_dir, "model directory")
    if args.what == "preprocessor" and args.seq_length < 1:
        raise UserError(f"--seq-length must be positive, got {args.seq_length}")
    if args.what == "onnx":
        return _export_onnx(args)
    if args.what == "task":
        from kbert.export.task import export_task

        path = export_task(args.model_dir, args.out_dir, warmup=not args.no_warmup, overwrite=args.overwrite,
                           long_documents=args.long_documents, doc_stride=args.doc_stride)
    elif args.what == "encoder":
        from kbert.export.encoder import export_encoder

        path = export_encoder(args.model_dir, args.out_dir, head_signatures=args.head_signatures,
                              xla_signature=args.xla_signature, overwrite=args.overwrite)
    else:
        from kbert.export.preprocessor import export_preprocessor

        path = export_preprocessor(
            args.model_dir_or_vocab,
            args.out_dir,
            lower_case=False if args.cased else None,
            seq_length=args.seq_length,
            overwrite=args.overwrite,
        )
    path = pathlib.Path(path)
    print(f"SavedModel written to {path}")
    if path.name.isdigit():  # saved_models/NAME/VERSION: TF Serving's layout
        from kbert.export.serving import write_models_config

        print(f"models.config: {write_models_config(path.parent.parent)} (and batching_parameters.txt "
              "for --enable_batching)")
    return 0


def _export_onnx(args):
    from kbert.export.onnx.export import export_onnx

    # Without the onnx extra: kbert.MissingExtra, one line through kbert.cli_support.run.
    result = export_onnx(args.model_dir, args.out_dir, form=args.form, quantize=args.quantize,
                         tokenizer=args.tokenizer, overwrite=args.overwrite)
    worst = ", ".join(f"{name} {value:.1e}" for name, value in result.differences.items())
    print(f"ONNX ({args.form}) written to {result.path / 'model.onnx'}: {result.model_type}; largest difference "
          f"from the Keras model on the check's rows: {worst}")
    if result.tokenizer.text is not None:
        print(f"tokenizer.json: kbert's ids on all {result.tokenizer.checked} requests of the check")
    else:
        print(f"no tokenizer.json: {result.tokenizer.reason}")
    if result.int8:
        agreement = result.int8["agreement"]
        print(f"model.int8.onnx: {result.int8['compared']}: "
              + (f"{agreement:.1%} equal answers, " if agreement is not None else "")
              + f"largest difference {result.int8['max_difference']:.3g}")
    return 0
