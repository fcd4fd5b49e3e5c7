"""python -m kbert.bench accelerator [--case NAME ...] [--systems kbert,transformers] [--variant V,...] [--tiny]

Training-step throughput on an accelerator, without TensorFlow: kbert on Keras' JAX backend against
transformers (torch) on the same device, in the same run, on the same shapes.

Cases (``CASES``, in this order; seq/s at the given batch size, which ``--batch-size CASE=N`` changes):
  pretrain-large-128, pretrain-base-512, squad-base-384, pretrain-base-128, pretrain-large-512
                                    MLM (15% of the positions masked, at most 20 of 128 / 80 of 512
                                    predicted) + NSP, AdamW, bf16, dropout 0.1; squad: start/end
                                    logits over every position
Systems:
  kbert         the model the commands train, built through the same library entries
                (``kbert.training.pretrain.build_pretrainer``; for SQuAD the encoder, the span head
                and ``kbert finetune``'s optimizer), ``mixed_bfloat16``, ``--attention`` (default
                auto: cuDNN flash attention with the attention dropout on NVIDIA GPUs), trained by
                Keras' own ``fit`` with ``steps_per_execution``
  transformers  ``BertForPreTraining`` / ``BertForQuestionAnswering`` with SDPA attention (its
                dropout kept), bf16 autocast, ``torch.compile`` of the whole loss, fused AdamW,
                gradient clipping at 1.0 as kbert; the MLM head at the masked positions only, as
                kbert and NVIDIA's BERT do
Variants (``--variant``, kbert only; names join with "+"): ``VARIANTS``, each one lever measured on
its own line (attention, dropout bits from rbg/unsafe_rbg, an XLA flag, the step loop).

Each (case, system, variant) runs in its own child process with a timeout (a crash or an
out-of-memory error costs that line only), one after another, so that two never share the device.
Every line is written to ``--out`` (JSON Lines) and printed as soon as its child ends, with the
tail of the child's stderr. A kbert line records ``attention_kernel`` ("cudnn" when the optimized
HLO of the compiled training step, dumped by XLA, holds ``__cudnn$fmha`` custom calls; else "xla"
or "plain", from the attention calls kbert traced), ``cudnn_fmha_calls`` and
``attention_dropout_applied``; a line that asked for cuDNN (attention auto or fused on an NVIDIA
GPU) and compiled without it is an error line, not a number. ``--profile-dir`` traces one step
per kbert line with ``jax.profiler`` and writes its top-15 device ops table there.

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
from kbert.errors import OptionsError

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
    Case("pretrain-base-512", "pretrain", "base", 512, 80, 64),
    Case("squad-base-384", "squad", "base", 384, 0, 64),
    Case("pretrain-base-128", "pretrain", "base", 128, 20, 256),
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
def _kbert_model(spec, config):
    """The model through the library entries the commands use: ``kbert.training.pretrain.build_pretrainer``
    (what ``kbert pretrain`` trains: encoder with ``attention``, heads, AdamW with warmup/decay and
    gradient clipping, compiled with ``steps_per_execution``); for SQuAD the encoder as
    ``load_encoder`` builds it, the span head of ``SpanQuestionAnswerer`` (whose class needs the
    TensorFlow tokenizer) and ``kbert finetune``'s optimizer."""
    import keras
    from keras import ops

    from kbert.training.optimization import create_optimizer

    if spec["task"] == "pretrain":
        from kbert.training.pretrain import PretrainOptions, build_pretrainer

        options = PretrainOptions(train_data="(synthetic batches)", model_dir="(not written)",
                                  seq_length=spec["seq_length"], max_predictions=spec["predictions"],
                                  batch_size=spec["batch_size"], steps=1000, learning_rate=1e-4, weight_decay=0.01,
                                  mixed_precision=spec["precision"], steps_per_execution=spec["steps_per_execution"],
                                  attention=spec["attention"])
        return build_pretrainer(options, config)[1]

    from kbert.layers import accel
    from kbert.models.encoder import BertEncoder
    from kbert.tasks.core.heads import SequenceHead

    class SpanLogits(accel.CompiledStepSettings, keras.Model):
        """Encoder + 2-unit dense over every position: start and end logits (float32). Its training
        step compiles as the task models' does (``CompiledStepSettings``, the route's XLA setting)."""

        def __init__(self, encoder, **kwargs):
            super().__init__(**kwargs)
            self.encoder = encoder
            self.head = SequenceHead(config.hidden_size, 2, dropout=0.0, initializer_range=config.initializer_range,
                                     name="span")

        def call(self, inputs, training=None):
            logits = ops.cast(self.head(self.encoder(inputs, training=training)["sequence_output"],
                                        training=training), "float32")
            return {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}

    model = SpanLogits(BertEncoder(config, attention_impl=spec["attention"]))
    loss = {name: keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            for name in ("start_logits", "end_logits")}
    model.compile(optimizer=create_optimizer(3e-5, 1000, 100), loss=loss,
                  loss_weights={"start_logits": 0.5, "end_logits": 0.5}, jit_compile=True,
                  steps_per_execution=spec["steps_per_execution"])
    return model


CUDNN_FMHA = "__cudnn$fmha"


def step_hlo_counts(dump_dir) -> dict | None:
    """Counts of cuDNN fused-attention custom calls in the optimized HLO of the compiled training
    step (XLA's dump, ``--xla_dump_to``): ``{"fmha": all, "fmha_dropout": those with dropout,
    "file": name}``, or None when no step was dumped."""
    import pathlib
    import re

    files = sorted(pathlib.Path(dump_dir).glob("*train_step*after_optimizations.txt"),
                   key=lambda p: p.stat().st_size)
    if not files:
        return None
    text = files[-1].read_text(errors="replace")
    targets = re.findall(r'custom_call_target="(__cudnn\$fmha[^"]*)"', text)
    forward = [t for t in targets if "Backward" not in t]
    return {"fmha": len(targets), "fmha_forward": len(forward),
            "fmha_dropout": sum("Dropout" in t for t in forward), "targets": sorted(set(targets)),
            "file": files[-1].name, "command_buffer": step_command_buffer(files[-1])}


def step_command_buffer(hlo_file) -> list | None:
    """The command-buffer types (``xla_gpu_enable_command_buffer``) the step was compiled with, from
    the ``.debug_options`` file XLA dumps beside its HLO (the options that differ from XLA's
    defaults): a list, or None where it lists none (XLA's default set, or none at all)."""
    import pathlib
    import re

    module = pathlib.Path(hlo_file).name.split(".")[:2]  # module_NNNN.jit_train_step
    options = pathlib.Path(hlo_file).with_name(".".join(module) + ".debug_options")
    if not options.exists():
        return None
    found = re.findall(r"^xla_gpu_enable_command_buffer: (\w+)", options.read_text(errors="replace"), re.M)
    return sorted(found) or None


def run_kbert(spec: dict) -> dict:
    import shutil

    import jax
    import keras

    from kbert.bench.common import TracedCalls
    from kbert.layers import accel

    calls = accel.observe_calls(TracedCalls())  # which kernel each traced attention call ran
    accel.set_dropout_prng(spec.get("dropout_prng", "threefry"), int(spec.get("dropout_bits", 32)))
    accel.set_remat(spec.get("remat", "none"))
    if "cudnn_setting" in spec:  # measure a route before compat lists it (a setting that aborts costs this line)
        accel.assume_cudnn_training_setting(spec["cudnn_setting"])
    keras.mixed_precision.set_global_policy(spec["precision"])
    config = BertConfig.from_dict(spec["config"])
    model = _kbert_model(spec, config)
    if spec.get("full_rows"):
        if spec["task"] != "pretrain":
            return {"error": "full-rows is a pre-training variant (BertPretrainer(full_rows=True))"}
        model.full_rows = True  # every synthetic row is full: the attention runs without a padding mask
    spe = int(spec["steps_per_execution"])
    x, y = synthetic_batch(spec["task"], config.vocab_size, spec["batch_size"], spec["seq_length"],
                           spec["predictions"])

    def batches():
        while True:
            yield x, y

    def steps(n):
        """n optimizer steps (a multiple of steps_per_execution), then wait for the device."""
        start = time.perf_counter()
        model.fit(batches(), steps_per_epoch=n, epochs=1, verbose=0, shuffle=False)
        # A small weight that every step updates: reading it waits for the last step.
        probe = min(model.trainable_variables, key=lambda v: math.prod(v.shape))
        keras.ops.convert_to_numpy(probe.value)
        return time.perf_counter() - start

    first = steps(spe)
    hlo = step_hlo_counts(spec["dump_dir"]) if spec.get("dump_dir") else None
    if spec.get("dump_dir"):
        shutil.rmtree(spec["dump_dir"], ignore_errors=True)
    steps(max(spe, spec["warmup_steps"] // spe * spe))
    timed = max(spe, spec["steps"] // spe * spe)
    runs = [steps(timed) / timed for _ in range(spec["runs"])]
    device = jax.devices()[0]
    stats = device.memory_stats() or {}
    peak = stats.get("peak_bytes_in_use")
    # The training step's attention calls (the functional build traces inference calls too).
    traced = calls.training()
    kernel = ("cudnn" if hlo and hlo["fmha"] else
              "xla" if any(k.split("+")[0] in ("xla", "keras") for k in traced) else
              "plain" if traced else "none")
    result = dict(step_s=statistics.median(runs), step_s_runs=runs, steps_per_run=timed, first_call_s=first,
                  first_call_steps=spe, device=getattr(device, "device_kind", device.platform),
                  platform=device.platform, peak_memory_gb=peak / 1e9 if peak else None,
                  versions=_versions("keras", "jax", "jaxlib", "numpy"),
                  tensorflow_loaded="tensorflow" in sys.modules and sys.modules["tensorflow"] is not None,
                  attention_kernel=kernel, cudnn_fmha_calls=hlo["fmha"] if hlo else None,
                  cudnn_fmha_targets=hlo["targets"] if hlo else None, attention_calls_traced=traced,
                  attention_dropout_applied=_dropout_applied(spec, hlo, traced),
                  attention_log=accel.decisions(), dropout_prng=accel.dropout_prng(), dropout_bits=accel.dropout_bits(),
                  hidden_dropout_applied=accel.dropout_rate_applied(config.hidden_dropout_prob)
                  if accel.kbert_draws_dropout() or accel.remat_policy() != "none" else config.hidden_dropout_prob,
                  remat=accel.remat_policy(), full_rows=bool(spec.get("full_rows")),
                  cudnn_training_route=accel.route_taken() or None,
                  step_command_buffer=hlo.get("command_buffer") if hlo else None,
                  memory_measure=MEMORY_MEASURE["kbert"],
                  xla_python_client_preallocate=os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE"))
    said = accel.decisions()
    if spec.get("dump_dir") and hlo is None:
        said = {**said, "no-hlo": "no optimized HLO of the training step was dumped (--xla_dump_to), so the "
                                  f"kernel could not be read from it; traced calls: {traced}"}
    error = missing_cudnn(spec["attention"], accel.cuda_device() is not None, kernel, result["device"], said,
                          accel.route_taken())
    if error:
        result["error"] = error
    if spec.get("profile_dir"):
        result.update(_profile(spec, steps, spe))
    return result


def missing_cudnn(attention: str, on_nvidia_gpu: bool, kernel: str, device: str, said: dict,
                  route: dict | None = None) -> str | None:
    """The error of a line that asked for cuDNN flash attention (auto or fused on an NVIDIA GPU)
    and compiled without it, or None. ``route``: ``accel.route_taken()``. Auto's deliberate refusal
    of the kernel that aborts (training with attention dropout and a padding mask where
    ``kbert.compat.cudnn_training_route`` knows no setting that runs it) is what a user's command
    runs: a number, with the reason in the line's ``cudnn_training_route``."""
    if attention == "plain" or not on_nvidia_gpu or kernel == "cudnn":
        return None
    if attention == "auto" and route and route.get("kernel") == "plain" and route.get("runs") is False:
        return None
    return (f"asked for cuDNN flash attention ({attention}) on {device} but the compiled step has no "
            f"{CUDNN_FMHA} custom call; kbert said: {' | '.join(said.values()) or 'nothing'}")


def _dropout_applied(spec, hlo, traced) -> bool:
    """Whether every traced training call dropped out attention probabilities (the config's rate > 0):
    a cuDNN step needs its forward fMHA calls to be the dropout kind."""
    if spec["config"]["attention_probs_dropout_prob"] <= 0:
        return False
    if hlo and hlo["fmha"]:
        return hlo["fmha_dropout"] == hlo["fmha_forward"]
    return bool(traced) and all(k.endswith("+dropout") for k in traced)


def _profile(spec, steps, spe) -> dict:
    """One traced execution of the step (``spe`` steps) -> the top-15 device ops table (Markdown)."""
    import pathlib

    import jax

    from kbert.bench import profile_table

    log_dir = pathlib.Path(spec["profile_dir"])
    with jax.profiler.trace(str(log_dir), create_perfetto_trace=True):
        steps(spe)
    trace = profile_table.find_trace(log_dir)
    if trace is None:
        return {"profile_error": f"no perfetto_trace.json.gz under {log_dir}"}
    table = profile_table.top_ops(trace, 15, steps=spe)
    title = f"{spec['case']} kbert {spec['variant']}: top 15 device ops of one step"
    path = log_dir / f"top-ops-{spec['case']}-{spec['variant']}.md"
    path.write_text(profile_table.markdown_table(title, table))
    return {"profile_table": str(path), "profile_device_ms": table["device_ms"]}


# -- transformers (child) ------------------------------------------------------------------------
def run_transformers(spec: dict) -> dict:
    import torch

    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    torch.manual_seed(0)
    model, loss_fn = _transformers_model(spec, device)
    model.to(device).train()
    step = _transformers_step(spec, model, loss_fn, device)

    def steps(n):
        start = time.perf_counter()
        for _ in range(n):
            loss = step()
        float(loss.detach())
        if cuda:
            torch.cuda.synchronize()
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
                memory_measure=MEMORY_MEASURE["transformers"],
                torch_compile=bool(spec.get("torch_compile", True)), model_class=type(model).__name__,
                attention_class=_attention_class(model),
                attn_implementation=getattr(model.config, "_attn_implementation", None))


def _transformers_model(spec: dict, device):
    """(transformers' model of the case, its loss on the case's synthetic batch, on ``device``)."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    import transformers

    cfg = spec["config"]
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

    return model, loss_fn


def _transformers_step(spec: dict, model, loss_fn, device):
    """One training step of ``model`` (AdamW, bf16 autocast for mixed_bfloat16, the loss under
    ``torch.compile`` unless the spec turns it off): returns the loss, not waited for."""
    import torch

    cuda = device.type == "cuda"
    bf16 = spec["precision"] == "mixed_bfloat16"
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-6, weight_decay=0.01, fused=cuda)

    def forward():
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            return loss_fn()

    compiled = torch.compile(forward) if spec.get("torch_compile", True) else forward

    def step():
        loss = compiled()
        loss.backward()
        # Global-norm clipping at 1.0, as kbert's optimizer does (and BERT's recipe).
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=cuda or None)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    return step


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
# Variants of kbert's line, each a lever measured on its own (names join with "+"):
DROPOUT_PRNGS = ("threefry", "threefry-flat", "rbg", "unsafe_rbg")  # kbert.layers.accel's (a test keeps them equal)
DROPOUT_BITS = (32, 16, 8)
XLA_STEP_SETTINGS = ("no-cudnn-command-buffer", "no-command-buffer")  # kbert.compat's, likewise
VARIANTS = {
    "default": {},                                            # attention auto, Keras' threefry dropout
    "plain-attention": {"attention": "plain"},                # the reference attention
    "fused-attention": {"attention": "fused"},
    "no-attention-dropout": {"attention_dropout": 0.0},       # an explicit, recorded departure from BERT
    # dropout bits (kbert.layers.accel.set_dropout_prng): prng-IMPL[-BITS], e.g. prng-rbg-8, prng-threefry-16
    **{f"prng-{impl.replace('_', '-')}{'' if bits == 32 else f'-{bits}'}": {"dropout_prng": impl, "dropout_bits": bits}
       for impl in DROPOUT_PRNGS for bits in DROPOUT_BITS if (impl, bits) != ("threefry", 32)},
    # cuDNN in training with dropout and padding through an XLA setting of the compiled step, taken
    # as known to run (kbert.layers.accel.assume_cudnn_training_setting): what auto does once
    # kbert.compat.CUDNN_DROPOUT_WITH_PADDING_RUNS lists it
    **{f"route-{name}": {"cudnn_setting": name} for name in XLA_STEP_SETTINGS},
    "route-xla-default": {"cudnn_setting": None},             # the step as XLA compiles it (aborted on jax 0.11.2)
    "full-rows": {"full_rows": True},                         # pre-training rows all full: no padding mask
    "remat-full": {"remat": "full"},                          # kbert.layers.accel.set_remat
    "remat-dots": {"remat": "dots"},
    "triton-gemm": {"xla_flags": "--xla_gpu_triton_gemm_any=true"},
    "spe-1": {"steps_per_execution": 1},                      # Keras' step loop: one step per call
    "spe-50": {"steps_per_execution": 50},
}
# How each system's peak_memory_gb is measured (the same quantity: the most bytes the framework's
# allocator had handed out at once, weights, optimizer state and batch included; not what it reserved).
MEMORY_MEASURE = {
    "kbert": "jax Device.memory_stats()['peak_bytes_in_use'], process started with XLA_PYTHON_CLIENT_PREALLOCATE=false",
    "transformers": "torch.cuda.max_memory_allocated() since torch.cuda.reset_peak_memory_stats() after the model "
                    "and optimizer were made",
}


def variant_settings(name: str) -> dict:
    """The settings of a variant name such as "prng-rbg+triton-gemm" (an OptionsError naming an unknown part)."""
    settings = {}
    for part in name.split("+"):
        if part not in VARIANTS:
            raise OptionsError(f"unknown variant {part!r}; expected one of {', '.join(VARIANTS)} (joined with +)",
                               option="variants", value=part)
        for key, value in VARIANTS[part].items():
            settings[key] = f"{settings[key]} {value}" if key == "xla_flags" and key in settings else value
    return settings


def _spec(case: Case, system: str, args, variant: str) -> dict:
    settings = variant_settings(variant) if system == "kbert" else {}
    dropout = args.dropout
    config = case_config(case, args.tiny, dropout)
    if "attention_dropout" in settings:
        config = BertConfig(**{**config.to_dict(), "attention_probs_dropout_prob": settings["attention_dropout"]})
    return dict(system=system, case=case.name, variant=variant, task=case.task, config=config.to_dict(),
                seq_length=case.seq_length, predictions=case.predictions, batch_size=case.batch_size,
                precision=args.precision, attention=settings.get("attention", args.attention),
                steps_per_execution=settings.get("steps_per_execution", args.steps_per_execution),
                dropout_prng=settings.get("dropout_prng", "threefry"), dropout_bits=settings.get("dropout_bits", 32),
                remat=settings.get("remat", "none"), full_rows=settings.get("full_rows", False),
                **({"cudnn_setting": settings["cudnn_setting"]} if "cudnn_setting" in settings else {}),
                xla_flags=settings.get("xla_flags", ""),
                steps=args.steps, runs=args.runs, warmup_steps=args.warmup_steps,
                torch_compile=not args.no_torch_compile, profile_dir=args.profile_dir if system == "kbert" else None)


def _line(case: Case, spec: dict, args, result: dict) -> dict:
    config = BertConfig.from_dict(spec["config"])
    flops = flops_per_sequence(config, case.task, case.seq_length, case.predictions)
    kbert = spec["system"] == "kbert"
    line = dict(case=case.name, system=spec["system"], variant=spec["variant"], tiny=args.tiny,
                model=dict(layers=config.num_hidden_layers, hidden=config.hidden_size,
                           heads=config.num_attention_heads, vocab=config.vocab_size),
                seq_length=case.seq_length, predictions=case.predictions or None, batch_size=case.batch_size,
                precision="bf16" if spec["precision"] == "mixed_bfloat16" else spec["precision"],
                dropout=config.hidden_dropout_prob, attention_dropout=config.attention_probs_dropout_prob,
                optimizer="AdamW", clip_norm=1.0, attention=spec["attention"] if kbert else "sdpa",
                steps_per_execution=spec["steps_per_execution"] if kbert else 1,
                xla_flags=spec["xla_flags"] or None if kbert else None,
                flops_per_seq=flops, peak_tflops=args.peak_tflops,
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    if not kbert:  # transformers' BertSdpaSelfAttention passes its dropout to SDPA in training
        line.update(attention_kernel="sdpa", attention_dropout_applied=config.attention_probs_dropout_prob > 0)
    if "error" in result:
        line.update(seq_per_s=None, mfu=None)
        line.update({k: v for k, v in result.items() if k not in line})
        return line
    seq_per_s = case.batch_size / result["step_s"]
    line.update(seq_per_s=seq_per_s, tokens_per_s=seq_per_s * case.seq_length,
                model_tflops_per_s=flops * seq_per_s / 1e12, mfu=flops * seq_per_s / (args.peak_tflops * 1e12))
    line.update({k: v for k, v in result.items() if k not in line})
    return line


STDERR_TAIL = 2000  # characters of a child's stderr kept in its line


def fatal_lines(stderr: str, limit: int = 6) -> list[str]:
    """The lines of a child's log that say why it died: absl's fatal and error lines ("F1129 ...",
    "E1129 ..."), failed checks, Python's exception line; not the stack that follows an abort."""
    import re

    picked = []
    for line in stderr.splitlines():
        text = line.strip()
        if (re.match(r"^[FE]\d{4} ", text) or "Check failed" in text or re.match(r"^\w+(Error|Exception): ", text)
                or text.startswith(("jaxlib.", "INTERNAL:", "UNIMPLEMENTED:", "RESOURCE_EXHAUSTED:"))):
            picked.append(text[:400])
    return picked[:limit]


def _run_child(spec: dict, timeout: float) -> dict:
    import tempfile

    env = dict(os.environ)
    root = str(pathlib.Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    dump = None
    if spec["system"] == "kbert":
        env["KERAS_BACKEND"] = "jax"
        # No preallocation: JAX's allocator takes memory as the step needs it, and its peak in use is
        # the quantity torch.cuda.max_memory_allocated gives for transformers (MEMORY_MEASURE).
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
        env.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.90")
        # The compiled step's optimized HLO, to count cuDNN attention calls (step_hlo_counts).
        dump = tempfile.mkdtemp(prefix="kbert-hlo-")
        spec = dict(spec, dump_dir=dump)
        flags = [env.get("XLA_FLAGS", ""), spec["xla_flags"], f"--xla_dump_to={dump}",
                 "--xla_dump_hlo_as_text", "--xla_dump_hlo_module_re=.*train_step.*"]
        env["XLA_FLAGS"] = " ".join(f for f in flags if f)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        done = subprocess.run([sys.executable, "-m", "kbert.bench.accelerator_bench", "--child", json.dumps(spec)],
                              env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return {"error": f"timed out after {timeout:.0f} s", "stderr_tail": err[-STDERR_TAIL:]}
    finally:
        if dump:
            import shutil

            shutil.rmtree(dump, ignore_errors=True)
    tail = done.stderr[-STDERR_TAIL:]
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode or not lines:
        # An abort ends the log with a stack of addresses: say the fatal lines above it instead.
        why = fatal_lines(done.stderr) or done.stderr.strip().splitlines()[-6:]
        return {"error": f"exit code {done.returncode}: {' | '.join(why)[-1500:]}", "stderr_tail": tail}
    return {**json.loads(lines[-1]), "stderr_tail": tail}


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="kbert bench accelerator", description=__doc__.split("\n\n")[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", action="append", choices=sorted(CASES), default=[],
                        help="a case to run (repeatable; default all, in this order: " + ", ".join(CASES) + ")")
    parser.add_argument("--systems", default="kbert,transformers", help="comma-separated: kbert, transformers")
    parser.add_argument("--batch-size", action="append", default=[], metavar="CASE=N",
                        help="another batch size for a case (repeatable)")
    parser.add_argument("--attention", default="auto", choices=("auto", "plain", "fused"),
                        help="kbert's attention (the commands' --attention; default auto)")
    parser.add_argument("--variant", default="default",
                        help="kbert's lines, comma-separated; each a name or names joined with +: " + ", ".join(VARIANTS))
    parser.add_argument("--precision", default="mixed_bfloat16", choices=("mixed_bfloat16", "float32"))
    parser.add_argument("--dropout", type=float, default=0.1, help="hidden and attention dropout")
    parser.add_argument("--steps", type=int, default=20, help="optimizer steps per timed run")
    parser.add_argument("--runs", type=int, default=3, help="timed runs (the median counts)")
    parser.add_argument("--warmup-steps", type=int, default=10, help="untimed steps after the first call")
    parser.add_argument("--steps-per-execution", type=int, default=10, help="kbert: Keras steps_per_execution")
    parser.add_argument("--no-torch-compile", action="store_true", help="transformers in eager mode")
    parser.add_argument("--profile-dir", default=None,
                        help="kbert: trace one step per line with jax.profiler into this folder and write its "
                             "top-15 device ops table there (top-ops-CASE-VARIANT.md)")
    parser.add_argument("--peak-tflops", type=float, default=H100_SXM_BF16_TFLOPS,
                        help="the device's dense bf16 peak, for MFU (default: H100 SXM, 989)")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per (case, system, variant) child")
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
    variants = [s.strip() for s in args.variant.split(",") if s.strip()]
    bad = [s for s in systems if s not in SYSTEMS]
    if bad or not systems or not variants:
        parser.error(f"unknown system or no variant: {', '.join(bad) or '(none given)'}")
    for variant in variants:
        try:
            variant_settings(variant)
        except ValueError as e:
            parser.error(str(e))
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
    if args.profile_dir:
        pathlib.Path(args.profile_dir).mkdir(parents=True, exist_ok=True)
    if not args.append:
        out.write_text("")
    start = time.monotonic()
    lines = []
    for case in cases:
        for system in systems:
            for variant in (variants if system == "kbert" else ["default"]):
                spec = _spec(case, system, args, variant)
                left = None if args.deadline is None else args.deadline - (time.monotonic() - start)
                if left is not None and left < 20:
                    result = {"error": f"skipped: {args.deadline:.0f} s deadline reached"}
                else:
                    print(f"# {case.name} {system} {variant} ...", file=sys.stderr, flush=True)
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
    print(f"\n{'case':<20}{'system':<34}{'batch':>6}{'seq/s':>10}{'MFU':>7}{'compile s':>11}{'peak GB':>9}"
          f"  attention", file=file)
    for ln in lines:
        system = ln["system"] + (f" {ln['variant']}" if ln["system"] == "kbert" else "")
        if ln.get("error"):
            print(f"{ln['case']:<20}{system:<34}{ln['batch_size']:>6}  error: {ln['error'][:100]}", file=file)
            continue
        mem = f"{ln['peak_memory_gb']:.1f}" if ln.get("peak_memory_gb") else "-"
        att = f"{ln.get('attention_kernel')}{', dropout' if ln.get('attention_dropout_applied') else ', NO dropout'}"
        print(f"{ln['case']:<20}{system:<34}{ln['batch_size']:>6}{ln['seq_per_s']:>10.1f}"
              f"{100 * ln['mfu']:>6.1f}%{ln['compile_s']:>11.1f}{mem:>9}  {att}", file=file)


if __name__ == "__main__":
    sys.exit(main())
