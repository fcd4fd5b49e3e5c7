"""The loss/accuracy curves of a run (kbert/explore/curves.py): every logged scalar read back from the
event files and the PNG drawn from them, then the curves the main job (python -m kbert.pretrain, a
short run) and fine-tuning print and write, on one step axis."""

import numpy as np
import pytest
import tensorflow as tf

from conftest import PRETRAIN_RUN_STEPS
from kbert.explore.curves import plot_run_curves, read_scalars


def test_curves_read_back_every_logged_scalar(tmp_path):
    logs = tmp_path / "logs"
    expected = {}

    def write(run, tags, steps, offset=0.0):
        writer = tf.summary.create_file_writer(str(logs / run))
        with writer.as_default():
            for step in steps:
                for i, tag in enumerate(tags):
                    value = offset + 1.0 / (step + i)
                    tf.summary.scalar(tag, value, step=step)
                    expected.setdefault((run, tag), []).append((step, value))
                tf.summary.text("fill_mask", "not a scalar", step=step)
                tf.summary.histogram("weights", [1.0, 2.0], step=step)
        writer.close()

    # More points per tag than TensorBoard keeps by default (10), and a resumed run: a second event file
    # in the same folder whose steps start before the first file's last.
    write("train", ("train/loss", "train/mlm_accuracy", "train/learning_rate"), range(10, 260, 10))
    write("train", ("train/loss", "train/mlm_accuracy", "train/learning_rate"), range(200, 310, 10), offset=-1.0)
    write("eval", ("loss",), range(10, 60, 10))
    assert len(list((logs / "train").glob("events.out.tfevents.*"))) == 2
    # A TensorFlow 1 simple_value summary, directly in the log folder.
    writer = tf.summary.create_file_writer(str(logs))
    with writer.as_default():
        legacy = tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(tag="old/loss", simple_value=2.5)])
        tf.summary.experimental.write_raw_pb(legacy.SerializeToString(), step=7)
    writer.close()
    expected[(".", "old/loss")] = [(7, 2.5)]
    got = read_scalars(logs)
    assert set(got) == set(expected)
    for key, points in expected.items():
        points = sorted(points, key=lambda point: point[0])  # stable: a step's points in the order written
        assert [s for s, _ in got[key]] == [s for s, _ in points], key
        np.testing.assert_allclose([v for _, v in got[key]], [v for _, v in points], rtol=1e-6)
    path = plot_run_curves(logs)
    assert path == tmp_path / "curves.png" and path.stat().st_size > 10_000
    assert plot_run_curves(tmp_path / "empty") is None


def test_pretraining_prints_and_writes_its_curves(pretrain_run):
    model_dir, stdout = pretrain_run.model_dir, pretrain_run.stdout
    assert f"loss/accuracy curves:    {model_dir / 'curves.png'}" in stdout
    assert (model_dir / "curves.png").stat().st_size > 10_000
    # One step axis: the training's points every 10 steps straight through the checkpoint interval's
    # end (an epoch of fit), the held-out evaluation at the last step.
    train = {tag: points for (_, tag), points in read_scalars(model_dir / "logs" / "train").items()}
    for tag in ("train/loss", "train/mlm_loss", "train/mlm_accuracy", "train/nsp_accuracy", "train/learning_rate"):
        assert [step for step, _ in train[tag]] == list(range(10, PRETRAIN_RUN_STEPS + 1, 10)), tag
    assert [step for step, _ in read_scalars(model_dir / "logs" / "eval")[(".", "loss")]] == [PRETRAIN_RUN_STEPS]


@pytest.mark.slow
def test_finetune_prints_and_writes_its_curves(sst2_finetune_run):
    out, stdout = sst2_finetune_run  # conftest: python -m kbert.finetune --task glue/sst2 ... --epochs 2
    assert f"loss/accuracy curves: {out / 'curves.png'}" in stdout
    assert (out / "curves.png").stat().st_size > 10_000
    plotted = {tag for _, tag in read_scalars(out / "logs")}
    assert any("loss" in t for t in plotted) and any("accuracy" in t for t in plotted), plotted
