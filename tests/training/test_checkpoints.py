"""Checkpoints (kbert.training.checkpoints) survive kills, bad writes, full disks and divergence.

On a small Keras regression model (tests/fixtures/small_regression.py), faults injected:
- a crash between two checkpoints: a resume restores step, weights and optimizer state, and the
  steps since the last checkpoint are the only loss;
- a process killed (SIGXFSZ, by a file-size limit) half way through writing a checkpoint's data;
- a real failed write (EFBIG from the same limit, signal ignored) and a disk full (ENOSPC,
  injected into the writer after it wrote half a file): a clear error, the previous checkpoint kept;
- the latest checkpoint damaged after it was written (data truncated, index deleted): restore falls
  back to the one before; all of them damaged: an error listing each;
- a NaN and an Inf loss from poisoned batches, NaN weights behind a finite loss, non-finite weights
  at a checkpoint: training stops naming the step, and nothing non-finite is checkpointed.
``python -m kbert.pretrain`` at a learning rate of 1e30 is in tests/commands/test_pretrain.py, and
SIGTERM and SIGKILL of the CLI there too.
"""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from conftest import REPO
from fixtures.small_regression import assert_same, data, make_model, snapshot
from kbert.training.checkpoints import (
    CheckpointCallback,
    CheckpointRestoreError,
    CheckpointState,
    CheckpointWriteError,
    TrainingDiverged,
)


def test_resume_restores_step_weights_and_optimizer_and_loses_only_later_steps(tmp_path):
    model, optimizer = make_model()
    state = CheckpointState(tmp_path, model, optimizer, log=lambda *a: None)
    x, y = data()
    model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=5, verbose=0)
    state.save()
    saved = snapshot(model, optimizer)
    model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=3, verbose=0)  # lost in the "crash"

    model2, optimizer2 = make_model(seed=1)
    state2 = CheckpointState(tmp_path, model2, optimizer2)
    assert state2.restore() == 5
    assert_same(snapshot(model2, optimizer2), saved)  # weights, Adam moments, iterations


CHILD = r"""
import os, resource, signal, sys
import numpy as np
sys.path.insert(0, {tests!r})
from fixtures.small_regression import make_model, data, snapshot
from kbert.training.checkpoints import CheckpointState
model, optimizer = make_model(width=4096)
state = CheckpointState({directory!r}, model, optimizer)
x, y = data()
model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=2, verbose=0)
state.save()
np.savez({saved!r}, *snapshot(model, optimizer))
size = os.path.getsize(os.path.join({directory!r}, "ckpt-2.data-00000-of-00001"))
model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=2, verbose=0)
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it; the kernel now kills on the limit
resource.setrlimit(resource.RLIMIT_FSIZE, (size // 2, resource.RLIM_INFINITY))
print("saving", flush=True)
state.save()
print("not killed", flush=True)
"""


@pytest.mark.slow
def test_process_killed_half_way_through_a_checkpoint_write(tmp_path):
    """The kernel kills the writer when the new data file reaches half its size: a real
    interrupted write. The previous checkpoint restores bit for bit; the next save works."""
    directory, saved = tmp_path / "ckpt", tmp_path / "saved.npz"
    code = CHILD.format(tests=str(REPO / "tests"), directory=str(directory), saved=str(saved))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == -signal.SIGXFSZ, result.stdout + result.stderr[-3000:]
    assert "saving" in result.stdout and "not killed" not in result.stdout
    partial = list(directory.glob("ckpt-4_temp/*"))
    assert partial and not (directory / "ckpt-4.index").exists()  # it did die mid-write
    assert tf.train.latest_checkpoint(str(directory)).endswith("ckpt-2")

    model, optimizer = make_model(seed=3, width=4096)
    logs = []
    state = CheckpointState(directory, model, optimizer, log=logs.append)
    assert state.restore() == 2
    assert not (directory / "ckpt-4_temp").exists() and "did not finish" in logs[0]
    expected = np.load(saved)
    assert_same(snapshot(model, optimizer), [expected[f"arr_{i}"] for i in range(len(expected.files))])
    model.fit(*data(), batch_size=8, epochs=1, steps_per_epoch=2, verbose=0)
    assert state.save().endswith("ckpt-4")
    assert not (directory / "ckpt-4_temp").exists()


def test_disk_full_while_saving_is_a_clear_error_and_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    model, optimizer = make_model()
    state = CheckpointState(tmp_path, model, optimizer)
    x, y = data()
    model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=2, verbose=0)
    state.save()
    good = snapshot(model, optimizer)
    model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=2, verbose=0)

    def disk_full(prefix, options=None):
        os.makedirs(f"{prefix}_temp", exist_ok=True)
        with open(f"{prefix}_temp/part-00000-of-00001.data-00000-of-00001.tempstate1", "wb") as f:
            f.write(b"\0" * 1000)  # half a checkpoint
        with open(f"{prefix}.index", "wb") as f:
            f.write(b"\0" * 10)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), f"{prefix}.data-00000-of-00001")

    monkeypatch.setattr(state.checkpoint, "_write", disk_full)
    with pytest.raises(CheckpointWriteError) as info:
        state.save()
    message = str(info.value)
    assert info.value.errno == errno.ENOSPC
    assert f"no space left on device while writing checkpoint at step 4 to {tmp_path}" in message
    assert f"the previous checkpoint {tmp_path / 'ckpt-2'} is intact" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoint", "ckpt-2.data-00000-of-00001", "ckpt-2.index"]  # partial files removed
    model2, optimizer2 = make_model(seed=5)
    assert CheckpointState(tmp_path, model2, optimizer2).restore() == 2
    assert_same(snapshot(model2, optimizer2), good)


def test_a_real_failed_write_from_tensorflows_writer(tmp_path):
    """RLIMIT_FSIZE with SIGXFSZ ignored (Python's default): the C++ writer gets EFBIG half way."""
    model, optimizer = make_model(width=4096)
    state = CheckpointState(tmp_path, model, optimizer)
    x, y = data()
    model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=2, verbose=0)
    state.save()
    size = os.path.getsize(tmp_path / "ckpt-2.data-00000-of-00001")
    model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=2, verbose=0)
    assert signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN
    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size // 2, old[1]))
    try:
        with pytest.raises(CheckpointWriteError, match=r"File too large while writing checkpoint at step 4.*"
                                                       r"previous checkpoint .*ckpt-2 is intact"):
            state.save()
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old)
    assert not list(tmp_path.glob("ckpt-4*"))
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-2")


def test_a_damaged_latest_checkpoint_falls_back_to_the_one_before(tmp_path):
    model, optimizer = make_model()
    state = CheckpointState(tmp_path, model, optimizer, max_to_keep=5)
    x, y = data()
    snapshots = {}
    for _ in range(3):
        model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=2, verbose=0)
        state.save()
        snapshots[state.step] = snapshot(model, optimizer)
    data_file = tmp_path / "ckpt-6.data-00000-of-00001"
    data_file.write_bytes(data_file.read_bytes()[: data_file.stat().st_size // 2])  # truncated on disk
    (tmp_path / "ckpt-4.index").unlink()  # and one lost
    logs = []
    model2, optimizer2 = make_model(seed=7)
    assert CheckpointState(tmp_path, model2, optimizer2, log=logs.append).restore() == 2
    assert_same(snapshot(model2, optimizer2), snapshots[2])
    assert "cannot restore checkpoint" in logs[0] and "ckpt-6" in logs[0]
    assert "ckpt-4" in logs[1] and "restored" in logs[2] and "ckpt-2" in logs[2]

    (tmp_path / "ckpt-2.index").unlink()
    with pytest.raises(CheckpointRestoreError, match=r"no checkpoint in .* could be restored:\n  .*ckpt-6.*\n"
                                                     r"  .*ckpt-4.*\n  .*ckpt-2"):
        CheckpointState(tmp_path, *make_model(seed=8), log=lambda *a: None).restore()


def _poisoned(value, at=6):
    """Batches of 8 in a fixed order; batch index ``at`` (step at + 1) holds ``value``."""
    x, y = data(n=80, poison_at=at, value=value)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(8).repeat()


@pytest.mark.parametrize("value,shown", [(np.nan, "nan"), (1e30, "inf")])
def test_nan_or_inf_loss_stops_naming_the_step_and_keeps_the_last_good_checkpoint(tmp_path, value, shown):
    model, optimizer = make_model(activation=None)
    state = CheckpointState(tmp_path, model, optimizer)
    callback = CheckpointCallback(state, log=lambda *a: None)
    with pytest.raises(TrainingDiverged) as info:
        model.fit(_poisoned(value), epochs=5, steps_per_epoch=2, callbacks=[callback], verbose=0)
    message = str(info.value)
    assert f"loss became {shown} at step 7" in message
    assert f"last good checkpoint is {tmp_path / 'ckpt-6'} (step 6)" in message
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-6")
    model2, optimizer2 = make_model(seed=9, activation=None)
    assert CheckpointState(tmp_path, model2, optimizer2).restore() == 6
    assert all(np.isfinite(v.numpy()).all() for v in model2.variables)
    assert signal.getsignal(signal.SIGTERM) is not callback._on_sigterm  # handler handed back


def test_nan_weights_behind_a_finite_loss_are_never_checkpointed(tmp_path):
    """A ReLU that maps NaN to 0 (as some CPU kernels' ReLU does, others keep NaN: so it is written
    out here): the poisoned step's loss looks fine, its gradient made the weights NaN. The loss
    check cannot see it; the weight check at the next checkpoint does."""
    def relu_nan_to_zero(t):
        return keras.ops.where(keras.ops.isnan(t), 0.0, keras.ops.relu(t))

    model, optimizer = make_model(activation=relu_nan_to_zero)
    state = CheckpointState(tmp_path, model, optimizer)
    callback = CheckpointCallback(state, log=lambda *a: None)
    with pytest.raises(TrainingDiverged) as info:
        model.fit(_poisoned(np.nan), epochs=5, steps_per_epoch=2, callbacks=[callback], verbose=0)
    assert "weights are not finite (NaN or Inf) at step 8: checkpoint not written" in str(info.value)
    assert f"last good checkpoint is {tmp_path / 'ckpt-6'}" in str(info.value)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-6")


def test_non_finite_weights_are_never_checkpointed(tmp_path):
    model, optimizer = make_model()
    state = CheckpointState(tmp_path, model, optimizer)
    state.save()
    model.layers[0].kernel.assign(tf.fill(model.layers[0].kernel.shape, np.inf))
    with pytest.raises(TrainingDiverged, match=r"weights are not finite \(NaN or Inf\) at step 0: checkpoint not "
                                               r"written.*ckpt-0"):
        state.save()
