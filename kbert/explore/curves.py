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
    """{(sub-directory, tag): [(step, value), ...]} of every scalar summary under ``log_dir``, each list
    in step order; the sub-directory of the event files directly in ``log_dir`` is ``"."``.

    Read by TensorBoard's own reader (``EventMultiplexer``: one ``EventAccumulator`` per folder that
    holds event files), which reads every event file of a folder in name order, that is the order
    they were written in (a resumed run's file after the first run's), and stops quietly at the end
    of a file still being written. Every point is kept (TensorBoard keeps a sample of 10 per tensor
    tag unless told otherwise). TensorFlow 2's ``tf.summary.scalar`` writes tensors under the
    ``scalars`` plugin; ``simple_value`` summaries (TensorFlow 1, ``tf.compat.v1``) are TensorBoard's
    ``Scalars``: both are read, every other summary (text, histograms, images) is not.
    """
    from tensorboard.backend.event_processing import event_accumulator, event_multiplexer
    from tensorboard.util import tensor_util

    everything = {event_accumulator.SCALARS: 0, event_accumulator.TENSORS: 0}  # 0: keep every point
    logs = event_multiplexer.EventMultiplexer(size_guidance=everything)
    logs.AddRunsFromDirectory(str(log_dir))
    logs.Reload()
    series = {}
    for run, tags in logs.Runs().items():
        for tag in tags[event_accumulator.SCALARS]:
            series.setdefault((run, tag), []).extend((e.step, e.value) for e in logs.Scalars(run, tag))
        for tag in tags[event_accumulator.TENSORS]:
            if logs.SummaryMetadata(run, tag).plugin_data.plugin_name == "scalars":
                points = [(e.step, tensor_util.make_ndarray(e.tensor_proto).item()) for e in logs.Tensors(run, tag)]
                series.setdefault((run, tag), []).extend(points)
    # Steps in order; a step logged twice (a run resumed from a checkpoint before its last logged
    # step) keeps its points in the order they were written.
    return {key: sorted(((int(step), float(value)) for step, value in points), key=lambda point: point[0])
            for key, points in series.items()}


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
