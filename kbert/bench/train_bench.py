"""python -m kbert.bench train [--config small] [--batch-size 32] [--precision float32] [--vs keras-hub,hf] ...

One pre-training step (MLM at --predictions positions + NSP, AdamW with weight decay, global
clipnorm 1.0, dropout on) on a fixed in-memory batch, for kbert and its peers, interleaved:
  * kbert ``BertPretrainer`` with ``kbert.training.optimization.create_optimizer`` (AdamW, warmup +
    linear decay), one ``train_function`` call per step (no whole-step XLA by default, ``--xla``;
    its element-wise kernels from kbert.layers.tf_elementwise are XLA-compiled either way). GFLOP/s are the
    nominal FLOPs of the step over its time: kbert skips most of the last block's work (only the
    masked positions and [CLS] are computed there), so its figure is an effective one;
  * keras-hub ``BertBackbone`` + ``MaskedLMHead`` (tied embeddings, at the masked positions) + an
    NSP Dense, Keras AdamW with the same settings, with and without XLA;
  * transformers ``BertForPreTraining`` (torch) with the MLM head applied to the gathered masked
    positions, torch AdamW + clip_grad_norm_, eager and torch.compile'd encoder, in a child process;
  * Model Garden (tf-models-official 2.20, which pins TensorFlow 2.20): in a child process of
    ``--model-garden-python`` (a separate environment, see kbert/bench/mg_peer.py), XLA off and on.
``--steps-per-execution`` sets Keras' steps_per_execution for kbert and keras-hub.
``--loss-curve N`` instead trains kbert N steps in float32 and mixed_bfloat16 from the same
initial weights on real masked batches (``--data`` TFRecords, see pipelines/pretraining_data.py)
and prints both loss curves.
"""

from __future__ import annotations

import argparse
import gc
import sys

from kbert.bench import common

SUITES = {"issue7": ["small:32:float32", "small:32:mixed_bfloat16"]}


def _batch(case, config, predictions):
    import numpy as np

    rng = np.random.default_rng(0)
    b, s = case.batch_size, case.seq_length
    x = {
        "input_word_ids": rng.integers(1, config.vocab_size, (b, s)).astype("int32"),
        "input_mask": np.ones((b, s), "int32"),
        "input_type_ids": np.repeat((np.arange(s) >= s // 2)[None].astype("int32"), b, 0),
        "masked_lm_positions": np.stack(
            [np.sort(rng.permutation(np.arange(1, s))[:predictions]) for _ in range(b)]).astype("int32"),
    }
    y = {
        "masked_lm_ids": rng.integers(0, config.vocab_size, (b, predictions)).astype("int32"),
        "masked_lm_weights": np.ones((b, predictions), "float32"),
        "next_sentence_labels": rng.integers(0, 2, (b,)).astype("int32"),
    }
    return x, y


def _step_fn(model, dataset, steps_per_execution):
    """One call = ``steps_per_execution`` optimizer steps through Keras' own train_function."""
    import tensorflow as tf

    model.make_train_function()
    iterator = iter(dataset)

    def step():
        logs = model.train_function(iterator)
        return float(tf.nest.flatten(logs)[0])
    return step


def kbert_pretrainer(config, case, jit, steps_per_execution, total_steps=10_000, warmup_steps=100):
    from kbert.models import BertEncoder
    from kbert.models.pretrainer import BertPretrainer
    from kbert.training.optimization import create_optimizer

    model = BertPretrainer(BertEncoder(config))
    model.compile(optimizer=create_optimizer(1e-4, total_steps, warmup_steps=warmup_steps, weight_decay=0.01),
                  jit_compile=jit, steps_per_execution=steps_per_execution)
    return model


def _hub_pretrainer(config, jit, steps_per_execution):
    import keras
    import keras_hub

    from kbert.layers.activations import gelu_tanh

    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size, max_sequence_length=config.max_position_embeddings)
    positions = keras.Input((None,), dtype="int32", name="masked_lm_positions")
    out = backbone(backbone.input)
    mlm = keras_hub.layers.MaskedLMHead(
        vocabulary_size=config.vocab_size, token_embedding=backbone.token_embedding,
        intermediate_activation=gelu_tanh, name="mlm",  # = keras-hub's gelu_approximate (private)
    )(out["sequence_output"], mask_positions=positions)
    nsp = keras.layers.Dense(2, name="nsp")(out["pooled_output"])
    model = keras.Model({**backbone.input, "masked_lm_positions": positions}, {"mlm": mlm, "nsp": nsp})
    optimizer = keras.optimizers.AdamW(1e-4, weight_decay=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                                       global_clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    model.compile(optimizer=optimizer,
                  loss={"mlm": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                        "nsp": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
                  jit_compile=jit, steps_per_execution=steps_per_execution)
    return model


def _xla_modes(args, who, precision):
    if args.xla == "both":
        return (False, True)
    if args.xla == "on":
        return (True,)
    if args.xla == "off" or who == "kbert":
        return (False,)
    # Peers get both, whatever the precision: on a CPU without bf16 instructions XLA upcasts
    # bf16 dots to float32 and is the fast bf16 setting (docs/bench/code-notes).
    return (False, True)


def run_case(case, args, peers):
    import keras
    import numpy as np
    import tensorflow as tf

    from kbert.config import BertConfig

    config = BertConfig.preset(case.config)
    flops = common.pretraining_flops(config, case.seq_length, args.predictions)
    x, y = _batch(case, config, args.predictions)
    spe = args.steps_per_execution
    items = case.batch_size * spe
    runners, notes = [], []
    if not args.no_peak:
        runners.append(common.tf_matmul_peak(case.precision))
    bf16 = ", mixed_bfloat16" if case.precision != "float32" else ""
    from kbert.layers.tf_fast import bf16_matmul_mode

    kbf16 = f"{bf16}, bf16 matmuls {bf16_matmul_mode()}" if bf16 else ""
    previous = keras.config.dtype_policy().name
    keras.config.set_dtype_policy(case.precision)
    try:
        keras.utils.set_random_seed(0)
        kdata = tf.data.Dataset.from_tensors((x, y)).repeat()
        for jit in _xla_modes(args, "kbert", case.precision):
            model = kbert_pretrainer(config, case, jit, spe)
            runners.append(common.InProcess(
                f"kbert ({'XLA' if jit else 'no XLA'}{kbf16})", _step_fn(model, kdata, spe), group="kbert",
                items=items, flops=flops * items, framework=f"tf-{case.precision}"))
        if "keras-hub" in peers:
            hx = {"token_ids": x["input_word_ids"], "padding_mask": x["input_mask"],
                  "segment_ids": x["input_type_ids"], "masked_lm_positions": x["masked_lm_positions"]}
            hy = {"mlm": y["masked_lm_ids"], "nsp": y["next_sentence_labels"]}
            hw = {"mlm": y["masked_lm_weights"], "nsp": np.ones((case.batch_size,), "float32")}
            hdata = tf.data.Dataset.from_tensors((hx, hy, hw)).repeat()
            version = common.versions("keras-hub").split()[-1]
            for jit in _xla_modes(args, "keras-hub", case.precision):
                model = _hub_pretrainer(config, jit, spe)
                runners.append(common.InProcess(
                    f"keras-hub {version} ({'XLA' if jit else 'no XLA'}{bf16})", _step_fn(model, hdata, spe),
                    items=items, flops=flops * items, framework=f"tf-{case.precision}"))
    finally:
        keras.config.set_dtype_policy(previous)
    print(f"  warming up {len(runners)} in-process candidates ...", file=sys.stderr, flush=True)
    common.warm_up(runners, args.warmup)
    children = []
    if "hf" in peers:
        if not (common.have("torch") and common.have("transformers")):
            notes.append("transformers: not installed (pip install torch transformers): peer skipped")
        else:
            print("  building the transformers peer ...", file=sys.stderr, flush=True)
            child = common.SubprocessPeer("kbert.bench.hf_peer", dict(
                task="train", config=config.to_dict(), batch_size=case.batch_size,
                seq_length=case.seq_length, precision=case.precision, threads=args.threads,
                compile=args.hf_compile, warmup=args.warmup, flops=flops, predictions=args.predictions),
                args.threads)
            children.append(child)
            runners += [r for r in child.runners if not (args.no_peak and r.group == "peak")]
    child = common.model_garden_peer(args, peers, notes, task="train", config=config.to_dict(),
                                     batch_size=case.batch_size, seq_length=case.seq_length,
                                     precision=case.precision, flops=flops, predictions=args.predictions)
    if child:
        children.append(child)
        runners += child.runners
    if spe > 1:
        notes.append(f"Keras rows: one timed call = {spe} steps (steps_per_execution); rates are per example")
    try:
        times = common.interleave(runners, args.rounds, args.reps)
    finally:
        for child in children:
            child.close()
    rows = common.summarize(runners, times)
    title = (f"pre-training step, {case.label}, MLM {args.predictions} positions + NSP, AdamW: "
             f"{flops / 1e9:.1f} GFLOP/example")
    ratio = common.print_table(title, rows, notes)
    short = f"train {case.config} b{case.batch_size} {case.precision}"
    del runners
    keras.backend.clear_session()
    gc.collect()
    return short, ratio


def loss_curves(args):
    """kbert float32 vs mixed_bfloat16 from the same initial weights on the same real batches."""
    import keras
    import numpy as np

    from kbert.config import BertConfig
    from kbert.data.pretraining import pretraining_dataset
    from kbert.text import BertPreprocessor, load_vocab
    from kbert.text.masking import MlmMasker

    if not args.data or not args.vocab:
        raise SystemExit("error: --loss-curve needs --data TFRECORD_GLOB and --vocab vocab.txt")
    vocab = load_vocab(args.vocab)
    config = BertConfig.preset(args.config, vocab_size=len(vocab))
    pre = BertPreprocessor(vocab, seq_length=args.seq_length)
    masker = MlmMasker(vocab, max_predictions=args.predictions)
    keras.utils.set_random_seed(0)
    batches = list(pretraining_dataset(args.data, pre, masker, args.batch_size, seed=0).take(args.loss_curve))
    curves, weights = {}, None
    for precision in ("float32", "mixed_bfloat16"):
        previous = keras.config.dtype_policy().name
        keras.config.set_dtype_policy(precision)
        try:
            keras.utils.set_random_seed(0)
            model = kbert_pretrainer(config, None, False, 1, total_steps=args.loss_curve,
                                     warmup_steps=max(1, args.loss_curve // 10))
            model(batches[0][0])
            if weights is None:
                weights = model.get_weights()
            else:
                model.set_weights(weights)
            keras.utils.set_random_seed(1)
            losses = []
            for i, (x, y) in enumerate(batches):
                losses.append(float(model.train_on_batch(x, y, return_dict=True)["loss"]))
                if (i + 1) % 50 == 0:
                    print(f"  {precision}: step {i + 1}, loss {np.mean(losses[-50:]):.3f}", file=sys.stderr, flush=True)
            curves[precision] = np.array(losses)
        finally:
            keras.config.set_dtype_policy(previous)
        keras.backend.clear_session()
    from kbert.layers.tf_fast import bf16_matmul_mode

    f32, b16 = curves["float32"], curves["mixed_bfloat16"]
    window = max(1, len(f32) // 10)
    print(f"\n== loss curve, kbert BERT-{args.config.capitalize()} batch {args.batch_size} seq {args.seq_length}, "
          f"{len(f32)} steps on the same batches from the same initial weights, AdamW 1e-4, 10% warmup, "
          f"bf16 matmuls {bf16_matmul_mode()} (mean per {window} steps)")
    print(f"{'steps':>11}{'float32':>10}{'bf16':>10}{'bf16 - f32':>12}")
    for i in range(0, len(f32), window):
        a, b = f32[i:i + window].mean(), b16[i:i + window].mean()
        print(f"{i + 1:>5}–{min(i + window, len(f32)):<5}{a:>10.3f}{b:>10.3f}{b - a:>+12.3f}")
    a, b = f32[-window:].mean(), b16[-window:].mean()
    print(f"last {window} steps: float32 {a:.3f}, mixed_bfloat16 {b:.3f} ({b - a:+.3f})")
    return 0


def main(argv=None):
    from kbert.cli_support import ArgumentParser, prog

    parser = ArgumentParser(prog=f"{prog('bench')} train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_model_args(parser, config="small", batch_size=32, suites=SUITES)
    parser.add_argument("--predictions", type=int, default=20, help="MLM positions per sequence")
    parser.add_argument("--steps-per-execution", type=int, default=1)
    parser.add_argument("--loss-curve", type=int, default=0, metavar="STEPS")
    parser.add_argument("--data", help="TFRecords for --loss-curve")
    parser.add_argument("--vocab", help="vocab.txt for --loss-curve")
    args = parser.parse_args(argv)
    common.configure_threads(args.threads)
    print(common.machine_line(args.threads))
    print(common.versions("tensorflow", "keras", "keras-hub", "torch", "transformers"))
    if args.loss_curve:
        return loss_curves(args)
    peers = common.peers(args)
    results = [run_case(case, args, peers) for case in common.parse_cases(args, SUITES)]
    common.print_worst(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
