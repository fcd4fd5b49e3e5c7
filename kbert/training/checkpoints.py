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

from kbert.errors import Error


class TrainingDiverged(Error, RuntimeError):
    pass


class CheckpointWriteError(Error, OSError):
    """A checkpoint could not be written; the previous checkpoints are intact."""


class CheckpointRestoreError(Error, RuntimeError):
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


def _remove_orphans(directory, log) -> None:
    """Temporary files of a checkpoint write that was cut off (``ckpt-N_temp/``): nothing points at
    them, and at the size of a large model they would fill the disk run after run."""
    for orphan in sorted(directory.glob("ckpt-*_temp")):
        log(f"removing {orphan}: the partial files of a checkpoint write that did not finish")
        shutil.rmtree(orphan, ignore_errors=True)


def _restore_first_readable(state, candidates, load) -> int:
    """``load``s the newest of ``candidates`` (newest first) that can be read, reporting each one
    that cannot; returns the state's step. The files' readers (TensorFlow, h5py, numpy) raise many
    types for damaged files, so any exception counts as unreadable."""
    failures = []
    for path in candidates:
        try:
            load(path)
        except Exception as e:  # noqa: BLE001 - see above
            reason = _describe(e)[:400]
            failures.append(f"{path}: {reason}")
            state.log(f"warning: cannot restore checkpoint {path} ({reason}); trying the one before it")
            continue
        if failures:
            state.log(f"restored {path} instead of the latest checkpoint")
        return state.step
    if failures:
        raise CheckpointRestoreError(
            f"no checkpoint in {state.directory} could be restored:\n  " + "\n  ".join(failures))
    return state.step


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
    def latest_checkpoint(self) -> str | None:
        return self.manager.latest_checkpoint

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
        _remove_orphans(self.directory, self.log)
        return _restore_first_readable(
            self, list(reversed(self.manager.checkpoints)),
            lambda path: self.checkpoint.restore(path).assert_existing_objects_matched())

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


class KerasCheckpointState:
    """The same contract as CheckpointState in Keras' own backend-neutral files, for backends
    without tf.train.Checkpoint (JAX): ``ckpt-<step>/model.weights.h5`` (the model's weights by
    layer path) and ``ckpt-<step>/optimizer.npz`` (the optimizer's variables in order, the step
    counter among them). A checkpoint is written into ``ckpt-<step>_temp/`` and renamed; the
    ``checkpoint`` file naming the latest one is replaced atomically after that."""

    STATE_FILE = "checkpoint"

    def __init__(self, directory, model, optimizer, max_to_keep=3, log=print):
        self.directory = pathlib.Path(directory)
        self.model, self.optimizer, self.max_to_keep, self.log = model, optimizer, max_to_keep, log

    @property
    def step(self) -> int:
        return int(np.asarray(self.optimizer.iterations.numpy()))

    def _written(self) -> list:
        """Complete checkpoints, oldest first."""
        found = [(_step_of(p.name), p) for p in self.directory.glob("ckpt-*") if p.is_dir()
                 and not p.name.endswith("_temp") and _step_of(p.name) is not None]
        return [str(p) for _, p in sorted(found)]

    @property
    def latest_checkpoint(self) -> str | None:
        state = self.directory / self.STATE_FILE
        if state.exists():
            name = state.read_text(encoding="utf-8").strip()
            if name and (self.directory / name).is_dir():
                return str(self.directory / name)
        written = self._written()
        return written[-1] if written else None

    @property
    def saved_step(self) -> int | None:
        return _step_of(self.latest_checkpoint)

    def restore(self) -> int:
        _remove_orphans(self.directory, self.log)
        latest = self.latest_checkpoint
        candidates = [p for p in reversed(self._written()) if latest is None or _step_of(p) <= _step_of(latest)]
        return _restore_first_readable(self, candidates, self._load)

    def _load(self, path) -> None:
        self.model.load_weights(str(pathlib.Path(path) / "model.weights.h5"))
        with np.load(pathlib.Path(path) / "optimizer.npz") as saved:
            values = [saved[f"arr_{i}"] for i in range(len(saved.files))]
        if len(values) != len(self.optimizer.variables):
            raise CheckpointRestoreError(f"{path}: {len(values)} optimizer variables saved, "
                                         f"{len(self.optimizer.variables)} here")
        for variable, value in zip(self.optimizer.variables, values):
            variable.assign(value)

    def weights_are_finite(self) -> bool:
        return all(np.isfinite(np.asarray(v.numpy(), dtype=np.float32)).all() for v in self.model.variables
                   if "float" in str(v.dtype))

    def save(self) -> str:
        step = self.step
        previous = self.latest_checkpoint
        if not self.weights_are_finite():
            raise TrainingDiverged(
                f"the weights are not finite (NaN or Inf) at step {step}: checkpoint not written. "
                f"The last good checkpoint is {previous or '(none yet)'}")
        final = self.directory / f"ckpt-{step}"
        temp = self.directory / f"ckpt-{step}_temp"
        try:
            shutil.rmtree(temp, ignore_errors=True)
            temp.mkdir(parents=True)
            self.model.save_weights(str(temp / "model.weights.h5"))
            np.savez(temp / "optimizer.npz", *[np.asarray(v.numpy()) for v in self.optimizer.variables])
            if final.exists():
                shutil.rmtree(final)
            temp.rename(final)
            pointer = self.directory / (self.STATE_FILE + ".tmp")
            pointer.write_text(final.name + "\n", encoding="utf-8")
            pointer.replace(self.directory / self.STATE_FILE)
        except OSError as e:
            shutil.rmtree(temp, ignore_errors=True)
            cause = "no space left on device" if _no_space(e) else _describe(e)
            raise CheckpointWriteError(
                e.errno or errno.EIO,
                f"{cause} while writing checkpoint at step {step} to {self.directory}; the previous "
                f"checkpoint {previous or '(none)'} is intact. Free space (or fix the cause) and rerun the "
                "same command to resume from it") from e
        for old in self._written()[:-self.max_to_keep]:
            shutil.rmtree(old, ignore_errors=True)
        return str(final)


def checkpoint_state(directory, model, optimizer, max_to_keep=3, log=print):
    """The checkpoint state of the current backend: tf.train.Checkpoint under TensorFlow (its
    files as before), Keras weight files elsewhere."""
    cls = CheckpointState if keras.backend.backend() == "tensorflow" else KerasCheckpointState
    return cls(directory, model, optimizer, max_to_keep=max_to_keep, log=log)


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
            latest = self.state.latest_checkpoint
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

