"""python -m kbert.bench encoder [--config small] [--batch-size 32] [--precision float32] [--vs keras-hub,hf] ...

Inference throughput of the BERT encoder (sequence_output of a full [batch, seq] batch, random
weights and ids, every token real) for kbert and its peers, interleaved in the same run:
  * kbert ``BertEncoder`` in a ``tf.function`` (no XLA: kbert's default on CPU; ``--xla`` for more);
  * keras-hub ``BertBackbone`` of the same shape, with and without XLA (fp32; bf16: without, as XLA
    is slow for bf16 on CPU; ``--xla both`` to time it anyway);
  * Hugging Face ``BertModel`` (torch, sdpa attention), eager and ``torch.compile``, in a child
    process with the same thread count, when transformers is installed;
  * ONNX Runtime on the same shape exported with torch.onnx, plain and after its transformer
    optimizer, in a child process with the same threads (kbert.bench.ort_peer; float32);
  * Model Garden (tf-models-official 2.20, which pins TensorFlow 2.20): in a child process of
    ``--model-garden-python`` (a separate environment, see kbert/bench/mg_peer.py), XLA off and on.
``--precision mixed_bfloat16`` runs Keras' mixed_bfloat16 policy for kbert and keras-hub, and
torch.autocast(bfloat16) for transformers; kbert's bf16 output is checked against float32. On a CPU
without bf16 instructions kbert multiplies its bf16 operands in float32 (same numbers, ~5x faster
than oneDNN's emulated bf16 matmul); ``--bf16-matmul both`` adds the native-bf16 row.
In float32 a "floor" row times kbert's dense projections alone (no attention, LayerNorm, transposes):
not a candidate, a bound on what any layout change could buy (``--no-floor`` to skip).
``--attentions`` adds beside each kbert row the same encoder returning every layer's attention
probabilities (what asking for them costs; not a candidate).
``--suite issue7`` runs the four rows the speed targets are set on (docs/performance.md). The last line is the worst ratio kbert / fastest peer.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import sys
import tempfile

from kbert.bench import common

SUITES = {
    "issue7": ["small:32:float32", "base:8:float32", "base:1:float32", "base:8:mixed_bfloat16"],
}
# The --attentions row: the plain row's name with this in place of its closing parenthesis.
ATTENTIONS_ROW = ", attentions returned)"


def _inputs(case, vocab_size):
    import numpy as np

    rng = np.random.default_rng(0)
    ids = rng.integers(1, vocab_size, (case.batch_size, case.seq_length)).astype("int32")
    mask = np.ones_like(ids)
    types = np.zeros_like(ids)
    types[:, case.seq_length // 2:] = 1
    return ids, mask, types


def _xla_modes(args, who, precision):
    if args.xla == "both":
        return (False, True)
    if args.xla == "on":
        return (True,)
    if args.xla == "off":
        return (False,)
    if who == "kbert":
        return (False,)
    # Peers get both, whatever the precision: on a CPU without bf16 instructions XLA upcasts
    # bf16 dots to float32 and is the fast bf16 setting (docs/bench/code-notes).
    return (False, True)


def run_case(case, args, peers):
    import keras

    from kbert.config import BertConfig

    config = BertConfig.preset(case.config)
    flops = common.encoder_flops(config, case.seq_length)
    notes = []
    runners, encoder = _in_process_rows(case, args, peers, config, flops, notes)
    print(f"  warming up {len(runners)} in-process candidates ...", file=sys.stderr, flush=True)
    common.warm_up(runners, args.warmup)
    children, child_runners = _child_peers(case, args, peers, config, flops, notes)
    runners += child_runners
    try:
        times = common.interleave(runners, args.rounds, args.reps)
    finally:
        for child in children:
            child.close()
            if getattr(child, "work_dir", None):
                shutil.rmtree(child.work_dir, ignore_errors=True)
    rows = common.summarize(runners, times)
    notes.extend(_floor_notes(rows))
    notes.extend(_attentions_notes(rows))
    title = f"encoder inference, {case.label}: {flops / 1e9:.2f} GFLOP/seq"
    ratio = common.print_table(title, rows, notes)
    short = f"encoder {case.config} b{case.batch_size} {case.precision}"
    del runners, encoder
    keras.backend.clear_session()
    gc.collect()
    return short, ratio


def _in_process_rows(case, args, peers, config, flops, notes):
    """(the candidates timed in this process: the matmul peak, kbert's rows, the floor, keras-hub's;
    kbert's encoder), built under the case's dtype policy; the bf16 check goes to ``notes``."""
    import keras
    import tensorflow as tf

    from kbert.models import BertEncoder

    ids, mask, types = _inputs(case, config.vocab_size)
    kin = {"input_word_ids": tf.constant(ids), "input_mask": tf.constant(mask), "input_type_ids": tf.constant(types)}
    runners = []
    if not args.no_peak:
        runners.append(common.tf_matmul_peak(case.precision))
    with _policy(case.precision):
        keras.utils.set_random_seed(0)
        encoder = BertEncoder(config)
        runners += _kbert_rows(encoder, kin, case, args, flops)
        if case.precision == "float32" and not args.no_floor:
            runners.append(_projection_floor(encoder, case))
        if "keras-hub" in peers:
            runners += _keras_hub_rows(config, kin, case, args, flops)
        if case.precision != "float32":
            notes.append(_bf16_check(encoder, config, kin))
    return runners, encoder


def _kbert_rows(encoder, kin, case, args, flops):
    """kbert's encoder in a tf.function per XLA and bf16 matmul mode (and its --attentions rows)."""
    import tensorflow as tf

    spec = tf.TensorSpec([None, None], tf.int32)
    runners = []
    for jit in _xla_modes(args, "kbert", case.precision):
        for mode in _bf16_modes(args, case.precision):
            with _bf16_matmul(mode):
                fn = tf.function(lambda x: encoder(x, training=False)["sequence_output"], jit_compile=jit,
                                 input_signature=[{k: spec for k in kin}])
                fn(kin)  # trace now: the bf16 matmul mode is read while tracing
            name = f"kbert ({'XLA' if jit else 'no XLA'}"
            if case.precision != "float32":
                name += f", mixed_bfloat16, bf16 matmuls {mode}"
            runners.append(common.InProcess(name + ")", lambda fn=fn: fn(kin).numpy(), group="kbert",
                                            items=case.batch_size, flops=flops * case.batch_size,
                                            framework=f"tf-{case.precision}"))
            if args.attentions:
                runners.append(_attentions_row(encoder, kin, name, jit, mode, case, flops))
    return runners


def _keras_hub_rows(config, kin, case, args, flops):
    """keras-hub's ``BertBackbone`` of the same shape (its own random weights), per XLA mode."""
    import keras_hub
    import tensorflow as tf

    spec = tf.TensorSpec([None, None], tf.int32)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size, max_sequence_length=config.max_position_embeddings)
    hin = {"token_ids": kin["input_word_ids"], "padding_mask": kin["input_mask"],
           "segment_ids": kin["input_type_ids"]}
    runners = []
    for jit in _xla_modes(args, "keras-hub", case.precision):
        fn = tf.function(lambda x: backbone(x, training=False)["sequence_output"], jit_compile=jit,
                         input_signature=[{k: spec for k in hin}])
        name = (f"keras-hub {common.versions('keras-hub').split()[-1]} "
                f"({'XLA' if jit else 'no XLA'}{', mixed_bfloat16' if case.precision != 'float32' else ''})")
        runners.append(common.InProcess(name, lambda fn=fn: fn(hin).numpy(), items=case.batch_size,
                                        flops=flops * case.batch_size, framework=f"tf-{case.precision}"))
    return runners


def _child_peers(case, args, peers, config, flops, notes):
    """(the child processes started: transformers, ONNX Runtime, Model Garden, as asked and
    installed; the candidates they time), the reason for each one skipped in ``notes``."""
    children, runners = [], []
    child = _hf_peer(case, args, peers, config, flops, notes)
    if child:
        children.append(child)
        runners += [r for r in child.runners if not (args.no_peak and r.group == "peak")]
    child = _ort_peer(args, peers, notes, case, config, flops)
    if child:
        children.append(child)
        runners += child.runners
    child = common.model_garden_peer(args, peers, notes, task="encoder", config=config.to_dict(),
                                     batch_size=case.batch_size, seq_length=case.seq_length,
                                     precision=case.precision, flops=flops)
    if child:
        children.append(child)
        runners += child.runners
    return children, runners


def _hf_peer(case, args, peers, config, flops, notes):
    """The transformers child (kbert.bench.hf_peer) when asked for and installed, else None (with
    the reason in ``notes`` where it is not installed)."""
    if "hf" not in peers:
        return None
    if not (common.have("torch") and common.have("transformers")):
        notes.append("transformers: not installed (pip install torch transformers): peer skipped")
        return None
    print("  building the transformers peer (torch.compile can take minutes) ...", file=sys.stderr, flush=True)
    return common.SubprocessPeer("kbert.bench.hf_peer", dict(
        task="encoder", config=config.to_dict(), batch_size=case.batch_size,
        seq_length=case.seq_length, precision=case.precision, threads=args.threads,
        compile=args.hf_compile, warmup=args.warmup, flops=flops), args.threads)


def _ort_peer(args, peers, notes, case, config, flops):
    """ONNX Runtime (kbert.bench.ort_peer: the same shape's random weights, exported with
    torch.onnx, plain and transformer-optimized) in a child process, or None with the reason."""
    if "ort" not in peers:
        return None
    from kbert.bench import ort_peer

    reason = ort_peer.missing()
    if not reason and case.precision != "float32":
        reason = "ONNX Runtime: float32 only (its CPU bf16 path is not the optimizer's): peer skipped"
    if reason:
        notes.append(reason)
        return None
    print("  building the ONNX Runtime peer (torch.onnx export, optimizer) ...", file=sys.stderr, flush=True)
    work = tempfile.mkdtemp(prefix="kbert-ort-")
    try:
        child = common.SubprocessPeer("kbert.bench.ort_peer", dict(
            config=config.to_dict(), work_dir=work, threads=args.threads, warmup=args.warmup, flops=flops,
            cases=[dict(name="encoder", kind="ids", batch_size=case.batch_size, seq_length=case.seq_length)]),
            args.threads)
    except RuntimeError as e:
        shutil.rmtree(work, ignore_errors=True)
        notes.append(f"ONNX Runtime: the peer failed to start ({e}): peer skipped")
        return None
    child.work_dir = work
    return child


def _projection_floor(encoder, case):
    """kbert's dense projections alone: a bound, not a model.

    The 6 x L MatMul(+BiasAdd, +GELU, +residual) ops of ``encoder``'s blocks with its weights and
    kbert's own op order (``kbert.layers.projections.dense``: the same fused oneDNN kernels), on
    [batch * seq, H] activations, back to back; no attention scores or softmax, no transposes,
    LayerNorms or embeddings. Its time is what kbert would take if all of that were free, so the
    fastest peer's time over it is the largest ratio kbert could reach with these matmul kernels.
    """
    import tensorflow as tf

    from kbert.layers.projections import dense

    rows = case.batch_size * case.seq_length
    x0 = tf.random.stateless_normal((rows, encoder.config.hidden_size), seed=(5, 6))

    @tf.function
    def fn(x):
        side = []
        for block in encoder.blocks:
            att = block.attention
            side += [dense(att.query, x), dense(att.key, x)]  # returned, so not pruned
            context = dense(att.value, x)
            x = dense(att.output_dense, context, residual=x)
            hidden = dense(block.intermediate, x, activation=block.intermediate.activation)
            x = dense(block.output_dense, hidden, residual=x)
        return x, side

    fn(x0)
    h, i = encoder.config.hidden_size, encoder.config.intermediate_size
    flops = 2.0 * rows * (4 * h * h + 2 * h * i) * len(encoder.blocks)  # its own FLOPs: GFLOP/s is the matmuls'
    return common.InProcess("floor: kbert's projections only (not a model)", lambda: fn(x0)[0].numpy(),
                            group="floor", items=case.batch_size, flops=flops,
                            framework=f"tf-{case.precision}")


def _floor_notes(rows):
    floor = next((r for r in rows if r.group == "floor"), None)
    kbert = max((r for r in rows if r.group == "kbert"), key=lambda r: r.rate, default=None)
    peers = [r for r in rows if r.group == "peer"]
    if not (floor and kbert and peers):
        return []
    best = max(peers, key=lambda r: r.rate)
    return [f"floor: the projections alone take {floor.median * 1e3:,.1f} ms, {floor.median / kbert.median:.0%} of "
            f"kbert's time; everything else in kbert (attention scores, softmax, transposes, LayerNorms, "
            f"embeddings, dispatch) {(kbert.median - floor.median) * 1e3:,.1f} ms. With all of that free, kbert / "
            f"fastest peer would be {floor.rate / best.rate:.2f}."]


def _attentions_row(encoder, kin, plain_name, jit, bf16_mode, case, flops):
    """The plain kbert row's encoder called with ``output_attentions=True``, the sequence output
    and every layer's ``[batch, heads, seq, seq]`` probabilities fetched. Not a candidate (its own group):
    beside the plain row it shows what returning them costs, and the plain row, run against a tree from
    before ``output_attentions`` existed, that not asking for them costs nothing."""
    import tensorflow as tf

    spec = tf.TensorSpec([None, None], tf.int32)
    with _bf16_matmul(bf16_mode):
        fn = tf.function(lambda x: _sequence_and_attentions(encoder(x, training=False, output_attentions=True)),
                         jit_compile=jit, input_signature=[{k: spec for k in kin}])
        fn(kin)  # trace now, as the plain row
    return common.InProcess(plain_name + ATTENTIONS_ROW, lambda: [t.numpy() for t in fn(kin)], group="attentions",
                            items=case.batch_size, flops=flops * case.batch_size, framework=f"tf-{case.precision}")


def _sequence_and_attentions(outputs):
    return [outputs["sequence_output"], *outputs["attention_probs"]]


def _attentions_notes(rows):
    plain = {r.name: r for r in rows if r.group == "kbert"}
    notes = []
    for row in rows:
        base = plain.get(row.name.replace(ATTENTIONS_ROW, ")")) if row.group == "attentions" else None
        if base:
            notes.append(f"{base.name} with attentions returned: {row.median * 1e3:,.1f} ms vs "
                         f"{base.median * 1e3:,.1f} ms without ({row.median / base.median - 1:+.0%})")
    return notes


def _bf16_check(encoder, config, kin):
    """kbert under mixed_bfloat16 against the same weights in float32."""
    import numpy as np

    from kbert.models import BertEncoder

    with _policy("float32"):
        reference = BertEncoder(config)
    reference.set_weights(encoder.get_weights())
    low = np.asarray(encoder(kin, training=False)["sequence_output"], np.float32)
    high = np.asarray(reference(kin, training=False)["sequence_output"], np.float32)
    diff = np.abs(low - high)
    from kbert.layers.tf_fast import bf16_matmul_mode

    return (f"kbert mixed_bfloat16 vs float32, same weights: sequence_output max |diff| {diff.max():.3f}, "
            f"mean {diff.mean():.4f} (values: std {high.std():.2f}; bf16 keeps 8 significant bits, 2^-8 = 0.004); "
            f"bf16 matmuls: {bf16_matmul_mode()} (KBERT_BF16_MATMUL; float32 = bf16 operands multiplied in float32, "
            f"kbert's choice where the CPU has no AVX512_BF16/AMX)")


def _bf16_modes(args, precision):
    from kbert.layers.tf_fast import bf16_matmul_mode

    if precision == "float32":
        return (None,)
    if args.bf16_matmul == "both":
        return ("native", "float32")
    return (bf16_matmul_mode() if args.bf16_matmul == "auto" else args.bf16_matmul,)


class _bf16_matmul:
    """Sets KBERT_BF16_MATMUL (None: leaves it) while a function is traced."""

    def __init__(self, mode):
        self.mode = mode

    def __enter__(self):
        import os

        from kbert.layers import tf_fast

        self.previous = os.environ.get(tf_fast.BF16_MATMUL_ENV)
        if self.mode:
            os.environ[tf_fast.BF16_MATMUL_ENV] = self.mode
            tf_fast.bf16_matmul_mode.cache_clear()

    def __exit__(self, *exc):
        import os

        from kbert.layers import tf_fast

        if self.mode:
            if self.previous is None:
                os.environ.pop(tf_fast.BF16_MATMUL_ENV, None)
            else:
                os.environ[tf_fast.BF16_MATMUL_ENV] = self.previous
            tf_fast.bf16_matmul_mode.cache_clear()


class _policy:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        import keras

        self.previous = keras.config.dtype_policy().name
        keras.config.set_dtype_policy(self.name)

    def __exit__(self, *exc):
        import keras

        keras.config.set_dtype_policy(self.previous)


def main(argv=None):
    from kbert.cli_support import ArgumentParser, prog

    parser = ArgumentParser(prog=f"{prog('bench')} encoder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_model_args(parser, config="small", batch_size=32, suites=SUITES)
    parser.add_argument("--bf16-matmul", default="auto", choices=("auto", "native", "float32", "both"),
                        help="kbert's bf16 matmuls under mixed_bfloat16 (auto: float32 on CPUs without "
                             "AVX512_BF16/AMX); both: a row for each")
    parser.add_argument("--no-floor", action="store_true",
                        help="skip the 'projections only' floor row (float32; a bound, not a candidate)")
    parser.add_argument("--attentions", action="store_true",
                        help="add a row per kbert row with output_attentions=True (every layer's attention "
                             "probabilities returned): not a candidate, a note gives its cost")
    args = parser.parse_args(argv)
    peers = common.peers(args)
    cases = common.parse_cases(args, SUITES)
    common.configure_threads(args.threads)
    print(common.machine_line(args.threads))
    print(common.versions("tensorflow", "keras", "keras-hub", "torch", "transformers", "onnxruntime"))
    results = [run_case(case, args, peers) for case in cases]
    common.print_worst(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
