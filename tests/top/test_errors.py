"""kbert.errors: a DataError is one line that says where (file and line, a record, or the whole file),
which field, the value found (cut when long) and what was expected, with each part kept as an
attribute; TrainingStopped carries the step and checkpoint and the exit status a shell gives SIGTERM.
(Each reader's own errors: tests/data/; an OptionsError's: tests/tasks/core/test_options.py.)"""

import signal

import pytest

from kbert.errors import DataError, TrainingStopped


@pytest.mark.parametrize("where,message", [
    (dict(line=7, field="label", value="2"), "train.tsv, line 7: field 'label': got '2'; expected 0 or 1"),
    (dict(record="question id q1", field="answers", value=[]),
     "train.tsv, question id q1: field 'answers': got []; expected 0 or 1"),
    (dict(line=3, field="label"), "train.tsv, line 3: field 'label': missing; expected 0 or 1"),
    (dict(line=2, record="row b", value=None), "train.tsv, line 2, row b: got None; expected 0 or 1"),
    (dict(), "train.tsv (whole file); expected 0 or 1"),
])
def test_the_message_names_where_the_field_the_value_and_what_was_expected(where, message):
    error = DataError("train.tsv", "0 or 1", **where)
    assert str(error) == message and isinstance(error, ValueError)
    assert (error.file, error.line, error.record, error.field, error.value, error.expected) == (
        "train.tsv", where.get("line"), where.get("record"), where.get("field"), where.get("value"), "0 or 1")


def test_a_path_becomes_text_and_a_long_value_is_cut_to_200_characters(tmp_path):
    path = tmp_path / "rows.jsonl"
    error = DataError(path, "a short text", line=1, field="text", value="x" * 500)
    assert error.file == str(path) and error.value == "x" * 500  # the attribute keeps it whole
    shown = "'" + "x" * 196 + "..."  # repr's opening quote, then as much as fits in 200 characters
    assert str(error) == f"{path}, line 1: field 'text': got {shown}; expected a short text"


def test_training_stopped_exits_as_a_shell_reports_sigterm():
    stopped = TrainingStopped(40, "runs/m/checkpoints/ckpt-40")
    assert stopped.exit_status == 128 + signal.SIGTERM
    assert (stopped.step, stopped.checkpoint) == (40, "runs/m/checkpoints/ckpt-40")
    assert str(stopped) == "stopped by SIGTERM at step 40; rerun the same command to resume"
