"""Checkpoints that resume: weights, optimizer state and step, written atomically.

``tf.train.CheckpointManager`` writes ``ckpt-N_temp/...``, renames it to ``ckpt-N.{index,data-*}``
and only then points the ``checkpoint`` state file (itself replaced atomically) at it, so a write
cut off half way leaves the previous checkpoint the latest one. On top of that:

- ``restore`` falls back to the previous checkpoint when the latest cannot be read (a file lost
  or damaged after it was written), saying which one it skipped and why;
- ``save`` refuses to write non-finite weights (the last good checkpoint stays the latest) and
  turns a failed write (disk full, quota, permissions) into ``CheckpointWriteError`` naming the
  step and the cause, after removing the partial files; the previous checkpoints are untouched.
"""

from __future__ import annotations

import errno
import math
import pathlib
import re
import shutil
import signal

import keras
import numpy as np
import tensorflow as tf


class TrainingDiverged(RuntimeError):
    pass


class CheckpointWriteError(OSError):
    """A checkpoint could not be written; the previous checkpoints are intact."""


class CheckpointRestoreError(RuntimeError):
    """No checkpoint in the directory could be restored."""


def _step_of(path) -> int | None:
    match = re.search(r"-(\d+)$", str(path or ""))
    return int(match.group(1)) if match else None


def _no_space(error) -> bool:
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return "no space left" in str(error).lower() or "quota exceeded" in str(error).lower()


def _describe(error) -> str:
    """An OSError or TensorFlow error in one line, without TensorFlow's graph node decorations."""
    text = str(getattr(error, "message", None) or error)
    text = re.sub(r"\{\{[^}]*\}\}\s*", "", text)
    text = re.sub(r"\s*\[Op:\w+\]", "", text).strip().splitlines()[0] if text.strip() else ""
    return f"{type(error).__name__}: {text}"


class CheckpointState:
    def __init__(self, directory, model, optimizer, max_to_keep=3, log=print):
        self.directory = pathlib.Path(directory)
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
        self.manager = tf.train.CheckpointManager(self.checkpoint, str(directory), max_to_keep=max_to_keep)
        self.optimizer = optimizer
        self.model = model
        self.log = log
        self._finite = None

    @property
    def step(self) -> int:
        return int(self.optimizer.iterations.numpy())

    @property
    def saved_step(self) -> int | None:
        """The step of the latest checkpoint on disk (None when there is none)."""
        return _step_of(self.manager.latest_checkpoint)

    def restore(self) -> int:
        """Restores the latest readable checkpoint if there is one; returns the step to continue from.

        A latest checkpoint that cannot be read is reported and the one before it is tried, and so on.
        Temporary files of a write that was cut off (``ckpt-N_temp/``) are removed: nothing points
        at them, and at the size of a large model they would fill the disk run after run.
        """
        for orphan in sorted(self.directory.glob("ckpt-*_temp")):
            self.log(f"removing {orphan}: the partial files of a checkpoint write that did not finish")
            shutil.rmtree(orphan, ignore_errors=True)
        candidates = list(reversed(self.manager.checkpoints))
        failures = []
        for path in candidates:
            try:
                self.checkpoint.restore(path).assert_existing_objects_matched()
            except Exception as e:  # noqa: BLE001 - TF raises OpError, ValueError, IndexError, ... for damaged files
                reason = _describe(e)[:400]
                failures.append(f"{path}: {reason}")
                self.log(f"warning: cannot restore checkpoint {path} ({reason}); trying the one before it")
                continue
            if failures:
                self.log(f"restored {path} instead of the latest checkpoint")
            return self.step
        if failures:
            raise CheckpointRestoreError(
                f"no checkpoint in {self.directory} could be restored:\n  " + "\n  ".join(failures))
        return self.step

    def weights_are_finite(self) -> bool:
        if self._finite is None:
            variables = [v for v in self.model.variables if tf.as_dtype(v.dtype).is_floating]

            @tf.function(autograph=False)
            def finite():
                return tf.reduce_all([tf.reduce_all(tf.math.is_finite(v)) for v in variables])

            self._finite = finite
        return bool(self._finite())

    def save(self) -> str:
        """Writes ``ckpt-<step>``; see the module docstring for what happens when that fails."""
        step = self.step
        previous = self.manager.latest_checkpoint
        if not self.weights_are_finite():
            raise TrainingDiverged(
                f"the weights are not finite (NaN or Inf) at step {step}: checkpoint not written. "
                f"The last good checkpoint is {previous or '(none yet)'}")
        try:
            return self.manager.save(checkpoint_number=step)
        except (OSError, tf.errors.OpError) as e:
            self._remove_partial(step, previous)
            cause = "no space left on device" if _no_space(e) else _describe(e)
            raise CheckpointWriteError(
                getattr(e, "errno", None) or errno.EIO,
                f"{cause} while writing checkpoint at step {step} to {self.directory}; the previous "
                f"checkpoint {previous or '(none)'} is intact. Free space (or fix the cause) and rerun the "
                "same command to resume from it") from e

    def _remove_partial(self, step, previous):
        prefix = self.directory / f"ckpt-{step}"
        if previous and pathlib.Path(previous).resolve() == prefix.resolve():
            return  # rewriting the same step: the old files are the previous checkpoint
        for path in [*self.directory.glob(f"{prefix.name}.*"), *self.directory.glob(f"{prefix.name}_temp*")]:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


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
        self._restore_handler()

    def _restore_handler(self):
        if self._previous_handler is not None:
            signal.signal(signal.SIGTERM, self._previous_handler)
            self._previous_handler = None

    def _on_sigterm(self, signum, frame):
        self.terminated = True

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(np.asarray(loss))):
            self.model.stop_training = True
            self._restore_handler()
            latest = self.state.manager.latest_checkpoint
            raise TrainingDiverged(
                f"loss became {float(np.asarray(loss))} at step {self.state.step}; training stopped and "
                f"nothing was saved after it. The last good checkpoint is {latest or '(none yet)'}"
                + (f" (step {self.state.saved_step}); rerunning resumes from there, so lower the learning "
                   "rate or fix the data first" if latest else ""))
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
