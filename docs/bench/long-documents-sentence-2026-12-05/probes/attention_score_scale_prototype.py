"""Scratch (../README.md, "More leads, fine-tuned"): ``--window-pooling attention`` with the score layer learning
SCORE_SCALE times faster under Adam (score = SCALE * Dense(h), its kernel initialised SCALE times
smaller, so the untrained model is unchanged). Takes run.py's arguments:

    SCORE_SCALE=10 python probes/attention_score_scale_prototype.py OUT doc-attention --seeds 0 \
        --batch-size 4 --learning-rate 5e-5
"""
import os, pathlib, runpy, sys
import keras

RUN_PY = str(pathlib.Path(__file__).resolve().parents[1] / "run.py")
from kbert.tasks.core import heads
from kbert.layers.initializers import truncated_normal

SCALE = float(os.environ.get("SCORE_SCALE", "1"))


class ScaledDense(keras.layers.Dense):
    def call(self, x):
        return SCALE * super().call(x)


_init = heads.TokenAttentionHead.__init__


def __init__(self, hidden_size, num_outputs, dropout=0.1, initializer_range=0.02, **kwargs):
    _init(self, hidden_size, num_outputs, dropout=dropout, initializer_range=initializer_range, **kwargs)
    self.score = ScaledDense(1, kernel_initializer=truncated_normal(initializer_range / SCALE), name="score")


heads.TokenAttentionHead.__init__ = __init__

import kbert.training.finetune as ft
_ft = ft.finetune


def finetune(*a, **k):
    k["log"] = lambda *x, **y: print(*x, flush=True)
    return _ft(*a, **k)


ft.finetune = finetune
print("SCORE_SCALE", SCALE, flush=True)
sys.argv = ["run.py"] + sys.argv[1:]
runpy.run_path(RUN_PY, run_name="__main__")
