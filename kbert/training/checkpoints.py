"""Checkpoints that resume: weights, optimizer state and step, written atomically.

``tf.train.CheckpointManager`` writes ``ckpt-N.*`` first and only then points the ``checkpoint``
state file at it, so a write cut off half way leaves the previous checkpoint the latest one.
"""

from __future__ import annotations

import math
import signal

import keras
import numpy as np
import tensorflow as tf


class TrainingDiverged(RuntimeError):
    pass


class CheckpointState:
    def __init__(self, directory, model, optimizer, max_to_keep=3):
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
        self.manager = tf.train.CheckpointManager(self.checkpoint, str(directory), max_to_keep=max_to_keep)
        self.optimizer = optimizer

    @property
    def step(self) -> int:
        return int(self.optimizer.iterations.numpy())

    def restore(self) -> int:
        """Restores the latest checkpoint if there is one; returns the step to continue from."""
        latest = self.manager.latest_checkpoint
        if latest:
            self.checkpoint.restore(latest).assert_existing_objects_matched()
        return self.step

    def save(self) -> str:
        return self.manager.save(checkpoint_number=self.step)


class CheckpointCallback(keras.callbacks.Callback):
    """Saves at each epoch end (kbert's epochs are checkpoint intervals) and on SIGTERM.

    On SIGTERM the current step finishes, a checkpoint is written and training stops; the
    caller then exits. A NaN/Inf loss stops training with an error naming the step and writes
    nothing, so the last good checkpoint stays the latest.
    """

    def __init__(self, state: CheckpointState, log=print):
        super().__init__()
        self.state = state
        self.log = log
        self.terminated = False
        self._previous_handler = None

    def on_train_begin(self, logs=None):
        try:
            self._previous_handler = signal.signal(signal.SIGTERM, self._on_sigterm)
        except ValueError:  # not the main thread: leave signals alone
            self._previous_handler = None

    def on_train_end(self, logs=None):
        if self._previous_handler is not None:
            signal.signal(signal.SIGTERM, self._previous_handler)

    def _on_sigterm(self, signum, frame):
        self.terminated = True

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(np.asarray(loss))):
            self.model.stop_training = True
            raise TrainingDiverged(
                f"loss became {float(np.asarray(loss))} at step {self.state.step}; stopped. The last good "
                f"checkpoint is {self.state.manager.latest_checkpoint or '(none yet)'}"
            )
        if self.terminated:
            path = self.state.save()
            self.log(f"\nSIGTERM: checkpoint written at step {self.state.step}: {path}")
            self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        if not self.terminated:
            self.state.save()


class StepLogger(keras.callbacks.Callback):
    """TensorBoard scalars keyed by the optimizer's step (so resumed runs continue the curves):
    losses, accuracies, learning rate and examples/s."""

    def __init__(self, log_dir, global_batch_size, every=10):
        super().__init__()
        self.writer = tf.summary.create_file_writer(str(log_dir))
        self.global_batch_size = global_batch_size
        self.every = every
        self._t0 = None
        self._steps = 0

    def on_train_batch_begin(self, batch, logs=None):
        import time

        if self._t0 is None:
            self._t0 = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        import time

        self._steps += 1
        step = int(self.model.optimizer.iterations.numpy())
        if step % self.every:
            return
        elapsed = time.perf_counter() - self._t0
        with self.writer.as_default(step=step):
            for name, value in (logs or {}).items():
                tf.summary.scalar(f"train/{name}", float(np.asarray(value)))
            lr = self.model.optimizer.learning_rate
            tf.summary.scalar("train/learning_rate", float(np.asarray(lr)))
            if elapsed > 0:
                tf.summary.scalar("train/examples_per_second", self._steps * self.global_batch_size / elapsed)
        self.writer.flush()
        self._t0, self._steps = time.perf_counter(), 0
