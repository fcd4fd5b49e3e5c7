"""One progress display for a whole training run: steps done / total, rate, ETA (a Keras callback
used instead of ``model.fit``'s per-epoch bars, which restart at every epoch)."""

from __future__ import annotations

import sys
import time

import keras


def format_seconds(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class RunProgress(keras.callbacks.Callback):
    """``step 120/1000 (12%)  3.1 steps/s  ETA 4m44s  loss 6.2134``, on one line rewritten in
    place on a terminal (at most every ``refresh`` seconds), otherwise a line every
    ``every_seconds`` seconds (and at the end), so a log file stays short.

    Args:
      total_steps: steps of the whole run (all epochs / all fit calls).
      initial_step: steps already done (a resumed run); the rate counts only this run's steps.
      metrics: how many of the logs' values to show after the loss.
      newline_at_epoch_end: end the line at each epoch end, so that what is printed then (e.g.
        fine-tuning's evaluation) starts on its own line.
    """

    def __init__(self, total_steps: int, initial_step: int = 0, stream=None, metrics: int = 2,
                 refresh: float = 0.5, every_seconds: float = 30.0, newline_at_epoch_end: bool = False):
        super().__init__()
        self.total = int(total_steps)
        self.done = int(initial_step)
        self.start_step = int(initial_step)
        self.stream = stream if stream is not None else sys.stdout
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.metrics = metrics
        self.refresh = refresh if self.tty else every_seconds
        self.newline_at_epoch_end = newline_at_epoch_end
        self._start = None
        self._shown_at = 0.0
        self._last_batch = -1
        self._open_line = False
        self._logs = {}

    def line(self, now=None) -> str:
        now = time.monotonic() if now is None else now
        run_steps = self.done - self.start_step
        elapsed = max(now - (self._start or now), 1e-9)
        rate = run_steps / elapsed
        parts = [f"step {self.done}/{self.total} ({100 * self.done / max(self.total, 1):.0f}%)"]
        if run_steps:
            parts.append(f"{rate:.2f} steps/s" if rate < 10 else f"{rate:.0f} steps/s")
            remaining = max(self.total - self.done, 0)
            parts.append(f"ETA {format_seconds(remaining / rate)}" if remaining else
                         f"took {format_seconds(elapsed)}")
        shown = [(k, v) for k, v in self._logs.items() if k == "loss"]
        shown += [(k, v) for k, v in self._logs.items() if k != "loss"][:self.metrics]
        parts += [f"{k} {float(v):.4f}" for k, v in shown]
        return "  ".join(parts)

    def _show(self, final=False):
        now = time.monotonic()
        if not final and now - self._shown_at < self.refresh:
            return
        self._shown_at = now
        if self.tty:
            self.stream.write("\r" + self.line(now) + "\x1b[K")
            self._open_line = True
            if final:
                self._end_line()
        else:
            self.stream.write(self.line(now) + "\n")
        self.stream.flush()

    def _end_line(self):
        if self._open_line:
            self.stream.write("\n")
            self.stream.flush()
            self._open_line = False

    def on_train_begin(self, logs=None):
        if self._start is None:
            self._start = time.monotonic()
            self._shown_at = self._start  # the first line after `refresh` seconds

    def on_epoch_begin(self, epoch, logs=None):
        self._last_batch = -1

    def on_train_batch_end(self, batch, logs=None):
        # With steps_per_execution > 1 Keras reports the last batch of each execution.
        self.done += batch - self._last_batch
        self._last_batch = batch
        self._logs = {k: v for k, v in (logs or {}).items() if _is_number(v)}
        self._show(final=self.done >= self.total)

    def on_epoch_end(self, epoch, logs=None):
        if self.newline_at_epoch_end:
            if self.tty:
                self._show(final=True)
            self._end_line()

    def on_train_end(self, logs=None):
        self._end_line()


def _is_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return getattr(value, "shape", ()) in ((), None)
