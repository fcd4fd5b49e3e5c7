"""A PNG of a run's loss and accuracy curves, read back from its TensorBoard event files.

``plot_run_curves(log_dir, path)``: every scalar under ``log_dir`` (all sub-directories: train,
eval, validation, ...) whose tag names a loss goes on the left panel, every accuracy/F1/exact
match/correlation on the right one; one line per (sub-directory, tag), x = the step the summary
was written at. Learning rate, throughput and the like are left out.
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


def plot_run_curves(log_dir, path=None, title=None, x_scale=None) -> pathlib.Path | None:
    """Writes the curves of the run logged in ``log_dir`` to ``path`` (default: ``curves.png``
    beside ``log_dir``); returns the path, or None when the logs hold no loss or metric.

    ``x_scale`` {sub-directory: factor} puts runs logged per epoch on the step axis (fine-tuning's
    ``eval`` is logged at step = epoch number: factor = steps per epoch). Keras' ``epoch_*``
    averages are left out where its ``batch_*`` curve of the same metric is there.
    """
    from kbert.explore.attention_png import _pyplot

    log_dir = pathlib.Path(log_dir)
    scalars = read_scalars(log_dir)
    series = {(run, tag): [(step * (x_scale or {}).get(run, 1), v) for step, v in points]
              for (run, tag), points in scalars.items()
              if _panel(tag) is not None and not (tag.startswith("epoch_") and (run, "batch_" + tag[6:]) in scalars)}
    if not series:
        return None
    plt = _pyplot("the loss/accuracy curves")
    path = pathlib.Path(path) if path is not None else log_dir.parent / CURVES_FILE
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for (run, tag), points in sorted(series.items()):
        steps, values = zip(*points)
        label = tag if run == "." else f"{run}: {tag}"
        axes[_panel(tag)].plot(steps, values, marker="o" if len(points) < 20 else None, label=label)
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


def report_curves(log_dir, x_scale=None) -> str:
    """For the end of a training job: draws the curves and returns the line to print (where the
    PNG is, or why there is none); never fails the job over a picture."""
    try:
        path = plot_run_curves(log_dir, x_scale=x_scale)
    except ImportError as e:
        return f"not drawn: {e}"
    return str(path) if path is not None else f"not drawn: no loss or metric logged under {log_dir}"
