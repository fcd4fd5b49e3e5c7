"""python -m kbert.bench pretrain: kbert vs keras-hub's BertMaskedLM, same everything.

Same config, vocab, data (the same masked batches, in the same order), masking, optimizer
(AdamW, warmup + linear decay) and number of steps; MLM only, since keras-hub's BertMaskedLM has
no NSP head. Training alternates between the two models in chunks so that both see the same
machine load; it prints steps/s and held-out MLM accuracy for each, and the ratio.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import tempfile
import time

SHARED = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "data"


def parse_args(argv):
    from kbert.cli_support import ArgumentParser, prog

    p = ArgumentParser(prog=f"{prog('bench')} pretrain", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="mini", help="preset (tiny, mini, small, ...)")
    p.add_argument("--vocab", default=str(SHARED / "vocab" / "bert-base-uncased" / "vocab.txt"))
    p.add_argument("--train", default=str(SHARED / "corpus" / "en" / "[a-o]*.txt"), help="glob of training text")
    p.add_argument("--eval", default=str(SHARED / "corpus" / "en" / "[p-z]*.txt"), help="glob of held-out text")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--chunk", type=int, default=25, help="steps per interleaved chunk")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-length", type=int, default=128)
    p.add_argument("--max-predictions", type=int, default=20)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--eval-batches", type=int, default=20)
    p.add_argument("--work-dir", default=None)
    return p.parse_args(argv)


def _records(args, work):
    from pipelines.pretraining_data import run

    for name, pattern in (("train", args.train), ("eval", args.eval)):
        if not list(work.glob(f"{name}-*.tfrecord")):
            run(["--input", pattern, "--output", str(work / name), "--vocab", args.vocab, "--format", "prose",
                 "--num-shards", "2"])


def _batches(pattern, args, n, seed):
    from kbert.data.pretraining import pretraining_dataset
    from kbert.text import BertPreprocessor, load_vocab
    from kbert.text.masking import MlmMasker

    vocab = load_vocab(args.vocab)
    pre = BertPreprocessor(vocab, seq_length=args.seq_length)
    masker = MlmMasker(vocab, max_predictions=args.max_predictions)
    ds = pretraining_dataset(pattern, pre, masker, args.batch_size, seed=seed, use_nsp=False)
    return [({k: v.numpy() for k, v in x.items()}, {k: v.numpy() for k, v in y.items()}) for x, y in ds.take(n)]


def _kbert_model(config, steps, lr):
    from kbert.models import BertEncoder
    from kbert.models.pretrainer import BertPretrainer
    from kbert.training.optimization import create_optimizer

    model = BertPretrainer(BertEncoder(config), use_nsp=False)
    model.compile(optimizer=create_optimizer(lr, steps, steps // 10))
    return model, lambda x, y: (x, y)


def _keras_hub_model(config, steps, lr):
    import keras
    import keras_hub

    from kbert.training.optimization import create_optimizer

    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size, max_sequence_length=config.max_position_embeddings)
    model = keras_hub.models.BertMaskedLM(backbone)
    model.compile(optimizer=create_optimizer(lr, steps, steps // 10),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="mlm_accuracy")])

    def adapt(x, y):
        inputs = {"token_ids": x["input_word_ids"], "padding_mask": x["input_mask"].astype(bool),
                  "segment_ids": x["input_type_ids"], "mask_positions": x["masked_lm_positions"]}
        return inputs, y["masked_lm_ids"], y["masked_lm_weights"]

    return model, adapt


def _train_chunk(model, adapt, batches):
    start = time.perf_counter()
    for x, y in batches:
        data = adapt(x, y)
        if len(data) == 3:
            model.train_on_batch(data[0], data[1], sample_weight=data[2])
        else:
            model.train_on_batch(data[0], data[1])
    return time.perf_counter() - start


def _accuracy(model, adapt, batches):
    import numpy as np

    correct = total = 0.0
    for x, y in batches:
        data = adapt(x, y)
        out = model.predict_on_batch(data[0])
        logits = out["mlm_logits"] if isinstance(out, dict) else out
        pred = np.argmax(np.asarray(logits), -1)
        w = y["masked_lm_weights"]
        correct += float(((pred == y["masked_lm_ids"]) * w).sum())
        total += float(w.sum())
    return correct / total


def main(argv=None):
    args = parse_args(argv or [])  # before TensorFlow: --help and a wrong flag answer at once
    import keras

    from kbert.config import BertConfig
    from kbert.text import load_vocab

    work = pathlib.Path(args.work_dir or os.path.join(tempfile.gettempdir(), "kbert_bench_pretrain"))
    work.mkdir(parents=True, exist_ok=True)
    _records(args, work)
    vocab_size = len(load_vocab(args.vocab))
    config = BertConfig.preset(args.config, vocab_size=vocab_size)
    train = _batches(str(work / "train-*.tfrecord"), args, args.steps, seed=0)
    held_out = _batches(str(work / "eval-*.tfrecord"), args, args.eval_batches, seed=1)
    models = {}
    for name, build in (("kbert", _kbert_model), ("keras-hub", _keras_hub_model)):
        keras.utils.set_random_seed(0)
        models[name] = build(config, args.steps, args.learning_rate)
    start_acc = {name: _accuracy(m, a, held_out[:5]) for name, (m, a) in models.items()}
    times = {name: [] for name in models}
    for i in range(0, args.steps, args.chunk):
        chunk = train[i:i + args.chunk]
        for name, (model, adapt) in models.items():
            times[name].append(_train_chunk(model, adapt, chunk) / len(chunk))
    print(f"\npre-training BERT-{args.config} (L{config.num_hidden_layers}/H{config.hidden_size}), "
          f"batch {args.batch_size}, seq {args.seq_length}, {args.max_predictions} predictions, "
          f"{args.steps} steps, vocab {vocab_size}, MLM only, AdamW lr {args.learning_rate}")
    print(f"{'model':<10} {'steps/s (median)':>17} {'min-max s/step':>16} {'MLM acc start':>14} {'MLM acc end':>12}")
    rows = {}
    for name, (model, adapt) in models.items():
        warm = times[name][1:] or times[name]  # the first chunk includes tracing
        sps = 1.0 / statistics.median(warm)
        acc = _accuracy(model, adapt, held_out)
        rows[name] = (sps, acc)
        print(f"{name:<10} {sps:>17.2f} {min(warm):>7.3f}-{max(warm):<8.3f} {start_acc[name]:>14.4f} {acc:>12.4f}")
    speed = rows["kbert"][0] / rows["keras-hub"][0]
    print(f"kbert / keras-hub: speed {speed:.2f}x, held-out MLM accuracy {rows['kbert'][1]:.4f} vs "
          f"{rows['keras-hub'][1]:.4f} ({rows['kbert'][1] - rows['keras-hub'][1]:+.4f})")
    return 0
