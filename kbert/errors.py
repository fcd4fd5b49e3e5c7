"""Errors for bad input data, shared by every reader in kbert.

A DataError always says where (file and 1-based line, or a record such as a SQuAD question id),
which field, what value was found and what was expected, so a user can fix the file without a
debugger.
"""

from __future__ import annotations

import os

from kbert.api_export import kbert_export

_MISSING = object()
_MAX_VALUE_CHARS = 200


def _show(value) -> str:
    text = repr(value)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 3] + "..."
    return text


@kbert_export("kbert.DataError")
class DataError(ValueError):
    """A malformed input file: bad row, bad field value, bad encoding, empty file.

    Args:
      file: the file (path or name) the data came from.
      expected: what a valid value/row looks like.
      line: 1-based line number in the file, if the format is line based.
      record: a record name (e.g. 'question id 56be...' or 'data[3].paragraphs[1]'), where
        lines do not identify the data.
      field: the column / key / field name that is wrong.
      value: the offending value (omit when there is none, e.g. a missing column).

    Examples:
        >>> import kbert
        >>> print(kbert.DataError("train.tsv", "0 or 1", line=7, field="label", value="2"))
        train.tsv, line 7: field 'label': got '2'; expected 0 or 1
    """

    def __init__(self, file, expected: str, *, line: int | None = None, record: str | None = None,
                 field: str | None = None, value=_MISSING):
        self.file = os.fspath(file) if not isinstance(file, str) else file
        self.line = line
        self.record = record
        self.field = field
        self.value = None if value is _MISSING else value
        self.expected = expected
        where = self.file
        if line is not None:
            where += f", line {line}"
        if record is not None:
            where += f", {record}"
        if line is None and record is None:
            where += " (whole file)"
        message = where
        if field is not None:
            message += f": field {field!r}"
        if value is not _MISSING:
            message += f": got {_show(value)}"
        elif field is not None:
            message += ": missing"
        message += f"; expected {expected}"
        super().__init__(message)


@kbert_export("kbert.OptionsError")
class OptionsError(ValueError):
    """A training option that cannot work (a missing required option, a value out of range, one
    the current backend cannot run); the message names the option and its value.

    Examples:
        >>> import kbert
        >>> kbert.FinetuneOptions(task="csv", init="runs/tiny", model_dir="runs/out", batch_size=0)
        Traceback (most recent call last):
        ...
        kbert.errors.OptionsError: ...
    """


class TrainingStopped(Exception):
    """Training stopped on request (SIGTERM) after writing a checkpoint at ``step``; running the same
    training again resumes from it. Commands exit with ``exit_status`` (128 + SIGTERM)."""

    exit_status = 143

    def __init__(self, step: int, checkpoint: str | None = None):
        self.step = step
        self.checkpoint = checkpoint
        super().__init__(f"stopped by SIGTERM at step {step}; rerun the same command to resume")
