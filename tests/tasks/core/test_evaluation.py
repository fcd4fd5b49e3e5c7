"""Under fine-tuning's --quiet (model.fit(verbose=2)), each epoch's lines come in order: Keras'
line for the epoch's training, then the evaluation's ``epoch N: ...`` line."""

import re

import keras
import numpy as np

from kbert.tasks.core.evaluation import EvaluateEachEpoch


class _Recipe:
    main_metric = "accuracy"

    def __init__(self):
        self.scores = iter([0.5, 0.75, 0.6])

    def evaluate(self, model):
        return {"accuracy": next(self.scores)}, []

    def task_info(self):
        return {}

    def write_predictions(self, out_dir, predictions):
        return []


class TinyModel(keras.Sequential):
    def save_model_dir(self, out_dir, extra_info=None):
        pass


def test_keras_epoch_line_comes_before_the_evaluation_line(tmp_path, capsys):
    model = TinyModel([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    evaluator = EvaluateEachEpoch(_Recipe(), model, tmp_path)
    model.fit(np.zeros((8, 3)), np.zeros((8, 1)), batch_size=4, epochs=3, verbose=2, callbacks=[evaluator])
    lines = [l for l in capsys.readouterr().out.splitlines() if l.strip()]
    kinds = ["keras" if re.match(r"^\d+/\d+ - ", l) else "eval" if l.startswith("epoch ") else "header"
             for l in lines]
    assert [k for k in kinds if k != "header"] == ["keras", "eval"] * 3, lines
    assert [l for l in lines if l.startswith("epoch ")] == [
        "epoch 1: accuracy 0.5000  (best so far: saved)", "epoch 2: accuracy 0.7500  (best so far: saved)",
        "epoch 3: accuracy 0.6000"]
