"""python -m kbert.predict: run a fine-tuned task model on unlabelled rows, one prediction per row.

    python -m kbert.predict MODEL_DIR --input FILE --output FILE [--format jsonl|tsv|glue|squad]
        [--probabilities] [--batch-size N] [--task-format FORMAT] [--text-columns A[,B]] [--id-column ID]

MODEL_DIR is any fine-tuned model directory (kbert.finetune's --model-dir; kbert.json ``task``
says which). The input is read with the readers fine-tuning uses, labels not required:

  classification, regression, multi-label   a CSV/TSV/JSONL table (format from the extension or
        --task-format csv|tsv|jsonl; the text columns the model was trained on, or --text-columns),
        or a GLUE TSV for GLUE models (test files included; --task-format glue)
  tagging                                   a CoNLL file (words in the first column) or, with
        --task-format lines, one sentence a line (words separated by spaces)
  span QA                                   a SQuAD JSON file
  multiple choice                           a SWAG CSV

--output gets one prediction per input row, in input order. --format jsonl (default): one JSON
object a line with the row's "id" and {"label"} (+ "probabilities" with --probabilities),
{"labels": [...]} (multi-label), {"score"} (regression), {"choice", "label"} (multiple choice),
{"tags", "entities"} (tagging; entity start/end are word indices, end exclusive), {"answer"} (QA).
--format tsv: the same as a table; glue: the GLUE server's submission TSV (index, prediction);
squad: {question id: answer} JSON. Models fine-tuned on klue/*, korquad/v1.0 or cmrc2018 read the
official files and write the official forms by default: JSON lines {"guid", "label"|"score"|"tags"} (KLUE;
NER one tag per character) or the {question id: answer} JSON (KorQuAD, CMRC 2018). The whole input is read and checked first (a bad row is an
error naming file and line; two rows with one id are refused), and the output is written at the end
in one atomic step: no half file.

--onnx EXPORT (a ``kbert export onnx`` folder of MODEL_DIR, or one .onnx file in it, e.g. its
model.int8.onnx): the network runs in ONNX Runtime; reading, tokenizing, windows and answers are
MODEL_DIR's, so the predictions file is the one the Keras model writes (within the file's rounding
of probabilities). An export of another model or of other weights is refused. An existing --output is refused unless --overwrite (then replaced
whole); an --output that is the input, the model directory or one of its files, never.
"""

from __future__ import annotations

import argparse
import sys


def parse_args(argv=None):
    from kbert.cli_support import ArgumentParser, add_backend_flag, add_verbose_flag, prog

    p = ArgumentParser(prog=prog("predict"), description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model_dir", metavar="MODEL_DIR", help="a fine-tuned task model directory")
    p.add_argument("--input", required=True, metavar="FILE", help="the rows to predict")
    p.add_argument("--output", required=True, metavar="FILE",
                   help="where the predictions go (a new file; written atomically)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --output whole")
    # The model's task type says which formats it writes (TaskType.output_formats); a format it
    # does not write is refused naming those it does.
    p.add_argument("--format", default=None,
                   help="output format: jsonl or tsv, or a benchmark's own (glue, squad) where the model's task "
                        "writes one (default jsonl; the benchmark's own form for KLUE, KorQuAD and CMRC 2018 models)")
    p.add_argument("--probabilities", action="store_true", help="add the probabilities to each prediction")
    p.add_argument("--batch-size", type=int, default=64, help="rows per model call (default 64)")
    p.add_argument("--task-format", default=None,
                   help="how to read --input: csv, tsv, jsonl, glue (classification), conll, lines (tagging), "
                        "squad, swag (default: from the model's task and the file's extension)")
    p.add_argument("--text-columns", default=None, help="table input: the text column(s), comma-separated "
                                                        "(default: those the model was fine-tuned on)")
    p.add_argument("--id-column", default=None, help="table input: the column of each row's id (default: line number)")
    p.add_argument("--long-documents", default=None, choices=("truncate", "windows", "sentences"),
                   help="texts longer than the model's seq_length: cut them, or read them in windows or "
                        "sentences, one answer per text (default: what the model was fine-tuned with)")
    p.add_argument("--doc-stride", type=int, default=None,
                   help="windows: word pieces between the starts of a text's windows (default: the model's)")
    p.add_argument("--onnx", metavar="EXPORT", default=None,
                   help="compute the network in ONNX Runtime from this kbert export onnx folder (or one .onnx file "
                        "in it) of MODEL_DIR; the tokenizer, windows and answers are MODEL_DIR's as without it")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--attention", choices=("auto", "plain", "fused"), default="auto",
                   help="auto (default: the fastest faithful attention on the device, cuDNN flash attention under "
                        "--backend jax on NVIDIA GPUs), plain or fused")
    p.add_argument("--mixed-precision", choices=("float32", "mixed_bfloat16", "mixed_float16"), default="float32",
                   help="Keras' dtype policy for the model (default float32)")
    add_verbose_flag(p)
    add_backend_flag(p)
    args = p.parse_args(argv)
    if args.batch_size < 1:
        p.error(f"--batch-size must be positive, got {args.batch_size}")
    return args


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from kbert.cli_support import UserError, require_dir, use_backend

    backend = use_backend(args.backend)  # before anything imports Keras
    from kbert.tasks.core.options import comma_list
    from kbert.tasks.core.predict import predict_file
    from kbert.tasks.core.prediction import PredictOptions

    require_dir(args.model_dir, "model directory")
    if backend != "tensorflow":
        from kbert.model_dir import read_metadata
        from kbert.tasks.core.registry import task_type_for_model

        model_type = (read_metadata(args.model_dir).get("task") or {}).get("type")
        task_type = task_type_for_model(model_type) if model_type else None
        if task_type is not None and backend not in task_type.backends:
            raise UserError(f"{args.model_dir} is a {model_type} model (task type {task_type.name!r}), which predicts "
                            f"under {', '.join(task_type.backends)} only, not --backend {backend}")
    options = PredictOptions(task_format=args.task_format,
                             text_columns=comma_list(args.text_columns) if args.text_columns else None,
                             id_column=args.id_column, probabilities=args.probabilities, batch_size=args.batch_size,
                             long_documents=args.long_documents, doc_stride=args.doc_stride)
    network = None
    if args.onnx:
        if backend != "tensorflow":
            raise UserError(f"--onnx runs the network in ONNX Runtime; the tokenizer runs in TensorFlow: "
                            f"leave out --backend {backend}")
        network = _onnx_network(args.model_dir, args.onnx)
    result = predict_file(args.model_dir, args.input, args.output, args.format, options,
                          show_progress=not args.quiet, overwrite=args.overwrite, attention=args.attention,
                          mixed_precision=args.mixed_precision, network=network)
    print(f"{result['rows']} predictions ({result['model_type']}{', ONNX Runtime' if args.onnx else ''}, "
          f"{result['seconds']} s) -> {result['output']}")
    return 0


def _onnx_network(model_dir, export):
    """``network(model)`` for predict_file: the export's ONNX Runtime runner, checked before any row is read."""
    from kbert.cli_support import UserError
    from kbert.errors import Error
    from kbert.export.onnx import runtime

    try:  # the onnx extra's absence (MissingExtra) or an export that does not fit, named with the flag
        runtime.onnxruntime()
        runtime.locate(export)
    except Error as e:
        raise UserError(f"--onnx {export}: {e}") from None

    def network(model):
        try:
            return runtime.runner_for(model, model_dir, export)
        except Error as e:
            raise UserError(f"--onnx {export}: {e}") from None

    return network
