"""A PNG of a run's loss and accuracy curves, read back from its TensorBoard event files.

``plot_run_curves(log_dir, path)``: every scalar under ``log_dir`` (all sub-directories: train,
eval, validation, ...) whose tag names a loss goes on the left panel, every accuracy/F1/exact
match/correlation on the right one; one series per (sub-directory, tag), x = the step the summary
was written at (kbert's training writes every series on the optimizer's step axis,
``kbert.training.step_scalars``). Learning rate, throughput and the like are left out.
"""

from __future__ import annotations

import pathlib

import numpy as np

CURVES_FILE = "curves.png"
METRIC_WORDS = ("accuracy", "f1", "exact", "matthews", "pearson", "spearman", "correlation", "auc")


def read_scalars(log_dir) -> dict[tuple[str, str], list[tuple[int, float]]]:
    """{(sub-directory, tag): [(step, value), ...]} of every scalar summary under ``log_dir``."""
    import tensorflow as tf

    log_dir = pathlib.Path(log_dir)
    series = {}
    for path in sorted(log_dir.rglob("events.out.tfevents.*")):
        run = str(path.parent.relative_to(log_dir)) if path.parent != log_dir else "."
        for record in tf.data.TFRecordDataset(str(path)):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    number = float(value.simple_value)
                elif value.HasField("tensor") and value.metadata.plugin_data.plugin_name == "scalars":
                    number = float(np.asarray(tf.make_ndarray(value.tensor)).reshape(()))
                else:
                    continue
                series.setdefault((run, value.tag), []).append((int(event.step), number))
    return {k: sorted(v) for k, v in series.items()}


def _panel(tag: str):
    name = tag.lower().rsplit("/", 1)[-1]
    if "loss" in name:
        return 0
    if any(word in name for word in METRIC_WORDS):
        return 1
    return None


def _style(run: str, tag: str, steps) -> tuple[str, dict]:
    """(legend label, plot keywords) of one series. The training's step series (``train/NAME``,
    kbert.training.step_scalars) is a line whose label says over how many steps each point is a mean;
    epoch means (``epoch_mean/NAME``) and evaluations are points where they were taken."""
    where = "" if run == "." else f"{run}: "
    name = tag.rsplit("/", 1)[-1]
    if tag.startswith("epoch_mean/"):
        return f"{where}{name} (epoch mean)", {"marker": "D", "linestyle": "none", "markeredgecolor": "white"}
    if len(steps) > 1 and run != "eval":
        spacing = int(np.median(np.diff(steps)))
        over = "each step" if spacing == 1 else f"mean of each {spacing} steps"
        return f"{where}{name} ({over})", {"linewidth": 1.0, "alpha": 0.7}
    return f"{where}{name}", {"marker": "o", "linestyle": "--", "markeredgecolor": "black"}


def plot_run_curves(log_dir, path=None, title=None) -> pathlib.Path | None:
    """Writes the curves of the run logged in ``log_dir`` to ``path`` (default: ``curves.png``
    beside ``log_dir``); returns the path, or None when the logs hold no loss or metric.

    Every series is on the optimizer's step axis, as kbert's training writes them: the training's
    means over the steps between two points, each epoch's mean at its last step, each evaluation at
    the step it was taken.
    """
    from kbert.explore.attention_png import _pyplot

    log_dir = pathlib.Path(log_dir)
    series = {key: points for key, points in read_scalars(log_dir).items() if _panel(key[1]) is not None}
    if not series:
        return None
    plt = _pyplot("the loss/accuracy curves")
    path = pathlib.Path(path) if path is not None else log_dir.parent / CURVES_FILE
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    # One colour per quantity (its training line, epoch means and evaluations alike).
    names = sorted({tag.rsplit("/", 1)[-1] for _, tag in series})
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for (run, tag), points in sorted(series.items()):
        steps, values = zip(*points)
        label, style = _style(run, tag, steps)
        color = palette[names.index(tag.rsplit("/", 1)[-1]) % len(palette)]
        axes[_panel(tag)].plot(steps, values, label=label, color=color, **style)
    for ax, name in zip(axes, ("loss", "accuracy / metrics")):
        ax.set_title(name)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8)
        else:
            ax.text(0.5, 0.5, f"no {name} logged", ha="center", va="center", transform=ax.transAxes)
    fig.suptitle(title or f"{log_dir}")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return path


def report_curves(log_dir) -> str:
    """For the end of a training job: draws the curves and returns the line to print (where the
    PNG is, or why there is none); never fails the job over a picture."""
    try:
        path = plot_run_curves(log_dir)
    except ImportError as e:
        return f"not drawn: {e}"
    return str(path) if path is not None else f"not drawn: no loss or metric logged under {log_dir}"
