"""kbert.training.progress.RunProgress: one display for a whole run, in model.fit."""

import io
import re

import keras
import numpy as np

from kbert.training.progress import RunProgress, format_seconds


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _fit(progress, epochs=2, steps=5, on_epoch_end=None):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x, y = np.ones((steps * 4, 3), "float32"), np.zeros((steps * 4, 1), "float32")
    callbacks = [progress]
    if on_epoch_end:
        callbacks.append(keras.callbacks.LambdaCallback(on_epoch_end=on_epoch_end))
    model.fit(x, y, batch_size=4, epochs=epochs, verbose=0, callbacks=callbacks, shuffle=False)


def test_counts_steps_over_all_epochs_and_ends_lines_before_epoch_messages():
    out = _Terminal()
    progress = RunProgress(10, stream=out, refresh=0.0, newline_at_epoch_end=True)
    _fit(progress, on_epoch_end=lambda epoch, logs: out.write(f"epoch {epoch + 1}: done\n"))
    text = out.getvalue()
    # Steps count on across epochs: 1..10 of 10, never restarting at 1.
    shown = [int(m) for m in re.findall(r"\rstep (\d+)/10 ", text)]
    assert shown[-1] == 10 and shown == sorted(shown) and 6 in shown
    # The epoch message starts its own line.
    assert "\nepoch 1: done\n" in text and "\nepoch 2: done\n" in text
    assert re.search(r"\rstep 10/10 \(100%\)\s+[\d.]+ steps/s\s+took \d+s\s+loss [\d.]+", text)


def test_resumed_run_starts_at_its_step_and_a_log_file_gets_plain_lines():
    out = io.StringIO()  # not a terminal
    progress = RunProgress(25, initial_step=15, stream=out, every_seconds=3600)
    _fit(progress, epochs=2, steps=5)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and "\r" not in out.getvalue()  # only the final line within an hour
    assert lines[0].startswith("step 25/25 (100%)")


def test_eta_format():
    assert [format_seconds(s) for s in (5, 65, 3725)] == ["5s", "1m05s", "1h02m"]
