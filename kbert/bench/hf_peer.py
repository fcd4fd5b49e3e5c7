"""The Hugging Face transformers (torch) peer of the kbert benches, run as a child process.

``python -m kbert.bench.hf_peer SPEC_JSON`` builds the candidates the spec asks for, warms them up
and then answers the parent's timing requests (protocol in ``kbert.bench.common.SubprocessPeer``).
A separate process keeps torch's OpenMP threads and TensorFlow's thread pools apart.

spec: ``task`` ("encoder" or "train"), ``config`` (BertConfig fields), ``batch_size``,
``seq_length``, ``precision`` ("float32" or "mixed_bfloat16": torch.autocast bfloat16),
``threads``, ``compile`` ("auto"/"on": eager and torch.compile rows, "off": eager only),
``predictions`` (train: MLM positions per sequence), ``warmup``, ``flops`` (per item).
"""

from __future__ import annotations

import contextlib
import sys

from kbert.bench.common import child_main, warm_up_rows

PEAK_SIZE = 2048  # the matmul peak row's square matrices


def _hf_config(cfg):
    from transformers import BertConfig

    act = {"gelu": "gelu_new", "gelu_exact": "gelu"}.get(cfg["hidden_act"], cfg["hidden_act"])
    return BertConfig(
        vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"],
        num_hidden_layers=cfg["num_hidden_layers"], num_attention_heads=cfg["num_attention_heads"],
        intermediate_size=cfg["intermediate_size"], hidden_act=act,
        hidden_dropout_prob=cfg["hidden_dropout_prob"],
        attention_probs_dropout_prob=cfg["attention_probs_dropout_prob"],
        max_position_embeddings=cfg["max_position_embeddings"], type_vocab_size=cfg["type_vocab_size"],
        initializer_range=cfg["initializer_range"], attn_implementation="sdpa")


def build(spec):
    import numpy as np
    import torch
    import transformers

    torch.set_num_threads(int(spec["threads"]))
    torch.manual_seed(0)
    config = _hf_config(spec["config"])
    batch, seq = int(spec["batch_size"]), int(spec["seq_length"])
    bf16 = spec["precision"] == "mixed_bfloat16"
    rng = np.random.default_rng(0)
    inputs = dict(input_ids=torch.from_numpy(rng.integers(1, config.vocab_size, (batch, seq)).astype("int64")),
                  attention_mask=torch.ones((batch, seq), dtype=torch.int64),
                  token_type_ids=torch.zeros((batch, seq), dtype=torch.int64))
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if bf16 else contextlib.nullcontext
    version = f"transformers {transformers.__version__}"
    prec = " bf16 autocast" if bf16 else ""
    # The candidates: eager, and torch.compile unless the spec turns it off.
    modes = {"eager": False, "torch.compile": True}
    if spec.get("compile", "auto") == "off":
        del modes["torch.compile"]

    if spec["task"] == "encoder":
        model = transformers.BertModel(config, add_pooling_layer=True).eval()
        fns = {f"{version} {mode}{prec}": _encoder_fn(torch.compile(model) if compiled else model, inputs, autocast)
               for mode, compiled in modes.items()}
    elif spec["task"] == "train":
        batch_labels = _train_labels(rng, config, batch, seq, int(spec["predictions"]))
        fns = {f"{version} {mode}{prec}, AdamW": _train_step(config, compiled, inputs, batch_labels, autocast)
               for mode, compiled in modes.items()}
    else:
        raise ValueError(f"unknown task {spec['task']!r}")

    infos = warm_up_rows(fns, spec, batch, f"torch-{spec['precision']}")
    name, peak = _matmul_peak(bf16)
    fns[name] = peak
    infos.insert(0, dict(name=name, items=1, flops=2.0 * PEAK_SIZE**3, framework=f"torch-{spec['precision']}",
                         group="peak"))
    return infos, fns, f"{version}, torch {torch.__version__}"


def _encoder_fn(model, inputs, autocast):
    """The encoder's sequence output of the batch, as a float32 array."""
    import torch

    def fn():
        with torch.inference_mode(), autocast():
            out = model(**inputs).last_hidden_state
        return out.float().numpy()
    return fn


def _train_labels(rng, config, batch, seq, preds) -> dict:
    """Pre-training labels of the batch: ``preds`` sorted MLM positions per row (never [CLS]), their
    token ids and weights, and NSP labels."""
    import numpy as np
    import torch

    positions = np.stack([np.sort(rng.permutation(np.arange(1, seq))[:preds]) for _ in range(batch)])
    return dict(positions=torch.from_numpy(positions.astype("int64")),
                labels=torch.from_numpy(rng.integers(0, config.vocab_size, (batch, preds)).astype("int64")),
                weights=torch.ones((batch, preds)),
                nsp_labels=torch.from_numpy(rng.integers(0, 2, (batch,)).astype("int64")))


def _train_step(config, compiled, inputs, batch_labels, autocast):
    """One AdamW pre-training step (MLM + NSP, gradients clipped at 1.0) of a new model; returns the loss."""
    import torch
    import torch.nn.functional as F
    import transformers

    model = transformers.BertForPreTraining(config).train()
    # The MLM head only at the masked positions (as google-research/bert and kbert do):
    # BertForPreTraining would compute vocabulary logits for all seq positions.
    bert = torch.compile(model.bert) if compiled else model.bert
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01)
    positions, labels, weights = batch_labels["positions"], batch_labels["labels"], batch_labels["weights"]

    def step():
        with autocast():
            out = bert(**inputs)
            hidden = out.last_hidden_state
            gathered = hidden.gather(1, positions[..., None].expand(-1, -1, hidden.shape[-1]))
            logits = model.cls.predictions(gathered).float()
            nsp = model.cls.seq_relationship(out.pooler_output).float()
        ce = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none")
        loss = ((ce * weights.flatten()).sum() / (weights.sum() + 1e-5)
                + F.cross_entropy(nsp, batch_labels["nsp_labels"]))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return float(loss.detach())
    return step


def _matmul_peak(bf16):
    """(name, fn) of torch's matmul peak, the reference for the peer rows' "% peak"; run once here."""
    import torch

    dtype = torch.bfloat16 if bf16 else torch.float32
    a, b = torch.randn(PEAK_SIZE, PEAK_SIZE).to(dtype), torch.randn(PEAK_SIZE, PEAK_SIZE).to(dtype)

    def peak():
        torch.mm(a, b)

    peak()
    return f"matmul peak torch {str(dtype).replace('torch.', '')} {PEAK_SIZE}^3", peak


if __name__ == "__main__":
    sys.exit(child_main(build))
