"""python -m kbert.bench pipeline [--data 'PT-*.tfrecord'] [--vocab vocab.txt] [--batch-size 32] ...

Examples per second of the pre-training input pipeline (TFRecords of raw text -> parse ->
tokenize + pack -> dynamic MLM masking -> batches), interleaved rounds:
  * kbert ``kbert.data.pretraining.pretraining_dataset`` (batch-then-map: one call of the text
    layers per batch);
  * the same kbert layers mapped per example, then batched (map-then-batch), for comparison;
  * keras-hub ``BertTokenizer`` + ``MultiSegmentPacker`` + ``MaskedLMMaskGenerator``, batch-then-map.
Each round builds a fresh iterator per candidate, lets it warm up (shuffle buffer, autotuning) for
--warmup-batches, then times --batches batches; deleting the iterator stops its background threads
before the next candidate runs. Without --data, TFRecords are written first from the shared
corpus with ``python -m pipelines.pretraining_data`` (about 20 s).
The last line is the pipeline's rate over the training step's consumption against the goal (>= 50x):
--train-rate SEQ_PER_S, or measured here with kbert's BERT-Small pre-training step (--config).
"""

from __future__ import annotations

import argparse
import glob
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from kbert.bench import common

PIPELINE_GOAL = 50  # the input pipeline must outrun the training step it feeds by this factor


def make_records(vocab, workdir, corpus=None):
    """TFRecords of NSP instances from the shared corpus (``pipelines/pretraining_data.py``)."""
    shared = common.default_shared_data()
    corpus = corpus or (str(shared / "corpus" / "en" / "*.txt") if shared else None)
    if not corpus:
        raise SystemExit("error: no --data given and no shared corpus found (set KBERT_SHARED_DATA)")
    out = pathlib.Path(workdir) / "pt"
    repo = pathlib.Path(__file__).resolve().parents[2]
    print(f"  writing TFRecords from {corpus} ...", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "pipelines.pretraining_data", "--input", corpus, "--output", str(out),
                    "--vocab", str(vocab), "--format", "prose"], check=True, cwd=repo,
                   stdout=subprocess.DEVNULL)
    return f"{out}*"


def _kbert_map_then_batch(pattern, preprocessor, masker, batch_size, seed=0):
    import tensorflow as tf

    from kbert.data.pretraining import FEATURES, record_dataset

    ds = record_dataset(pattern, True, None, seed, False, None).shuffle(10_000, seed=seed)

    def one(record):
        ex = tf.io.parse_example(record[None], FEATURES)
        masked = masker(preprocessor([ex["text_a"], ex["text_b"]]))
        return {k: v[0] for k, v in masked.items()}, tf.cast(ex["next_sentence_label"][0], tf.int32)

    return ds.map(one, num_parallel_calls=tf.data.AUTOTUNE).batch(batch_size, drop_remainder=True).prefetch(
        tf.data.AUTOTUNE)


def _hub_pipeline(pattern, vocab_file, batch_size, seq_length, predictions, seed=0):
    import keras_hub
    import tensorflow as tf

    from kbert.data.pretraining import FEATURES, record_dataset

    tokenizer = keras_hub.models.BertTokenizer(vocabulary=str(vocab_file), lowercase=True)
    packer = keras_hub.layers.MultiSegmentPacker(
        sequence_length=seq_length, start_value=tokenizer.cls_token_id, end_value=tokenizer.sep_token_id,
        pad_value=tokenizer.pad_token_id)
    masker = keras_hub.layers.MaskedLMMaskGenerator(
        vocabulary_size=tokenizer.vocabulary_size(), mask_selection_rate=0.15,
        mask_token_id=tokenizer.mask_token_id, mask_selection_length=predictions,
        unselectable_token_ids=[tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id])
    ds = record_dataset(pattern, True, None, seed, False, None).shuffle(10_000, seed=seed)
    ds = ds.batch(batch_size, drop_remainder=True)

    def to_inputs(records):
        ex = tf.io.parse_example(records, FEATURES)
        ids, segments = packer((tokenizer(ex["text_a"]), tokenizer(ex["text_b"])))
        masked = masker(ids)
        features = {"token_ids": masked["token_ids"], "segment_ids": segments,
                    "padding_mask": ids != tokenizer.pad_token_id, "mask_positions": masked["mask_positions"]}
        return features, (masked["mask_ids"], tf.cast(ex["next_sentence_label"], tf.int32)), masked["mask_weights"]

    return ds.map(to_inputs, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


class _PipelineRunner(common.Runner):
    """One round = fresh iterator, ``warmup`` untimed batches, ``batches`` timed batches."""

    def __init__(self, name, make, batch_size, batches, warmup, group="peer"):
        self.name, self.make, self.group = name, make, group
        self.batch_size, self.batches, self.warmup = batch_size, batches, warmup
        self.items = batch_size
        self.unit = "ex"
        self.framework = "tf"

    def run(self, n):
        times = []
        for _ in range(n):
            iterator = iter(self.make())
            for _ in range(self.warmup):
                next(iterator)
            start = time.perf_counter()
            for _ in range(self.batches):
                next(iterator)
            times.append((time.perf_counter() - start) / self.batches)  # seconds per batch
            del iterator
        return times


def measure_train_rate(args):
    """kbert's pre-training step (no peers), examples per second: the pipeline's consumer."""
    from kbert.config import BertConfig
    from kbert.bench import train_bench

    case = common.Case(args.config, args.batch_size, args.seq_length)
    config = BertConfig.preset(args.config)
    x, y = train_bench._batch(case, config, args.predictions)
    import tensorflow as tf

    model = train_bench.kbert_pretrainer(config, case, False, 1)
    step = train_bench._step_fn(model, tf.data.Dataset.from_tensors((x, y)).repeat(), 1)
    step()
    times = common.InProcess("train", step).run(args.train_steps)
    return args.batch_size / sorted(times)[len(times) // 2]


def main(argv=None):
    from kbert.cli_support import ArgumentParser, prog

    parser = ArgumentParser(prog=f"{prog('bench')} pipeline", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="TFRecords glob written by pipelines/pretraining_data.py")
    parser.add_argument("--vocab", help="vocab.txt (default: the shared bert-base-uncased vocab)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--predictions", type=int, default=20)
    parser.add_argument("--batches", type=int, default=100, help="timed batches per candidate per round")
    parser.add_argument("--warmup-batches", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--vs", default="keras-hub,map-then-batch",
                        help="comparison rows, comma-separated: keras-hub, map-then-batch; or none")
    parser.add_argument("--config", default="small", help="model of the training step (the consumer)")
    parser.add_argument("--train-rate", type=float, help="the training step's examples/s (else measured)")
    parser.add_argument("--train-steps", type=int, default=3)
    args = parser.parse_args(argv)
    common.configure_threads(args.threads)
    print(common.machine_line(args.threads))
    print(common.versions("tensorflow", "tensorflow-text", "keras", "keras-hub"))
    vocab = args.vocab
    if not vocab:
        shared = common.default_shared_data()
        if not shared:
            raise SystemExit("error: --vocab is required (no shared data found)")
        vocab = shared / "vocab" / "bert-base-uncased" / "vocab.txt"
    peers = {p.strip() for p in args.vs.split(",") if p.strip() and p.strip() != "none"}
    with tempfile.TemporaryDirectory() as tmp:
        pattern = args.data or make_records(vocab, tmp)
        if not glob.glob(pattern):
            raise SystemExit(f"error: --data {pattern!r} matches no files")
        return _run(args, pattern, vocab, peers)


def _run(args, pattern, vocab_file, peers):
    from kbert.data.pretraining import pretraining_dataset
    from kbert.text import BertPreprocessor, load_vocab
    from kbert.text.masking import MlmMasker

    vocab = load_vocab(vocab_file)
    pre = BertPreprocessor(vocab, seq_length=args.seq_length)
    masker = MlmMasker(vocab, max_predictions=args.predictions)
    b = args.batch_size
    runners = [_PipelineRunner("kbert pretraining_dataset (batch-then-map)",
                               lambda: pretraining_dataset(pattern, pre, masker, b, seed=0), b,
                               args.batches, args.warmup_batches, group="kbert")]
    if "map-then-batch" in peers:
        runners.append(_PipelineRunner("kbert layers, map-then-batch (for comparison)",
                                       lambda: _kbert_map_then_batch(pattern, pre, masker, b), b,
                                       max(5, args.batches // 10), max(2, args.warmup_batches // 10),
                                       group="info"))
    if "keras-hub" in peers:
        runners.append(_PipelineRunner(
            f"keras-hub {common.versions('keras-hub').split()[-1]} BertTokenizer+Packer+MaskGenerator",
            lambda: _hub_pipeline(pattern, vocab_file, b, args.seq_length, args.predictions), b,
            args.batches, args.warmup_batches))
    times = common.interleave(runners, args.rounds, 1)
    rows = common.summarize(runners, times)
    title = (f"pre-training input pipeline: TFRecords of raw text -> parse, tokenize, pack, mask; batch {b}, "
             f"seq {args.seq_length}, {args.predictions} predictions (time per batch)")
    common.print_table(title, rows, [f"Model Garden: {common.MODEL_GARDEN_NOTE}"])
    rate = next(r.rate for r in rows if r.group == "kbert")
    if args.train_rate:
        train_rate, how = args.train_rate, "given"
    else:
        print("  measuring the training step ...", file=sys.stderr, flush=True)
        train_rate, how = measure_train_rate(args), f"kbert BERT-{args.config.capitalize()} step, measured now"
    print(f"training step consumes {train_rate:,.1f} ex/s ({how})")
    ratio = rate / train_rate
    print(f"ratio pipeline / training consumption: {ratio:,.1f}x  (goal >= {PIPELINE_GOAL}x: "
          f"{'met' if ratio >= PIPELINE_GOAL else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
