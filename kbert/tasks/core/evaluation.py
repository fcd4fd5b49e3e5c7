"""The fine-tuning loop's evaluation, the same for every task type: EvaluateEachEpoch (dev
evaluation after every epoch, keeping the best)."""

from __future__ import annotations

import pathlib
import time

import keras
import tensorflow as tf


class EvaluateEachEpoch(keras.callbacks.Callback):
    """After every epoch: ``recipe.evaluate(model)``, metrics to TensorBoard (``out_dir/logs/eval``,
    at the optimizer's step, the axis of the training curves) and to ``history``; when the recipe's main metric improves, the model directory and the
    predictions in ``out_dir`` are replaced by this epoch's."""

    def __init__(self, recipe, task_model, out_dir, log=print):
        super().__init__()
        self.recipe, self.task_model, self.out_dir, self.log = recipe, task_model, pathlib.Path(out_dir), log
        self.writer = tf.summary.create_file_writer(str(self.out_dir / "logs" / "eval"))
        self.history, self.best, self.best_epoch, self.prediction_files = [], None, None, []
        # Wall and CPU seconds spent here (evaluation, and saving the best model and its
        # predictions), which the CLI subtracts from model.fit's time to report training speed.
        self.epoch_end_seconds = 0.0
        self.epoch_end_cpu_seconds = 0.0
        self._line = None

    def _show_line(self):
        if self._line is not None:
            self.log(self._line, flush=True)
            self._line = None

    # The epoch's line is shown when the next epoch begins (or training ends): Keras' own epoch line
    # (model.fit(verbose=2), the CLI's --quiet) is printed by a callback that runs after this one,
    # and the evaluation of an epoch belongs after the line that reports its training.
    def on_epoch_begin(self, epoch, logs=None):
        self._show_line()

    def on_train_end(self, logs=None):
        self._show_line()

    def on_epoch_end(self, epoch, logs=None):
        start, cpu_start = time.time(), time.process_time()
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        metrics, predictions = self.recipe.evaluate(self.task_model)
        seconds = time.time() - start
        main = metrics[self.recipe.main_metric]
        self.history.append({"epoch": epoch + 1, "train_loss": float((logs or {}).get("loss", float("nan"))),
                             "eval_seconds": round(seconds, 1), **{k: float(v) for k, v in metrics.items()}})
        # record_if(True): whatever condition another callback left in force, these are written.
        with self.writer.as_default(step=step), tf.summary.record_if(True):
            for k, v in metrics.items():
                tf.summary.scalar(k, v)
        self.writer.flush()
        improved = self.best is None or main > self.best
        shown = ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        self._line = f"epoch {epoch + 1}: {shown}" + ("  (best so far: saved)" if improved else "")
        if improved:
            self.best, self.best_epoch = main, epoch + 1
            info = {**self.recipe.task_info(), "epoch": epoch + 1,
                    "eval_metrics": {k: float(v) for k, v in metrics.items()}}
            self.task_model.save_model_dir(self.out_dir, extra_info=info)
            self.prediction_files = [str(p) for p in self.recipe.write_predictions(self.out_dir, predictions)]
        self.history[-1]["save_seconds"] = round(time.time() - start - seconds, 1)
        self.epoch_end_seconds += time.time() - start
        self.epoch_end_cpu_seconds += time.process_time() - cpu_start

