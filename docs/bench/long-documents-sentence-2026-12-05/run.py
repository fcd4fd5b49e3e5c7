"""Long documents whose label one sentence decides, past the first window: document-level windows
against per-window windows, truncate, and the sentence alone (the ceiling), with all-MiniLM-L6-v2.

    python docs/bench/long-documents-sentence-2026-12-05/run.py OUT_DIR [RUN ...] [--seeds 0,1,2]

Documents (tests/fixtures/long_documents_data.py, ``sentence_documents``): 190-230 words of narrative
sentences from Austen novels with one SST-2 sentence (8 words or more, its label the document's) at a
random sentence boundary after the first 126 words, so never in the first window of --seq-length 128;
700 for training (SST-2's train file, four Austen novels; --train-documents N for more, the 700 among
them), 240 for evaluation (SST-2's dev file, other books). RUN names (default: all): doc-mean,
doc-max, doc-logmeanexp, doc-attention (document-level training, pooling), per-window, truncate,
signal (the sentences alone). Each (run, seed) appends a line to OUT_DIR/results.jsonl: eval accuracy
by epoch, training seconds (wall and CPU); seed 0 of doc-mean and doc-attention also checks that
kbert predict and the exported SavedModel give the evaluation's labels.
"""

import json
import os
import pathlib
import platform
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests"))  # the documents' builder is the tests'

COMMON = dict(seq_length=128, doc_stride=64, epochs=4, batch_size=8, learning_rate=5e-5)
RUNS = {
    "doc-mean": dict(long_documents="windows", window_training="documents", window_pooling="mean"),
    "doc-max": dict(long_documents="windows", window_training="documents", window_pooling="max"),
    "doc-logmeanexp": dict(long_documents="windows", window_training="documents", window_pooling="logmeanexp"),
    "doc-attention": dict(long_documents="windows", window_training="documents", window_pooling="attention"),
    "per-window": dict(long_documents="windows", window_training="windows", window_pooling="mean"),
    "truncate": dict(long_documents="truncate"),
    "signal": dict(long_documents="truncate", data="signal"),
}


def write_data(out, train_documents=700):
    from conftest import SHARED
    from fixtures.long_documents_data import sentence_documents, write_jsonl

    for split, n in (("train", train_documents), ("eval", 240)):
        rows = sentence_documents(SHARED, n, split, seed=0)
        write_jsonl(out / f"{split}.jsonl", [{"text": r["text"], "label": str(r["label"])} for r in rows])
        write_jsonl(out / f"{split}-signal.jsonl", [{"text": r["sentence"], "label": str(r["label"])} for r in rows])


def one_run(out, name, seed, settings):
    from kbert.tasks.core.options import FinetuneOptions
    from kbert.tasks.classification.task import TableOptions
    from kbert.training.finetune import finetune

    settings = {**COMMON, **settings}
    suffix = "-signal" if settings.pop("data", None) == "signal" else ""
    table = {k: settings.pop(k) for k in ("window_training", "window_pooling", "max_windows") if k in settings}
    model_dir = out / (f"{name}-s{seed}-b{settings['batch_size']}-lr{settings['learning_rate']:g}"
                       f"-seq{settings['seq_length']}")
    start, cpu = time.perf_counter(), time.process_time()
    summary = finetune(FinetuneOptions(
        task="jsonl", init=str(out / "minilm"), model_dir=str(model_dir), train_file=str(out / f"train{suffix}.jsonl"),
        eval_file=str(out / f"eval{suffix}.jsonl"), seed=seed, task_options=TableOptions(text_columns=("text",), **table),
        **settings), progress_bar=False, log=lambda *a, **k: None)
    record = {"run": name, "seed": seed, **settings, **table,
              "eval_accuracy_by_epoch": [round(h["accuracy"], 4) for h in summary["history"]],
              "best": round(summary["best"]["accuracy"], 4), "steps": summary["steps"],
              "train_windows": summary.get("train_windows"), "train_seconds": summary["train_seconds"],
              "train_cpu_seconds": summary["train_cpu_seconds"], "wall_seconds": round(time.perf_counter() - start, 1),
              "cpu_seconds": round(time.process_time() - cpu, 1)}
    if name in ("doc-mean", "doc-attention") and seed == 0:
        record["predict_and_export_agree"] = check_predict_and_export(out, model_dir)
    return record


def check_predict_and_export(out, model_dir):
    """kbert predict's labels and the exported SavedModel's, against the evaluation's predictions file."""
    import numpy as np
    import tensorflow as tf

    from kbert import predict_file
    from kbert.export.task import export_task

    predict_file(model_dir, out / "eval.jsonl", out / "predicted.jsonl", overwrite=True)
    predicted = [json.loads(line)["label"] for line in (out / "predicted.jsonl").read_text().splitlines()]
    evaluated = [line.split("\t")[1] for line in (model_dir / "predictions.tsv").read_text().splitlines()[1:]]
    export_task(model_dir, out / "export" / model_dir.name / "1")
    served = tf.saved_model.load(str(out / "export" / model_dir.name / "1")).signatures["serving_default"]
    texts = [json.loads(line)["text"] for line in (out / "eval.jsonl").read_text().splitlines()]
    exported = [b.decode() for b in np.concatenate(
        [served(text=tf.constant(texts[i:i + 16]))["labels"].numpy() for i in range(0, len(texts), 16)])]
    return {"predict": predicted == evaluated, "export": exported == evaluated, "documents": len(texts)}


def main(argv):
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("out", type=pathlib.Path)
    p.add_argument("runs", nargs="*", default=list(RUNS), help=f"of {', '.join(RUNS)} (default: all)")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--learning-rate", type=float, default=COMMON["learning_rate"])
    p.add_argument("--batch-size", type=int, default=COMMON["batch_size"])
    p.add_argument("--epochs", type=int, default=COMMON["epochs"])
    p.add_argument("--max-windows", type=int, default=None)
    p.add_argument("--seq-length", type=int, default=COMMON["seq_length"])
    p.add_argument("--doc-stride", type=int, default=COMMON["doc_stride"])
    p.add_argument("--train-documents", type=int, default=700, help="when OUT_DIR has no data yet")
    args = p.parse_args(argv)
    out = args.out
    COMMON.update(learning_rate=args.learning_rate, batch_size=args.batch_size, epochs=args.epochs,
                  seq_length=args.seq_length, doc_stride=args.doc_stride)
    out.mkdir(parents=True, exist_ok=True)
    if not (out / "train.jsonl").exists():
        write_data(out, args.train_documents)
    if not (out / "minilm").exists():
        from conftest import SHARED
        from kbert.convert.api import convert_hf

        convert_hf(SHARED / "weights" / "all-MiniLM-L6-v2", out / "minilm")
    machine = f"{platform.processor() or platform.machine()}, {len(os.sched_getaffinity(0))} CPUs"
    for name in args.runs:
        for seed in (int(s) for s in args.seeds.split(",")):
            settings = dict(RUNS[name])
            if args.max_windows and name.startswith("doc-"):
                settings["max_windows"] = args.max_windows
            record = {**one_run(out, name, seed, settings), "machine": machine,
                      "date": time.strftime("%Y-%m-%d %H:%M")}
            with open(out / "results.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
            print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
