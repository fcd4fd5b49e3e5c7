"""The ONNX Runtime peer of ``kbert.bench encoder`` and ``kbert.bench serve``, run as a child process.

``python -m kbert.bench.ort_peer SPEC_JSON`` exports a BERT to ONNX, runs it in ONNX Runtime plain
and after ``onnxruntime.transformers.optimizer`` (model_type "bert": fused attention, LayerNorm,
GELU and embedding kernels), and answers the parent's timing requests (protocol in
``kbert.bench.common.SubprocessPeer``). A separate process keeps ORT's thread pool and
TensorFlow's apart; both get the same intra-op thread count and one inter-op thread.

Why torch's exporter of the Hugging Face model rather than tf2onnx from kbert's SavedModel: the
transformer optimizer's fusions are written against the graphs ``torch.onnx.export`` makes of
``transformers.BertModel`` (its documented path, the one ORT users take); tf2onnx does not support
TensorFlow 2.21, and kbert's graph is laid out for oneDNN (2-D activations, LayerNorm as
FusedBatchNorm), which the optimizer's patterns would not recognise, so ORT would be shown at less
than its best. The weights are the same: the Hugging Face folder kbert converts (serve), or random
weights of the bench's shape (encoder, like the transformers peer).

spec: ``hf_dir`` (a Hugging Face BERT folder) or ``config`` (kbert BertConfig fields, random
weights, seed 0); ``work_dir`` (where the .onnx files go); ``threads``; ``warmup``; ``flops`` (per
sequence); ``cases``: a list of ``{name, kind, batch_size, seq_length, concurrency, texts}`` where
kind is "ids" (int64 ids in) or "strings" (the Rust ``tokenizers`` encoding of the request is part
of the time, from ``hf_dir``'s tokenizer.json), ``texts`` a file of sentences (one a line) and
``concurrency`` > 0 the number of client threads sharing one batcher (kbert.bench.concurrency).
Each case gives rows "NAME: ORT ..." and "NAME: ORT optimized ...".
"""

from __future__ import annotations

import os
import pathlib
import sys

from kbert.bench.common import child_main

NOT_INSTALLED = "ONNX Runtime: not installed (pip install kbert[bench]): peer skipped"
OUTPUTS = ("last_hidden_state", "pooler_output")
_BATCHERS = []


def missing() -> str | None:
    """Why the ORT peer cannot run in this Python (None if it can)."""
    from kbert.bench.common import have

    if not (have("onnxruntime") and have("onnx")):
        return NOT_INSTALLED
    if not (have("torch") and have("transformers")):
        return ("ONNX Runtime: the ONNX export needs torch and transformers (pip install torch transformers): "
                "peer skipped")
    return None


def _hf_model(spec):
    import torch
    import transformers

    torch.manual_seed(0)
    if spec.get("hf_dir"):
        # safetensors only: a pytorch_model.bin is a pickle, which kbert never loads
        model = transformers.BertModel.from_pretrained(spec["hf_dir"], attn_implementation="eager",
                                                       use_safetensors=True)
    else:
        from kbert.bench.hf_peer import _hf_config

        config = _hf_config(spec["config"])
        config._attn_implementation = "eager"  # the attention the optimizer's fusion patterns match
        model = transformers.BertModel(config, add_pooling_layer=True)
    return model.eval()


def export_onnx(model, path: pathlib.Path, seq_length: int) -> pathlib.Path:
    """``model`` (transformers BertModel) -> ONNX at ``path``, dynamic batch and sequence axes."""
    import torch

    class Positional(torch.nn.Module):  # the exporter passes positional inputs; BertModel's 3rd is not types
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state, out.pooler_output

    ids = torch.ones((1, seq_length), dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    axes.update({"last_hidden_state": {0: "batch", 1: "sequence"}, "pooler_output": {0: "batch"}})
    tmp = path.with_suffix(".tmp.onnx")
    with torch.inference_mode():
        # The TorchScript exporter (dynamo=False): the graphs the transformer optimizer's patterns know.
        torch.onnx.export(Positional(model).eval(), (ids, ids, torch.zeros_like(ids)), str(tmp), input_names=names,
                          output_names=list(OUTPUTS), dynamic_axes=axes, opset_version=17, dynamo=False)
    os.replace(tmp, path)
    return path


def optimize_onnx(path: pathlib.Path, out: pathlib.Path, num_heads: int, hidden_size: int) -> pathlib.Path:
    """ORT's transformer optimizer (model_type bert) on ``path`` -> ``out``."""
    from onnxruntime.transformers import optimizer

    model = optimizer.optimize_model(str(path), model_type="bert", num_heads=num_heads, hidden_size=hidden_size)
    fused = {k: v for k, v in model.get_fused_operator_statistics().items() if v}
    print(f"  ORT transformer optimizer fused: {fused}", file=sys.stderr, flush=True)
    tmp = out.with_suffix(".tmp.onnx")
    model.save_model_to_file(str(tmp))
    os.replace(tmp, out)
    return out


def session(path, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _read_texts(path, limit):
    with open(path, encoding="utf-8") as f:
        texts = [line.rstrip("\n") for line in f if line.strip()]
    while len(texts) < limit:
        texts += texts
    return texts[:limit]


HF_NAMES = {"ids": "input_ids", "mask": "attention_mask", "types": "token_type_ids"}
KBERT_NAMES = {"ids": "input_word_ids", "mask": "input_mask", "types": "input_type_ids"}


def _feeds(names, dtype, ids, mask, types):
    import numpy as np

    return {names["ids"]: np.asarray(ids, dtype), names["mask"]: np.asarray(mask, dtype),
            names["types"]: np.asarray(types, dtype)}


def _case_fns(case, sess, tokenizer, vocab_size, names=HF_NAMES, dtype="int64"):
    """(fn, batcher) for one case on one session: fn() runs one request; for concurrency > 0 it is
    a ``ClosedLoop`` whose ``run_many(n)`` sends n requests from that many client threads through
    ``batcher``."""
    import numpy as np

    from kbert.bench import concurrency

    batch, seq = int(case["batch_size"]), int(case["seq_length"])
    clients = int(case.get("concurrency") or 0)
    if case["kind"] == "strings":
        texts = _read_texts(case["texts"], max(batch, 1) * 64)

        def encode(strings):
            encodings = tokenizer.encode_batch(strings)
            return _feeds(names, dtype, [e.ids for e in encodings], [e.attention_mask for e in encodings],
                          [e.type_ids for e in encodings])

        def run_batch(strings):
            return sess.run(None, encode(list(strings)))

        requests = [texts[i:i + batch] for i in range(0, len(texts) - batch + 1, batch)]
    else:
        rng = np.random.default_rng(0)
        requests = []
        for _ in range(8):
            ids = rng.integers(1, vocab_size, (batch, seq))
            requests.append(_feeds(names, dtype, ids, np.ones_like(ids), np.zeros_like(ids)))

        def run_batch(feeds):
            return sess.run(None, feeds)

    if clients:
        combine, split = ((concurrency.concat_lists, concurrency.split_rows) if case["kind"] == "strings"
                          else (concurrency.concat_dicts, concurrency.split_rows))
        batcher = concurrency.Batcher(run_batch, combine, split, max_batch=int(case.get("max_batch", 32)),
                                      timeout_s=float(case.get("timeout_s", 0.0)))
        return concurrency.ClosedLoop(batcher, requests, clients), batcher
    state = {"i": 0}

    def fn():
        out = run_batch(requests[state["i"] % len(requests)])
        state["i"] += 1
        return out

    return fn, None


def _tokenizer(path, seq):
    """A Rust tokenizer from ``path``, cutting and padding every request to ``seq`` (the bench's
    fixed length, as kbert's preprocessor export pads)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_length=seq)
    tokenizer.enable_padding(length=seq, pad_id=0)
    return tokenizer


def build(spec):
    import onnxruntime as ort

    threads = int(spec["threads"])
    work = pathlib.Path(spec["work_dir"])
    work.mkdir(parents=True, exist_ok=True)
    model = _hf_model(spec)
    config = model.config
    seq = max(int(c["seq_length"]) for c in spec["cases"])
    plain = work / "model.onnx"
    if not plain.exists():
        export_onnx(model, plain, seq)
    optimized = work / "model.optimized.onnx"
    if not optimized.exists():
        optimize_onnx(plain, optimized, config.num_attention_heads, config.hidden_size)
    del model
    strings = any(c["kind"] == "strings" for c in spec["cases"])
    tokenizer = _tokenizer(pathlib.Path(spec["hf_dir"]) / "tokenizer.json", seq) if strings else None
    # label -> (session, tokenizer, input names, id dtype, group)
    systems = {f"ORT {ort.__version__}": (session(plain, threads), tokenizer, HF_NAMES, "int64", "peer"),
               f"ORT {ort.__version__} optimized": (session(optimized, threads), tokenizer, HF_NAMES, "int64", "peer")}
    if spec.get("kbert_onnx"):
        folder = pathlib.Path(spec["kbert_onnx"])
        own = folder / "tokenizer.json"
        systems["kbert ONNX"] = (session(folder / "model.onnx", threads),
                                 _tokenizer(own, seq) if strings and own.exists() else None, KBERT_NAMES, "int32",
                                 "kbert")
    fns, infos = {}, []
    for case in spec["cases"]:
        for label, (sess, case_tokenizer, names, dtype, group) in systems.items():
            if case["kind"] == "strings" and case_tokenizer is None:
                continue  # kbert's export wrote no tokenizer.json (it says why)
            fn, batcher = _case_fns(case, sess, case_tokenizer, config.vocab_size, names, dtype)
            name = f"{case['name']}: {label}"
            if batcher is not None:
                _BATCHERS.append(batcher)  # its worker thread lives as long as the child
            fns[name] = fn
            for _ in range(max(1, int(spec.get("warmup", 2)))):
                fn.run_many(max(1, int(case.get("concurrency") or 0))) if batcher else fn()
            items = int(case["batch_size"])
            infos.append(dict(name=name, items=items, flops=float(spec.get("flops", 0.0)) * items,
                              framework="ort", group=group, unit=case.get("unit", "seq"),
                              concurrency=int(case.get("concurrency") or 0)))
    import tokenizers
    import torch
    import transformers

    own = "; kbert ONNX: kbert export onnx (form ort)" if spec.get("kbert_onnx") else ""
    return infos, fns, (f"onnxruntime {ort.__version__} (export: torch {torch.__version__} torch.onnx, "
                        f"transformers {transformers.__version__}; tokenizers {tokenizers.__version__}{own})")


def save_random_hf(config_name: str, vocab_file, out_dir) -> pathlib.Path:
    """A Hugging Face BERT folder with random weights (seed 0) of kbert's ``config_name`` preset
    and ``vocab_file`` (lower-casing WordPiece): config.json, model.safetensors, vocab.txt,
    tokenizer_config.json and tokenizer.json. For shapes that have no real weights at hand
    (BERT-Base here): latency does not depend on the values."""
    import shutil

    import torch
    import transformers
    from tokenizers import BertWordPieceTokenizer

    from kbert.config import BertConfig
    from kbert.bench.hf_peer import _hf_config

    out = pathlib.Path(out_dir)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    torch.manual_seed(0)
    config = BertConfig.preset(config_name)
    model = transformers.BertModel(_hf_config(config.to_dict()), add_pooling_layer=True)
    model.save_pretrained(str(tmp))  # model.safetensors
    shutil.copyfile(vocab_file, tmp / "vocab.txt")
    BertWordPieceTokenizer(str(vocab_file), lowercase=True).save(str(tmp / "tokenizer.json"))
    (tmp / "tokenizer_config.json").write_text(
        '{"tokenizer_class": "BertTokenizer", "do_lower_case": true}\n', encoding="utf-8")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--save-random"]:  # python -m kbert.bench.ort_peer --save-random CONFIG VOCAB OUT
        print(save_random_hf(*sys.argv[2:5]))
        sys.exit(0)
    sys.exit(child_main(build))
