"""python -m kbert.bench accelerator [--case NAME ...] [--systems kbert,transformers] [--tiny] [--out FILE]

Training-step throughput on an accelerator, without TensorFlow: kbert on Keras' JAX backend against
transformers (torch) on the same device, in the same run, on the same shapes.

Cases (``CASES``; seq/s at the given batch size, which ``--batch-size CASE=N`` changes):
  pretrain-{base,large}-{128,512}   MLM (15% of the positions masked, at most 20 of 128 / 80 of 512
                                    predicted) + NSP, AdamW, bf16, dropout 0.1
  squad-base-384                    the SQuAD fine-tuning step: start/end logits over every position
Systems:
  kbert         ``BertPretrainer`` (or the encoder + a 2-unit sequence head for SQuAD) through Keras'
                own trainer: ``compile(jit_compile=True, steps_per_execution=K)`` + ``fit``, Keras
                AdamW, ``mixed_bfloat16``, ``attention_impl`` "fused" (``kbert.layers.accel``:
                cuDNN flash attention on NVIDIA GPUs, no dropout on the attention probabilities;
                ``--attention-impl plain`` measures the reference path with that dropout)
  transformers  ``BertForPreTraining`` / ``BertForQuestionAnswering`` with SDPA attention (its
                dropout kept), bf16 autocast, ``torch.compile`` of the whole loss, fused AdamW;
                the MLM head at the masked positions only, as kbert and NVIDIA's BERT do
Each (case, system) runs in its own child process with a timeout (a crash or an out-of-memory
error costs that line only), one after another, so the two never share the device. Every line is
written to ``--out`` (JSON Lines) and printed as soon as its child ends.

MFU = model FLOPs per second / ``--peak-tflops`` (989: H100 SXM dense bf16). Model FLOPs of one
sequence of T tokens (``flops_per_sequence``): 6·N·T for the N weights of the L encoder blocks,
plus 12·L·H·T² for the attention scores and weighted sums, plus 6·(weights of the head)·(the
positions it runs at): the MLM transform and tied decoder at the P predicted positions, pooler
and NSP at one, the SQuAD head at all T. Forward + backward = 3 × forward; no recomputation is
counted; embedding lookups are not counted. Both systems are counted alike, so their MFU ratio
is their seq/s ratio.

``--tiny`` runs the same code on a CPU: BERT-Tiny sizes, short sequences, batch 4, a few steps,
transformers without ``torch.compile`` (whose C++ build alone takes minutes on a small CPU).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import time

from kbert.config import BertConfig

H100_SXM_BF16_TFLOPS = 989.0
SYSTEMS = ("kbert", "transformers")
DEFAULT_OUT = "docs/bench/accelerator/accelerator.jsonl"
TINY_OUT = "runs/bench/accelerator-tiny.jsonl"
MASKED_FRACTION = 0.15


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    task: str          # "pretrain" or "squad"
    size: str          # a BertConfig preset
    seq_length: int
    predictions: int   # MLM slots per sequence (pretrain); 0 for squad
    batch_size: int    # on an 80 GB H100


CASES = {c.name: c for c in (
    Case("pretrain-large-128", "pretrain", "large", 128, 20, 256),
    Case("pretrain-base-128", "pretrain", "base", 128, 20, 256),
    Case("squad-base-384", "squad", "base", 384, 0, 64),
    Case("pretrain-base-512", "pretrain", "base", 512, 80, 64),
    Case("pretrain-large-512", "pretrain", "large", 512, 80, 32),
)}


def tiny_case(case: Case) -> Case:
    """The same case at CPU size: BERT-Tiny, sequences of 32 (for 128) or 64, batch 4."""
    seq = 32 if case.seq_length <= 128 else 64
    return dataclasses.replace(case, size="tiny", seq_length=seq,
                               predictions=max(2, case.predictions * seq // case.seq_length) if case.predictions else 0,
                               batch_size=4)


def case_config(case: Case, tiny: bool, dropout: float) -> BertConfig:
    overrides = dict(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    if tiny:
        overrides.update(vocab_size=1000, max_position_embeddings=64)
    return BertConfig.preset(case.size, **overrides)


# -- FLOPs ---------------------------------------------------------------------------------------
def block_parameters(config: BertConfig) -> int:
    """Weights of the L encoder blocks (query/key/value/output, FFN, two LayerNorms), biases included."""
    h, i = config.hidden_size, config.intermediate_size
    attention = 4 * (h * h + h)
    ffn = (h * i + i) + (i * h + h)
    layer_norms = 2 * 2 * h
    return config.num_hidden_layers * (attention + ffn + layer_norms)


def flops_per_sequence(config: BertConfig, task: str, seq_length: int, predictions: int = 0) -> float:
    """Model FLOPs (forward + backward) of one training sequence; see the module docstring."""
    h, v, layers = config.hidden_size, config.vocab_size, config.num_hidden_layers
    flops = 6 * block_parameters(config) * seq_length + 12 * layers * h * seq_length ** 2
    if task == "pretrain":
        mlm = (h * h + h) + 2 * h + (h * v + v)     # transform + LayerNorm + tied decoder and bias
        flops += 6 * mlm * predictions + 6 * ((h * h + h) + (2 * h + 2))  # pooler + NSP at [CLS]
    elif task == "squad":
        flops += 6 * (2 * h + 2) * seq_length
    else:
        raise ValueError(f"unknown task {task!r}; expected pretrain or squad")
    return float(flops)


# -- synthetic batches ---------------------------------------------------------------------------
def synthetic_batch(task: str, vocab_size: int, batch: int, seq: int, predictions: int, seed: int = 0):
    """(x, y) of numpy arrays: random ids (no padding), segment B from the middle; pre-training
    masks round(15% of seq) positions (at most ``predictions``), the other slots weight 0."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x = {"input_word_ids": rng.integers(1, vocab_size, (batch, seq)).astype("int32"),
         "input_mask": np.ones((batch, seq), "int32"),
         "input_type_ids": np.repeat((np.arange(seq) >= seq // 2)[None].astype("int32"), batch, 0)}
    if task == "squad":
        starts = rng.integers(1, seq - 8, (batch,)).astype("int32")
        return x, {"start_logits": starts, "end_logits": starts + rng.integers(0, 8, (batch,)).astype("int32")}
    real = min(predictions, round(MASKED_FRACTION * seq))
    x["masked_lm_positions"] = np.stack(
        [np.sort(rng.permutation(np.arange(1, seq))[:predictions]) for _ in range(batch)]).astype("int32")
    weights = np.zeros((batch, predictions), "float32")
    weights[:, :real] = 1.0
    y = {"masked_lm_ids": rng.integers(0, vocab_size, (batch, predictions)).astype("int32"),
         "masked_lm_weights": weights,
         "next_sentence_labels": rng.integers(0, 2, (batch,)).astype("int32")}
    return x, y


def _versions(*names) -> dict:
    from importlib import metadata

    out = {"python": sys.version.split()[0]}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


# -- kbert (child) -------------------------------------------------------------------------------
def _kbert_model(task, config, attention_impl):
    import keras
    from keras import ops

    from kbert.models.encoder import BertEncoder
    from kbert.models.pretrainer import BertPretrainer
    from kbert.tasks.heads import SequenceHead

    encoder = BertEncoder(config, attention_impl=attention_impl)
    if task == "pretrain":
        return BertPretrainer(encoder), None

    class SpanLogits(keras.Model):
        """Encoder + dropout + 2-unit dense over every position: start and end logits (float32)."""

        def __init__(self, encoder, **kwargs):
            super().__init__(**kwargs)
            self.encoder = encoder
            self.head = SequenceHead(config.hidden_size, 2, dropout=config.hidden_dropout_prob,
                                     initializer_range=config.initializer_range, name="span")

        def call(self, inputs, training=None):
            logits = ops.cast(self.head(self.encoder(inputs, training=training)["sequence_output"],
                                        training=training), "float32")
            return {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}

    loss = {name: keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            for name in ("start_logits", "end_logits")}
    return SpanLogits(encoder), dict(loss=loss, loss_weights={"start_logits": 0.5, "end_logits": 0.5})


def run_kbert(spec: dict) -> dict:
    import jax
    import keras

    keras.mixed_precision.set_global_policy(spec["precision"])
    config = BertConfig.from_dict(spec["config"])
    model, loss_args = _kbert_model(spec["task"], config, spec["attention_impl"])
    spe = int(spec["steps_per_execution"])
    model.compile(optimizer=keras.optimizers.AdamW(learning_rate=1e-4, weight_decay=0.01, epsilon=1e-6),
                  jit_compile=True, steps_per_execution=spe, **(loss_args or {}))
    x, y = synthetic_batch(spec["task"], config.vocab_size, spec["batch_size"], spec["seq_length"],
                           spec["predictions"])

    def batches():
        while True:
            yield x, y

    def steps(n):
        """n optimizer steps (a multiple of steps_per_execution), then wait for the device."""
        start = time.perf_counter()
        model.fit(batches(), steps_per_epoch=n, epochs=1, verbose=0)
        # A small weight that every step updates: reading it waits for the last step.
        probe = min(model.trainable_variables, key=lambda v: math.prod(v.shape))
        keras.ops.convert_to_numpy(probe.value)
        return time.perf_counter() - start

    first = steps(spe)
    steps(max(spe, spec["warmup_steps"] // spe * spe))
    timed = max(spe, spec["steps"] // spe * spe)
    runs = [steps(timed) / timed for _ in range(spec["runs"])]
    device = jax.devices()[0]
    stats = device.memory_stats() or {}
    peak = stats.get("peak_bytes_in_use")
    return dict(step_s=statistics.median(runs), step_s_runs=runs, steps_per_run=timed, first_call_s=first,
                first_call_steps=spe, device=getattr(device, "device_kind", device.platform),
                platform=device.platform, peak_memory_gb=peak / 1e9 if peak else None,
                versions=_versions("keras", "jax", "jaxlib", "numpy"),
                tensorflow_loaded="tensorflow" in sys.modules and sys.modules["tensorflow"] is not None)


# -- transformers (child) ------------------------------------------------------------------------
def run_transformers(spec: dict) -> dict:
    import numpy as np
    import torch
    import torch.nn.functional as F
    import transformers

    cfg = spec["config"]
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    torch.manual_seed(0)
    act = {"gelu": "gelu_new", "gelu_exact": "gelu"}.get(cfg["hidden_act"], cfg["hidden_act"])
    config = transformers.BertConfig(
        vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"], num_hidden_layers=cfg["num_hidden_layers"],
        num_attention_heads=cfg["num_attention_heads"], intermediate_size=cfg["intermediate_size"],
        hidden_act=act, hidden_dropout_prob=cfg["hidden_dropout_prob"],
        attention_probs_dropout_prob=cfg["attention_probs_dropout_prob"],
        max_position_embeddings=cfg["max_position_embeddings"], type_vocab_size=cfg["type_vocab_size"],
        initializer_range=cfg["initializer_range"])
    x, y = synthetic_batch(spec["task"], cfg["vocab_size"], spec["batch_size"], spec["seq_length"],
                           spec["predictions"])
    t = {k: torch.from_numpy(np.asarray(v).astype("int64" if v.dtype.kind == "i" else "float32")).to(device)
         for k, v in {**x, **y}.items()}
    bf16 = spec["precision"] == "mixed_bfloat16"

    if spec["task"] == "pretrain":
        model = transformers.AutoModelForPreTraining.from_config(config, attn_implementation="sdpa")

        def loss_fn():
            out = model.bert(input_ids=t["input_word_ids"], attention_mask=t["input_mask"],
                             token_type_ids=t["input_type_ids"])
            hidden = out.last_hidden_state
            index = t["masked_lm_positions"][..., None].expand(-1, -1, hidden.shape[-1])
            logits = model.cls.predictions(hidden.gather(1, index)).float()
            nsp = model.cls.seq_relationship(out.pooler_output).float()
            ce = F.cross_entropy(logits.flatten(0, 1), t["masked_lm_ids"].flatten(), reduction="none")
            weights = t["masked_lm_weights"].flatten()
            return (ce * weights).sum() / (weights.sum() + 1e-5) + F.cross_entropy(nsp, t["next_sentence_labels"])
    else:
        model = transformers.AutoModelForQuestionAnswering.from_config(config, attn_implementation="sdpa")

        def loss_fn():
            out = model(input_ids=t["input_word_ids"], attention_mask=t["input_mask"],
                        token_type_ids=t["input_type_ids"])
            return 0.5 * (F.cross_entropy(out.start_logits.float(), t["start_logits"])
                          + F.cross_entropy(out.end_logits.float(), t["end_logits"]))

    model.to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-6, weight_decay=0.01, fused=cuda)

    def forward():
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            return loss_fn()

    compiled = torch.compile(forward) if spec.get("torch_compile", True) else forward

    def step():
        loss = compiled()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def steps(n):
        start = time.perf_counter()
        for _ in range(n):
            loss = step()
        float(loss.detach())
        sync()
        return time.perf_counter() - start

    if cuda:
        torch.cuda.reset_peak_memory_stats()
    first = steps(1)
    steps(max(1, spec["warmup_steps"]))
    runs = [steps(spec["steps"]) / spec["steps"] for _ in range(spec["runs"])]
    return dict(step_s=statistics.median(runs), step_s_runs=runs, steps_per_run=spec["steps"], first_call_s=first,
                first_call_steps=1, device=torch.cuda.get_device_name(0) if cuda else "cpu",
                platform=device.type, peak_memory_gb=torch.cuda.max_memory_allocated() / 1e9 if cuda else None,
                versions=_versions("torch", "transformers", "numpy"), fused_adamw=cuda,
                torch_compile=bool(spec.get("torch_compile", True)), model_class=type(model).__name__,
                attention_class=_attention_class(model),
                attn_implementation=getattr(model.config, "_attn_implementation", None))


def _attention_class(model):
    """The class of the first self-attention module (the layout of transformers' BERT varies by version)."""
    for name, module in model.named_modules():
        if name.endswith("attention.self"):
            return type(module).__name__
    return None


def child(spec: dict) -> dict:
    """One (case, system): the measured line (without the parent's fields)."""
    result = (run_kbert if spec["system"] == "kbert" else run_transformers)(spec)
    # The compile (and first-call) cost apart from the steady step time.
    result["compile_s"] = max(0.0, result["first_call_s"] - result["first_call_steps"] * result["step_s"])
    return result


# -- parent --------------------------------------------------------------------------------------
def _spec(case: Case, system: str, args, attention_impl: str) -> dict:
    config = case_config(case, args.tiny, args.dropout)
    return dict(system=system, task=case.task, config=config.to_dict(), seq_length=case.seq_length,
                predictions=case.predictions, batch_size=case.batch_size, precision=args.precision,
                attention_impl=attention_impl, steps_per_execution=args.steps_per_execution,
                steps=args.steps, runs=args.runs, warmup_steps=args.warmup_steps,
                torch_compile=not args.no_torch_compile)


def _line(case: Case, spec: dict, args, result: dict) -> dict:
    config = BertConfig.from_dict(spec["config"])
    flops = flops_per_sequence(config, case.task, case.seq_length, case.predictions)
    line = dict(case=case.name, system=spec["system"], tiny=args.tiny,
                model=dict(layers=config.num_hidden_layers, hidden=config.hidden_size,
                           heads=config.num_attention_heads, vocab=config.vocab_size),
                seq_length=case.seq_length, predictions=case.predictions or None, batch_size=case.batch_size,
                precision="bf16" if spec["precision"] == "mixed_bfloat16" else spec["precision"],
                dropout=args.dropout, optimizer="AdamW",
                attention_impl=spec["attention_impl"] if spec["system"] == "kbert" else "sdpa",
                attention_dropout_applied=(args.dropout > 0 and (spec["system"] != "kbert"
                                                                 or spec["attention_impl"] == "plain")),
                steps_per_execution=spec["steps_per_execution"] if spec["system"] == "kbert" else 1,
                flops_per_seq=flops, peak_tflops=args.peak_tflops,
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    if "error" in result:
        line.update(seq_per_s=None, mfu=None, error=result["error"])
        return line
    seq_per_s = case.batch_size / result["step_s"]
    line.update(seq_per_s=seq_per_s, tokens_per_s=seq_per_s * case.seq_length,
                model_tflops_per_s=flops * seq_per_s / 1e12, mfu=flops * seq_per_s / (args.peak_tflops * 1e12))
    line.update({k: v for k, v in result.items() if k not in line})
    return line


def _run_child(spec: dict, timeout: float) -> dict:
    env = dict(os.environ)
    root = str(pathlib.Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    if spec["system"] == "kbert":
        env["KERAS_BACKEND"] = "jax"
        env.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.90")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        done = subprocess.run([sys.executable, "-m", "kbert.bench.accelerator_bench", "--child", json.dumps(spec)],
                              env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode or not lines:
        tail = " | ".join(done.stderr.strip().splitlines()[-6:])
        return {"error": f"exit code {done.returncode}: {tail[-1500:]}"}
    return json.loads(lines[-1])


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="kbert bench accelerator", description=__doc__.split("\n\n")[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", action="append", choices=sorted(CASES), default=[],
                        help="a case to run (repeatable; default all, in this order: " + ", ".join(CASES) + ")")
    parser.add_argument("--systems", default="kbert,transformers", help="comma-separated: kbert, transformers")
    parser.add_argument("--batch-size", action="append", default=[], metavar="CASE=N",
                        help="another batch size for a case (repeatable)")
    parser.add_argument("--attention-impl", default="fused",
                        help="kbert's attention, comma-separated for several lines: fused, plain, auto")
    parser.add_argument("--precision", default="mixed_bfloat16", choices=("mixed_bfloat16", "float32"))
    parser.add_argument("--dropout", type=float, default=0.1, help="hidden and attention dropout")
    parser.add_argument("--steps", type=int, default=20, help="optimizer steps per timed run")
    parser.add_argument("--runs", type=int, default=3, help="timed runs (the median counts)")
    parser.add_argument("--warmup-steps", type=int, default=10, help="untimed steps after the first call")
    parser.add_argument("--steps-per-execution", type=int, default=10, help="kbert: Keras steps_per_execution")
    parser.add_argument("--no-torch-compile", action="store_true", help="transformers in eager mode")
    parser.add_argument("--peak-tflops", type=float, default=H100_SXM_BF16_TFLOPS,
                        help="the device's dense bf16 peak, for MFU (default: H100 SXM, 989)")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per (case, system) child")
    parser.add_argument("--deadline", type=float, default=None,
                        help="seconds for the whole run: a child gets what is left, none starts with < 20 s")
    parser.add_argument("--tiny", action="store_true", help="BERT-Tiny, short sequences, batch 4 (a CPU test)")
    parser.add_argument("--out", help=f"JSON Lines file (default {DEFAULT_OUT}; with --tiny {TINY_OUT})")
    parser.add_argument("--append", action="store_true", help="append to --out instead of replacing it")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tiny:
        args.steps, args.runs, args.warmup_steps = min(args.steps, 2), min(args.runs, 1), min(args.warmup_steps, 1)
        args.steps_per_execution = min(args.steps_per_execution, 2)
        args.no_torch_compile = True  # inductor's C++ build alone takes minutes on a small CPU
    return parser, args


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, args = parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))), flush=True)
        return 0
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    impls = [s.strip() for s in args.attention_impl.split(",") if s.strip()]
    bad = [s for s in systems if s not in SYSTEMS] + [s for s in impls if s not in ("fused", "plain", "auto")]
    if bad or not systems or not impls:
        parser.error(f"unknown system or attention implementation: {', '.join(bad) or '(none given)'}")
    if args.steps < 1 or args.runs < 1 or args.steps_per_execution < 1:
        parser.error("--steps, --runs and --steps-per-execution must be >= 1")
    sizes = {}
    for item in args.batch_size:
        name, _, value = item.partition("=")
        if name not in CASES or not value.isdigit() or int(value) < 1:
            parser.error(f"--batch-size {item!r}: expected CASE=N with CASE one of {', '.join(CASES)}")
        sizes[name] = int(value)
    cases = [CASES[name] for name in (args.case or CASES)]
    cases = [dataclasses.replace(c, batch_size=sizes.get(c.name, c.batch_size)) for c in cases]
    if args.tiny:
        cases = [tiny_case(c) for c in cases]
    out = pathlib.Path(args.out or (TINY_OUT if args.tiny else DEFAULT_OUT))
    out.parent.mkdir(parents=True, exist_ok=True)
    if not args.append:
        out.write_text("")
    start = time.monotonic()
    lines = []
    for case in cases:
        for system in systems:
            for impl in (impls if system == "kbert" else ["sdpa"]):
                spec = _spec(case, system, args, impl)
                left = None if args.deadline is None else args.deadline - (time.monotonic() - start)
                if left is not None and left < 20:
                    result = {"error": f"skipped: {args.deadline:.0f} s deadline reached"}
                else:
                    print(f"# {case.name} {system}{' ' + impl if system == 'kbert' else ''} ...",
                          file=sys.stderr, flush=True)
                    result = _run_child(spec, args.timeout if left is None else min(args.timeout, left))
                line = _line(case, spec, args, result)
                lines.append(line)
                with out.open("a") as f:
                    f.write(json.dumps(line) + "\n")
                print(json.dumps(line), flush=True)
    print_table(lines, file=sys.stderr)
    print(f"wrote {len(lines)} lines to {out}", file=sys.stderr)
    return 0 if all("error" not in ln for ln in lines) else 1


def print_table(lines, file=None):
    file = file or sys.stdout
    print(f"\n{'case':<20}{'system':<22}{'batch':>6}{'seq/s':>10}{'MFU':>7}{'compile s':>11}{'peak GB':>9}",
          file=file)
    for ln in lines:
        system = ln["system"] + (f" ({ln['attention_impl']})" if ln["system"] == "kbert" else "")
        if ln.get("error"):
            print(f"{ln['case']:<20}{system:<22}{ln['batch_size']:>6}  error: {ln['error'][:80]}", file=file)
            continue
        mem = f"{ln['peak_memory_gb']:.1f}" if ln.get("peak_memory_gb") else "-"
        print(f"{ln['case']:<20}{system:<22}{ln['batch_size']:>6}{ln['seq_per_s']:>10.1f}"
              f"{100 * ln['mfu']:>6.1f}%{ln['compile_s']:>11.1f}{mem:>9}", file=file)


if __name__ == "__main__":
    sys.exit(main())
