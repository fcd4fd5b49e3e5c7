"""Entity F1 of one CoNLL-2003 tagger read three ways on the validation set: per sentence (the
benchmark's usual unit), per whole article in windows (--long-documents windows), and per whole
article cut at --seq-length (truncate: the words past the cut get no tag, "O").

    python docs/bench/tagging-windows-2026-11-28/run.py MODEL_DIR OUT_DIR [--max-train N] [--epochs E]

MODEL_DIR: a converted model to fine-tune from (kbert.convert hf). The tagger is trained on
sentences (training examples are unchanged by the windows, since CoNLL sentences fit in 128), then
evaluated; the gold tags are the same words in all three readings, so the F1s compare directly.
"""

import argparse
import json
import pathlib
import time

from kbert.data.conll import read_conll
from kbert.tasks.core.base import load_task_model
from kbert.tasks.core.metrics import ner_metrics
from kbert.tasks.core.options import FinetuneOptions
from kbert.training.finetune import finetune


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("init")
    parser.add_argument("out")
    parser.add_argument("--data-dir", default="../shared/data/conll2003")
    parser.add_argument("--max-train", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--doc-stride", type=int, default=64)
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    started = time.time()
    finetune(FinetuneOptions(task="conll2003", init=args.init, model_dir=str(out / "model"), data_dir=args.data_dir,
                             epochs=args.epochs, learning_rate=1e-4, seq_length=args.seq_length,
                             max_train_examples=args.max_train, long_documents="windows",
                             doc_stride=args.doc_stride), progress_bar=False)
    trained = time.time() - started

    valid = read_conll(pathlib.Path(args.data_dir) / "valid.txt")
    sentences = [e["words"] for e in valid.examples]
    gold = [list(e["tags"]) for e in valid.examples]
    order, documents = {}, []
    for i, e in enumerate(valid.examples):
        if e["document"] not in order:
            order[e["document"]] = len(documents)
            documents.append([])
        documents[order[e["document"]]].append(i)

    def per_sentence(doc_tags):
        """Document tag lists -> sentence tag lists, in the examples' order."""
        tags = [None] * len(sentences)
        for members, flat in zip(documents, doc_tags):
            k = 0
            for i in members:
                tags[i] = flat[k:k + len(sentences[i])]
                k += len(sentences[i])
        return tags

    doc_words = [[w for i in members for w in sentences[i]] for members in documents]
    results = {}
    windows = load_task_model(out / "model")
    truncate = load_task_model(out / "model", long_documents="truncate")
    for name, model, words, regroup in (
            ("sentences", windows, sentences, lambda t: t),
            ("articles, windows", windows, doc_words, per_sentence),
            ("articles, truncate", truncate, doc_words, per_sentence)):
        t0 = time.time()
        tags = regroup([list(t) + ["O"] * (len(w) - len(t)) for t, w in zip(model.predict_words(words), words)])
        results[name] = {**ner_metrics(tags, gold), "seconds": round(time.time() - t0, 1)}
    pieces = windows.pieces(words=doc_words).merge_dims(1, 2).row_lengths().numpy()
    lengths = {f"> {n}": int((pieces + 2 > n).sum()) for n in (128, 256, 512)}
    report = {"train_seconds": round(trained, 1), "sentences": len(sentences), "articles": len(documents),
              "articles_longer_than_(pieces+2)": lengths, "seq_length": args.seq_length,
              "doc_stride": args.doc_stride, "results": results}
    (out / "result.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
