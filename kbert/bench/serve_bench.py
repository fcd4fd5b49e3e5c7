"""python -m kbert.bench serve --saved-model DIR | --hf-dir HF_DIR | --random-hf CONFIG [...]

``--saved-model DIR``: latency and throughput of an exported model that takes raw strings (e.g. an
SST-2 classifier: strings in, labels out), loaded with ``tf.saved_model.load`` and called through
one signature, one request at a time: p50 / p99 latency per request and sentences per second, for
each batch size; ``--concurrency N`` adds rows with N client threads sending one-sentence
requests through an in-process batcher like TF Serving's ``--enable_batching``
(kbert.bench.concurrency). Rounds interleave the batch sizes.

``--hf-dir HF_DIR`` (a Hugging Face BERT folder, e.g. all-MiniLM-L6-v2) or ``--random-hf CONFIG``
(random weights of a kbert preset, e.g. base): kbert's encoder and preprocessor exports of those
weights against ONNX Runtime on the same weights (kbert.bench.serve_ort, kbert.bench.ort_peer).

Sentences come from --text (one per line; a .tsv takes its ``sentence`` column) or the shared
SST-2 dev set.
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import statistics
import sys

from kbert.bench import common, concurrency

NO_MODEL = (
    "serve needs --saved-model DIR: a SavedModel whose signature takes one batch of strings\n"
    "(a [batch] tf.string tensor) and returns the answers, e.g. an SST-2 classifier exported by\n"
    "kbert's task export; or --hf-dir HF_DIR / --random-hf CONFIG (kbert's encoder exports vs\n"
    "ONNX Runtime). Nothing was measured."
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


def _args(argv):
    from kbert.cli_support import ArgumentParser, prog

    parser = ArgumentParser(prog=f"{prog('bench')} serve", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--saved-model", help="SavedModel directory with a string signature")
    parser.add_argument("--hf-dir", help="Hugging Face BERT folder: kbert's exports vs ONNX Runtime on its weights")
    parser.add_argument("--random-hf", metavar="CONFIG",
                        help="like --hf-dir with random weights of this kbert preset (e.g. base) and the shared "
                             "bert-base-uncased vocab (needs torch and transformers)")
    parser.add_argument("--work-dir", help="--hf-dir: keep the exports and ONNX files here (reused by the next "
                                           "run); default a temporary folder")
    parser.add_argument("--vs", default="ort", choices=("ort", "none"), help="--hf-dir: the ONNX Runtime peer or none")
    parser.add_argument("--no-xla", dest="xla", action="store_false",
                        help="--hf-dir: export without the XLA-compiled serving_xla signature")
    parser.add_argument("--signature", default="serving_default")
    parser.add_argument("--text", help="sentences: a text file (one per line) or a .tsv with a 'sentence' column")
    parser.add_argument("--batch-sizes", default="1,32")
    parser.add_argument("--concurrency", default="",
                        help="comma-separated client counts (e.g. 1,8): one-sentence requests from N threads "
                             "through an in-process batcher")
    parser.add_argument("--max-batch", type=int, default=32, help="the batcher's max batch (TF Serving's max_batch_size)")
    parser.add_argument("--batch-timeout-ms", type=float, default=0.0,
                        help="how long the batcher waits for a batch to fill (TF Serving's batch_timeout_micros)")
    parser.add_argument("--requests", type=int, default=100,
                        help="timed requests per candidate per round (--hf-dir: divided by the batch size)")
    parser.add_argument("--min-requests", type=int, default=5, help="--hf-dir: at least this many a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--soak", type=float, default=0.0, metavar="SECONDS",
                        help="--saved-model: then SOAK_CLIENTS threads call the signature for this long; reports "
                             "calls whose outputs differ from one caller's and memory growth, each against its goal")
    parser.add_argument("--soak-clients", type=int, default=8)
    args = parser.parse_args(argv)
    args.sizes = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    args.clients = [int(c) for c in args.concurrency.split(",") if c.strip()]
    if any(n < 1 for n in args.sizes + args.clients):
        parser.error(f"--batch-sizes and --concurrency must be positive: {args.batch_sizes!r}, {args.concurrency!r}")
    return args


def _text(args):
    if args.text:
        return args.text
    shared = common.default_shared_data()
    if not shared:
        raise SystemExit("error: --text is required (no shared data found)")
    return shared / "glue" / "SST-2" / "dev.tsv"


def _random_hf(args):
    """--random-hf CONFIG -> a Hugging Face folder with random weights (made once in --work-dir)."""
    import subprocess
    import tempfile

    from kbert.bench import serve_ort

    shared = common.default_shared_data()
    vocab = shared / "vocab" / "bert-base-uncased" / "vocab.txt" if shared else None
    if not vocab or not vocab.exists():
        raise SystemExit("error: --random-hf needs the shared data's vocab/bert-base-uncased/vocab.txt")
    if not args.work_dir:
        args.work_dir = tempfile.mkdtemp(prefix=f"kbert-serve-{args.random_hf}-")
        args.remove_work_dir = True
    out = pathlib.Path(args.work_dir) / f"hf-random-{args.random_hf}"
    if not (out / "model.safetensors").exists():
        proc = subprocess.run([sys.executable, "-m", "kbert.bench.ort_peer", "--save-random", args.random_hf,
                               str(vocab), str(out)], capture_output=True, text=True, env=serve_ort.child_env())
        if proc.returncode:
            raise SystemExit(f"error: --random-hf {args.random_hf}: {proc.stderr[-2000:]}")
    return out


def main(argv=None):
    args = _args(argv)
    if not (args.saved_model or args.hf_dir or args.random_hf):
        print(NO_MODEL)
        return 2
    common.configure_threads(args.threads)
    import tensorflow as tf

    print(common.machine_line(args.threads))
    print(common.versions("tensorflow", "tensorflow-text", "keras", "onnxruntime"))
    text = _text(args)
    sentences = read_sentences(text, max(args.sizes + [1]) * 64)
    if args.hf_dir or args.random_hf:
        import shutil

        from kbert.bench import serve_ort

        args.remove_work_dir = False
        if args.random_hf:
            args.hf_dir = _random_hf(args)
        args.ort = args.vs == "ort"
        args.sentences = sentences
        print(f"model: {args.hf_dir}; sentences from {text}")
        try:
            return serve_ort.run(args)
        finally:
            if args.remove_work_dir:
                shutil.rmtree(args.work_dir, ignore_errors=True)
    try:
        import tensorflow_text  # noqa: F401 - registers the text ops an exported preprocessor uses
    except ImportError:
        pass
    loaded = tf.saved_model.load(args.saved_model)
    fn, key = string_signature(loaded, args.signature)

    def run_batch(strings):
        return {k: v.numpy() for k, v in fn(**{key: tf.constant(list(strings))}).items()}

    runners = []
    for size in args.sizes:
        batches = [tf.constant(sentences[i:i + size]) for i in range(0, len(sentences) - size + 1, size)]
        state = {"i": 0}

        def call(batches=batches, state=state):
            batch = batches[state["i"] % len(batches)]
            state["i"] += 1
            out = fn(**{key: batch})
            for value in out.values():
                value.numpy()
        runners.append(common.InProcess(f"batch {size}", call, group="kbert", items=size, unit="sentence"))
    for clients in args.clients:
        batcher = concurrency.Batcher(run_batch, concurrency.concat_lists, concurrency.split_rows,
                                      max_batch=args.max_batch, timeout_s=args.batch_timeout_ms / 1e3)
        runners.append(concurrency.ClosedLoop(batcher, [[s] for s in sentences], clients,
                                              name=f"{clients} clients", group="kbert"))
    for runner in runners:
        runner.run(args.warmup)
    times = common.interleave(runners, args.rounds, args.requests)
    print(f"\n== serving {args.saved_model} ({args.signature}: {key} -> {', '.join(fn.structured_outputs)}), "
          f"sentences from {text}; 'batch N': one request at a time; 'N clients': N threads sending one "
          f"sentence each through a batcher (max batch {args.max_batch}, timeout {args.batch_timeout_ms:g} ms)")
    print(f"{'request':<12}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}{'sentences/s':>14}")
    for runner in runners:
        t = sorted(times[runner.name])
        p99 = t[min(len(t) - 1, int(round(0.99 * (len(t) - 1))))]
        mean = statistics.fmean(t)
        rate = getattr(runner, "concurrency", 0) / mean if isinstance(runner, concurrency.ClosedLoop) \
            else runner.items / mean  # N clients in a closed loop: N / mean latency
        print(f"{runner.name:<12}{statistics.median(t) * 1e3:>10.1f}{p99 * 1e3:>10.1f}{mean * 1e3:>10.1f}"
              f"{rate:>14,.1f}")
    print("worst ratio kbert / fastest peer: n/a (serving has no peer here)")
    if args.soak > 0:
        print(soak(run_batch, sentences, args.soak, args.soak_clients))
    return 0


SOAK_MEMORY_GOAL = 0.05  # resident memory may grow at most 5% after warm-up


def soak(run_batch, sentences, seconds, clients) -> str:
    """``clients`` threads calling ``run_batch`` on 16 fixed batches for ``seconds``: every answer
    compared with the single-threaded one, and the process's resident memory before and after.
    Returns the report line, which compares both with their goals."""
    import random
    import threading
    import time

    import numpy as np

    rng = random.Random(0)
    batches = [rng.sample(sentences, rng.randint(1, min(8, len(sentences)))) for _ in range(16)]
    reference = [run_batch(b) for b in batches]
    for _ in range(3):  # warm-up: the first calls allocate what later ones reuse
        for b in batches:
            run_batch(b)
    rss_start, differed, calls = _rss_bytes(), [0], [0] * clients
    deadline = time.monotonic() + seconds

    def worker(k):
        r = random.Random(k)
        while time.monotonic() < deadline:
            i = r.randrange(len(batches))
            got = run_batch(batches[i])
            if any(got[name].shape != want.shape or np.abs(got[name] - want).max() > 1e-6
                   for name, want in reference[i].items() if np.issubdtype(want.dtype, np.number)):
                differed[0] += 1
            calls[k] += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    growth = (_rss_bytes() - rss_start) / rss_start
    memory = "met" if growth <= SOAK_MEMORY_GOAL else "MISSED"
    same = "met" if differed[0] == 0 else "MISSED"
    return (f"soak: {sum(calls)} calls from {clients} clients in {seconds:g} s; outputs differing from one "
            f"caller's: {differed[0]} (goal 0: {same}); memory grew {growth:+.1%} after warm-up "
            f"(goal <= {SOAK_MEMORY_GOAL:.0%}: {memory})")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


if __name__ == "__main__":
    sys.exit(main())
