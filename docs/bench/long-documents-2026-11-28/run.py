"""Truncate against windows at --seq-length 512 on documents whose label only text after their
first 512 word pieces decides (tests/fixtures/long_documents_data.py, from the shared Austen and Sōseki
texts): eval accuracy per epoch, the documents' lengths, predict throughput of both modes.

    python docs/bench/long-documents-2026-11-28/run.py OUT_DIR

Writes OUT_DIR/result.json and prints it. The training settings are tests/tasks/classification/test_long_documents_end_to_end.py's.
"""

import json
import pathlib
import platform
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests"))  # the documents' builder is the test's


def main(out: pathlib.Path):
    import keras
    import numpy as np

    from kbert import BertConfig, BertEncoder, load_task_model, predict_file
    from kbert.model_dir import read_metadata, save_model_dir
    from kbert.tasks.core.registry import task_type_for_model
    from kbert.tasks.core.windows import model_settings
    from kbert.tasks.core.options import FinetuneOptions
    from kbert.tasks.classification.task import TableOptions
    from kbert.text.registry import load_tokenizer
    from kbert.training.finetune import finetune
    from conftest import SHARED, UNCASED_VOCAB
    from fixtures.long_documents_data import documents, write_jsonl

    out.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(0)
    save_model_dir(out / "init", BertEncoder(BertConfig.preset("tiny")), vocab_file=UNCASED_VOCAB, do_lower_case=True)
    train = write_jsonl(out / "train.jsonl", documents(SHARED, 160, seed=1))
    evaluation = write_jsonl(out / "eval.jsonl", documents(SHARED, 40, seed=2))
    many = write_jsonl(out / "predict.jsonl", documents(SHARED, 200, seed=3))
    texts = [json.loads(line)["text"] for line in many.read_text().splitlines()]
    import tensorflow as tf

    pieces = load_tokenizer(out / "init").tokenize_flat(tf.constant(texts)).row_lengths().numpy() + 2
    result = {"machine": f"{platform.processor() or platform.machine()}, {len(__import__('os').sched_getaffinity(0))} CPUs",
              "date": time.strftime("%Y-%m-%d"), "documents_positions": {
                  "min": int(pieces.min()), "median": float(np.median(pieces)), "max": int(pieces.max()),
                  "over_512": int((pieces > 512).sum()), "of": len(texts)}}
    for mode in ("truncate", "windows"):
        start = time.perf_counter()
        summary = finetune(FinetuneOptions(
            task="jsonl", init=str(out / "init"), model_dir=str(out / mode), train_file=str(train),
            eval_file=str(evaluation), seq_length=512, epochs=4, batch_size=16, learning_rate=5e-4,
            long_documents=mode, task_options=TableOptions(text_columns=("text",))),
            progress_bar=False, log=lambda *a, **k: None)
        train_seconds = time.perf_counter() - start
        # the model loaded once, as kbert predict loads it (its recorded window settings), then warmed up:
        # the throughput is prediction alone
        meta = read_metadata(out / mode)["task"]
        model = load_task_model(out / mode, **model_settings(task_type_for_model(meta["type"]), meta))
        predict_file(out / mode, train, out / f"{mode}-warm.jsonl", model=model, overwrite=True)
        done = predict_file(out / mode, many, out / f"{mode}.jsonl", model=model, overwrite=True)
        answers = [json.loads(line)["label"] for line in (out / f"{mode}.jsonl").read_text().splitlines()]
        labels = [json.loads(line)["label"] for line in many.read_text().splitlines()]
        result[mode] = {"eval_accuracy_by_epoch": [h["accuracy"] for h in summary["history"]],
                        "train_windows": summary.get("train_windows", 160), "train_seconds": round(train_seconds, 1),
                        "predict_accuracy_200": float(np.mean([a == b for a, b in zip(answers, labels)])),
                        "predict_docs_per_s": round(len(texts) / done["seconds"], 1)}
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
