"""Scratch (../README.md, "More leads, fine-tuned"): per-token logits pooled by log-mean-exp over every real
token of a document (a smooth maximum per class, multiple-instance pooling at the token level). The
attention head's dense layer scores each token; a window's row is the log-mean-exp over its real
tokens, the document's the log-mean-exp over its windows (the token-level pooling up to a constant
per class, which softmax ignores). Takes run.py's arguments:

    python probes/token_logmeanexp_prototype.py OUT doc-tokenlse --seeds 0 --batch-size 4 --learning-rate 5e-5
"""
import os, pathlib, runpy, sys
import keras

RUN_PY = str(pathlib.Path(__file__).resolve().parents[1] / "run.py")
from kbert.tasks.core import heads
import kbert.tasks.classification.window_inputs as wi

R = float(os.environ.get("LSE_R", "1"))


def window_outputs(self, sequence, mask, training=None):
    ops = keras.ops
    logits = ops.cast(self.dense(self.dropout(sequence, training=training)), "float32")  # [w, seq, C]
    real = ops.expand_dims(ops.cast(mask, "bool"), -1)
    scaled = ops.where(real, R * logits, -1e9)
    n = ops.maximum(ops.sum(ops.cast(mask, "float32"), axis=1, keepdims=True), 1.0)
    pooled = (ops.logsumexp(scaled, axis=1) - ops.log(n)) / R
    return pooled, ops.zeros(ops.shape(pooled)[:1], "float32")


heads.TokenAttentionHead.window_outputs = window_outputs
_combine = wi.combine


def combine(outputs, document, num_documents, how, weights=None):
    return _combine(outputs, document, num_documents, "logmeanexp" if how == "attention" else how, weights)


wi.combine = combine

import kbert.training.finetune as ft
_ft = ft.finetune


def finetune(*a, **k):
    k["log"] = lambda *x, **y: print(*x, flush=True)
    return _ft(*a, **k)


ft.finetune = finetune
print("token log-mean-exp pooling, r", R, flush=True)
g = runpy.run_path(RUN_PY, run_name="not_main")
g["RUNS"]["doc-tokenlse"] = dict(g["RUNS"]["doc-attention"])
g["main"](sys.argv[1:])
