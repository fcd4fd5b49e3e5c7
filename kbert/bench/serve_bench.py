"""python -m kbert.bench serve --saved-model DIR [--signature serving_default] [--batch-sizes 1,32] ...

Latency and throughput of an exported model that takes raw strings (e.g. an SST-2 classifier:
strings in, labels out), loaded with ``tf.saved_model.load`` and called through one signature,
one request at a time: p50 / p99 latency per request and sentences per second, for each batch
size. Sentences come from --text (one per line; a .tsv takes its ``sentence`` column) or the
shared SST-2 dev set. Rounds interleave the batch sizes.
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import statistics
import sys
import time

from kbert.bench import common

NO_MODEL = (
    "serve needs --saved-model DIR: a SavedModel whose signature takes one batch of strings\n"
    "(a [batch] tf.string tensor) and returns the answers, e.g. an SST-2 classifier exported by\n"
    "kbert's task export. Nothing was measured."
)


def read_sentences(path, limit):
    path = pathlib.Path(path)
    sentences = []
    with open(path, encoding="utf-8", errors="replace") as f:
        if path.suffix == ".tsv":
            reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            column = "sentence" if "sentence" in (reader.fieldnames or []) else (reader.fieldnames or [None])[0]
            sentences = [row[column] for row in reader if row.get(column)]
        else:
            sentences = [line.strip() for line in f if line.strip()]
    if not sentences:
        raise SystemExit(f"error: --text {path} has no sentences")
    while len(sentences) < limit:
        sentences += sentences
    return sentences[:limit]


def string_signature(loaded, name):
    import tensorflow as tf

    if name not in loaded.signatures:
        raise SystemExit(f"error: the SavedModel has no signature {name!r}; it has: {', '.join(loaded.signatures) or 'none'}")
    fn = loaded.signatures[name]
    _, kwargs = fn.structured_input_signature
    strings = [k for k, spec in kwargs.items() if spec.dtype == tf.string]
    if len(kwargs) != 1 or len(strings) != 1:
        found = ", ".join(f"{k}: {spec.dtype.name}{spec.shape}" for k, spec in kwargs.items())
        raise SystemExit(f"error: signature {name!r} must take exactly one string tensor; it takes {found}")
    return fn, strings[0]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kbert.bench serve", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--saved-model", help="SavedModel directory with a string signature")
    parser.add_argument("--signature", default="serving_default")
    parser.add_argument("--text", help="sentences: a text file (one per line) or a .tsv with a 'sentence' column")
    parser.add_argument("--batch-sizes", default="1,32")
    parser.add_argument("--requests", type=int, default=100, help="timed requests per batch size per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args(argv)
    if not args.saved_model:
        print(NO_MODEL)
        return 2
    common.configure_threads(args.threads)
    import tensorflow as tf

    print(common.machine_line(args.threads))
    print(common.versions("tensorflow", "tensorflow-text", "keras"))
    text = args.text
    if not text:
        shared = common.default_shared_data()
        if not shared:
            raise SystemExit("error: --text is required (no shared data found)")
        text = shared / "glue" / "SST-2" / "dev.tsv"
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    sentences = read_sentences(text, max(sizes) * 64)
    try:
        import tensorflow_text  # noqa: F401 - registers the text ops an exported preprocessor uses
    except ImportError:
        pass
    loaded = tf.saved_model.load(args.saved_model)
    fn, key = string_signature(loaded, args.signature)

    runners = []
    for size in sizes:
        batches = [tf.constant(sentences[i:i + size]) for i in range(0, len(sentences) - size + 1, size)]
        state = {"i": 0}

        def call(batches=batches, state=state):
            batch = batches[state["i"] % len(batches)]
            state["i"] += 1
            out = fn(**{key: batch})
            for value in out.values():
                value.numpy()
        runner = common.InProcess(f"batch {size}", call, group="kbert", items=size, unit="sentence")
        runner.run(args.warmup)
        runners.append(runner)
    times = common.interleave(runners, args.rounds, args.requests)
    print(f"\n== serving {args.saved_model} ({args.signature}: {key} -> {', '.join(fn.structured_outputs)}), "
          f"one request at a time, sentences from {text}")
    print(f"{'request':<12}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}{'sentences/s':>14}")
    for runner in runners:
        t = sorted(times[runner.name])
        p99 = t[min(len(t) - 1, int(round(0.99 * (len(t) - 1))))]
        mean = statistics.fmean(t)
        print(f"{runner.name:<12}{statistics.median(t) * 1e3:>10.1f}{p99 * 1e3:>10.1f}{mean * 1e3:>10.1f}"
              f"{runner.items / mean:>14,.1f}")
    print("worst ratio kbert / fastest peer: n/a (serving has no peer here)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
