"""kbert.training.step_scalars: the logged training curves are what the model did at each step.

The reference is computed apart from Keras' metrics: before each step, a callback runs the model on
that step's batch with the weights the step starts from (no dropout, so the step's forward pass sees
the same), and takes its loss and accuracy with NumPy. Keras' own per-batch logs are running means
since the epoch began; a curve of them restarts at every epoch boundary and fails these checks.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from kbert.errors import OptionsError

HERE = pathlib.Path(__file__).resolve().parent
ROWS, BATCH, EPOCHS = 23, 5, 3  # 5 steps an epoch, the last of 3 rows: steps weigh what Keras weighs


def run_scenario(log_dir, every):
    """Trains a small classifier 3 epochs with StepScalars(every) logging to ``log_dir``; returns
    [(rows, loss, accuracy)] of each step, computed independently before the step ran."""
    import keras

    from kbert.training.step_scalars import StepScalars

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(ROWS, 4)).astype("float32")
    y = rng.integers(0, 3, ROWS)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(3)])
    model.compile(keras.optimizers.SGD(0.5), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    reference = []

    class Reference(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            rows = slice(batch * BATCH, (batch + 1) * BATCH)
            logits = np.asarray(keras.ops.convert_to_numpy(self.model(x[rows], training=False)), np.float64)
            shifted = logits - logits.max(-1, keepdims=True)
            log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
            labels = y[rows]
            reference.append((len(labels), -log_p[np.arange(len(labels)), labels].mean(),
                              (logits.argmax(-1) == labels).mean()))

    model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0,
              callbacks=[Reference(), StepScalars(log_dir, every=every, global_batch_size=BATCH, epoch_means=True)])
    return reference


def expected_points(reference, every):
    """{tag: [(step, value)]}: the mean (weighted by rows) over the steps since the previous point."""
    steps_per_epoch = -(-ROWS // BATCH)
    ends = sorted({s for s in range(every, len(reference) + 1, every)} | {len(reference)})
    points, start = {"train/loss": [], "train/accuracy": []}, 0
    for end in ends:
        rows, loss, accuracy = (np.array(column, np.float64) for column in zip(*reference[start:end]))
        points["train/loss"].append((end, (rows * loss).sum() / rows.sum()))
        points["train/accuracy"].append((end, (rows * accuracy).sum() / rows.sum()))
        start = end
    for epoch in range(EPOCHS):
        part = reference[epoch * steps_per_epoch:(epoch + 1) * steps_per_epoch]
        rows, loss, accuracy = (np.array(column, np.float64) for column in zip(*part))
        end = (epoch + 1) * steps_per_epoch
        points.setdefault("epoch_mean/loss", []).append((end, (rows * loss).sum() / rows.sum()))
        points.setdefault("epoch_mean/accuracy", []).append((end, (rows * accuracy).sum() / rows.sum()))
    return points


def check(log_dir, reference, every):
    from kbert.explore.curves import read_scalars

    logged = {tag: points for (_, tag), points in read_scalars(log_dir).items()}
    assert {"train/learning_rate", "train/examples_per_second"} <= set(logged)
    for tag, points in expected_points(reference, every).items():
        assert [s for s, _ in logged[tag]] == [s for s, _ in points], tag
        np.testing.assert_allclose([v for _, v in logged[tag]], [v for _, v in points], rtol=2e-5, atol=1e-6,
                                   err_msg=tag)


@pytest.mark.parametrize("every", [1, 4])
def test_each_point_is_the_mean_of_its_own_steps_across_epoch_boundaries(tmp_path, every):
    reference = run_scenario(tmp_path, every)
    assert len(reference) == EPOCHS * 5
    check(tmp_path, reference, every)


def test_a_step_after_an_epoch_boundary_is_not_an_epoch_mean(tmp_path):
    # The cliff the old curves had: at an epoch's first step Keras' running mean restarts. Here
    # the first step of epoch 2 is logged as its own loss, far from the mean of epoch 1.
    reference = run_scenario(tmp_path, 1)
    from kbert.explore.curves import read_scalars

    loss = dict(read_scalars(tmp_path)[(".", "train/loss")])
    assert loss[6] == pytest.approx(reference[5][1], rel=2e-5)
    assert loss[7] == pytest.approx(reference[6][1], rel=2e-5)


def test_every_must_be_positive(tmp_path):
    from kbert.training.step_scalars import StepScalars

    with pytest.raises(OptionsError, match="every must be at least 1, got 0"):
        StepScalars(tmp_path, every=0)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_same_under_other_backends(tmp_path, backend):
    env = {**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": os.pathsep.join(
        [str(HERE.parents[1]), str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, __file__, str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reference = [tuple(row) for row in np.load(tmp_path / "reference.npy")]
    check(tmp_path / "logs", reference, 4)


if __name__ == "__main__":  # the other backends' side: python THIS_FILE OUT
    out = pathlib.Path(sys.argv[1])
    np.save(out / "reference.npy", np.array(run_scenario(out / "logs", 4), np.float64))
