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
    ids = torch.from_numpy(rng.integers(1, config.vocab_size, (batch, seq)).astype("int64"))
    mask = torch.ones((batch, seq), dtype=torch.int64)
    types = torch.zeros((batch, seq), dtype=torch.int64)
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if bf16 else contextlib.nullcontext
    prec = " bf16 autocast" if bf16 else ""
    want_compile = spec.get("compile", "auto") != "off"
    fns = {}
    version = f"transformers {transformers.__version__}"

    if spec["task"] == "encoder":
        model = transformers.BertModel(config, add_pooling_layer=True).eval()

        def runner(m):
            def fn():
                with torch.inference_mode(), autocast():
                    out = m(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
                return out.float().numpy()
            return fn

        fns[f"{version} eager{prec}"] = runner(model)
        if want_compile:
            fns[f"{version} torch.compile{prec}"] = runner(torch.compile(model))
    elif spec["task"] == "train":
        import torch.nn.functional as F

        preds = int(spec["predictions"])
        positions = torch.from_numpy(np.stack(
            [np.sort(rng.permutation(np.arange(1, seq))[:preds]) for _ in range(batch)]).astype("int64"))
        labels = torch.from_numpy(rng.integers(0, config.vocab_size, (batch, preds)).astype("int64"))
        weights = torch.ones((batch, preds))
        nsp_labels = torch.from_numpy(rng.integers(0, 2, (batch,)).astype("int64"))

        def make_step(compiled):
            model = transformers.BertForPreTraining(config).train()
            # The MLM head only at the masked positions (as google-research/bert and kbert do):
            # BertForPreTraining would compute vocabulary logits for all seq positions.
            bert = torch.compile(model.bert) if compiled else model.bert
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-6,
                                    weight_decay=0.01)

            def step():
                with autocast():
                    out = bert(input_ids=ids, attention_mask=mask, token_type_ids=types)
                    hidden = out.last_hidden_state
                    gathered = hidden.gather(1, positions[..., None].expand(-1, -1, hidden.shape[-1]))
                    logits = model.cls.predictions(gathered).float()
                    nsp = model.cls.seq_relationship(out.pooler_output).float()
                ce = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none")
                loss = (ce * weights.flatten()).sum() / (weights.sum() + 1e-5) + F.cross_entropy(nsp, nsp_labels)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                return float(loss.detach())
            return step

        fns[f"{version} eager{prec}, AdamW"] = make_step(False)
        if want_compile:
            fns[f"{version} torch.compile{prec}, AdamW"] = make_step(True)
    else:
        raise ValueError(f"unknown task {spec['task']!r}")

    infos = warm_up_rows(fns, spec, batch, f"torch-{spec['precision']}")
    # The matmul peak of torch, the reference for these rows' "% peak".
    size = 2048
    dtype = torch.bfloat16 if bf16 else torch.float32
    a, b = torch.randn(size, size).to(dtype), torch.randn(size, size).to(dtype)

    def peak():
        torch.mm(a, b)

    peak()
    name = f"matmul peak torch {str(dtype).replace('torch.', '')} {size}^3"
    fns[name] = peak
    infos.insert(0, dict(name=name, items=1, flops=2.0 * size**3, framework=f"torch-{spec['precision']}",
                         group="peak"))
    return infos, fns, f"{version}, torch {torch.__version__}"


if __name__ == "__main__":
    sys.exit(child_main(build))
