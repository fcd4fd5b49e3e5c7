"""Training curves that show what the model did at each step, on the optimizer's step axis.

Keras' ``logs`` at a batch's end hold running means since the start of the epoch (its metrics are
reset when an epoch begins), so a curve of them restarts at every epoch boundary: a cliff where
nothing happened to the model. ``StepScalars`` logs instead, every ``every`` steps, the mean of
the loss and of each metric over exactly the steps since its previous point (``every=1``: each
step's own value), whatever epochs those steps belong to. It reads the ``total`` and ``count``
that Keras' mean metrics keep (the loss tracker, accuracies, ``Mean`` trackers): the differences
between two readings are the sums of the steps between them, weighted as Keras weights them
(examples, or masked positions), so no running mean is ever undone by arithmetic. A metric without
those two variables has no step series; its epoch means still come with ``epoch_means``.

Written to TensorBoard under ``log_dir`` (a run folder such as ``logs/train``), every point at the
optimizer's step (a resumed run continues its curves):

- ``train/<name>``: the mean over the steps since the previous point (``loss``, each metric);
- ``train/learning_rate``, ``train/examples_per_second`` (with ``global_batch_size``);
- with ``epoch_means``: ``epoch_mean/<name>``, the epoch's mean (Keras' epoch logs), at the step
  the epoch ended.
"""

from __future__ import annotations

import time

import keras
import numpy as np
import tensorflow as tf

from kbert import compat
from kbert.errors import OptionsError

STEP_PREFIX = "train/"
EPOCH_MEAN_PREFIX = "epoch_mean/"


def _mean_parts(model) -> dict:
    """{logged name: (total variable, count variable)} of the model's mean-type metrics."""
    parts = {}
    for metric in model.metrics:
        for name, leaf in compat.metric_leaves(metric):
            total, count = getattr(leaf, "total", None), getattr(leaf, "count", None)
            if isinstance(total, keras.Variable) and isinstance(count, keras.Variable):
                parts[name] = (total, count)
    return parts


def _read(variable) -> float:
    return float(np.asarray(keras.ops.convert_to_numpy(variable.value), np.float64))


class StepScalars(keras.callbacks.Callback):
    """TensorBoard scalars of a ``fit``: each point the mean over the steps since the previous one.

    Args:
        log_dir: the run folder the summaries go to (e.g. ``MODEL_DIR/logs/train``).
        every: steps between points (1: every step's own value).
        global_batch_size: examples per step, for ``train/examples_per_second`` (None: not logged).
        epoch_means: also log each epoch's means as ``epoch_mean/<name>`` at its last step.
    """

    def __init__(self, log_dir, every=10, global_batch_size=None, epoch_means=False):
        super().__init__()
        if every < 1:
            raise OptionsError(f"every must be at least 1, got {every}", option="every", value=every)
        self.writer = tf.summary.create_file_writer(str(log_dir))
        self.every, self.global_batch_size, self.epoch_means = every, global_batch_size, epoch_means
        self._parts = None
        self._seen = {}      # name -> (total, count) read last in this epoch (Keras resets them per epoch)
        self._window = {}    # name -> [total, count] summed since the last point
        self._epoch_start_step = 0
        self._step = 0
        self._epoch_open = False   # between an epoch's begin and end: its metrics are the training's
        self._window_start = None  # (step, time) of the last point
        self._paused = 0.0         # seconds between epochs (evaluation, saving) in the current window
        self._epoch_end_time = None

    def _parts_of(self, model):
        if self._parts is None:
            self._parts = _mean_parts(model)
        return self._parts

    def on_epoch_begin(self, epoch, logs=None):
        model = self.model  # under JAX this property brings the model's state up to date
        self._epoch_start_step = self._step = int(np.asarray(keras.ops.convert_to_numpy(model.optimizer.iterations)))
        self._seen, self._epoch_open = {}, True
        now = time.perf_counter()
        if self._window_start is None:
            self._window_start = (self._step, now)
        elif self._epoch_end_time is not None:
            self._paused += now - self._epoch_end_time
        self._epoch_end_time = None

    def _accumulate(self, model):
        """Adds what the metrics gained since their last reading to the window (only while an
        epoch runs: after its end, an evaluation may use the same metrics)."""
        if not self._epoch_open:
            return
        for name, (total, count) in self._parts_of(model).items():
            t, c = _read(total), _read(count)
            seen_t, seen_c = self._seen.get(name, (0.0, 0.0))
            window = self._window.setdefault(name, [0.0, 0.0])
            window[0] += t - seen_t
            window[1] += c - seen_c
            self._seen[name] = (t, c)

    def on_train_batch_end(self, batch, logs=None):
        # ``batch`` is the epoch's index of the last batch this call ran (several with
        # steps_per_execution), so the step is known without reading the device.
        self._step = self._epoch_start_step + int(batch) + 1
        if self._step // self.every > self._window_start[0] // self.every:
            self._write_point(self.model)

    def on_epoch_end(self, epoch, logs=None):
        model = self.model
        self._accumulate(model)  # before the next epoch's reset; the window runs on across epochs
        self._epoch_open, self._epoch_end_time = False, time.perf_counter()
        if self.epoch_means:
            with self.writer.as_default(step=self._step), tf.summary.record_if(True):
                for name, (total, count) in self._parts_of(model).items():
                    if _read(count) > 0:
                        tf.summary.scalar(EPOCH_MEAN_PREFIX + name, _read(total) / _read(count))
            self.writer.flush()

    def on_train_end(self, logs=None):
        if self._window_start is not None and self._step > self._window_start[0]:
            self._write_point(self.model)  # the last steps, fewer than ``every``

    def _write_point(self, model):
        self._accumulate(model)
        steps = self._step - self._window_start[0]
        now = time.perf_counter()
        elapsed = now - self._window_start[1] - self._paused - (now - self._epoch_end_time if self._epoch_end_time else 0)
        with self.writer.as_default(step=self._step), tf.summary.record_if(True):
            for name, (total, count) in self._window.items():
                if count > 0:
                    tf.summary.scalar(STEP_PREFIX + name, total / count)
            tf.summary.scalar(STEP_PREFIX + "learning_rate", float(np.asarray(
                keras.ops.convert_to_numpy(model.optimizer.learning_rate))))
            if self.global_batch_size and elapsed > 0:
                tf.summary.scalar(STEP_PREFIX + "examples_per_second", steps * self.global_batch_size / elapsed)
        self.writer.flush()
        self._window, self._paused = {}, 0.0
        self._window_start = (self._step, now)
        if self._epoch_end_time is not None:  # between epochs: the pause counts from this point on
            self._epoch_end_time = now
