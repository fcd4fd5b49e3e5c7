"""kbert's errors: one family, ``kbert.Error``, for everything a user fixes by changing the input.

Every error kbert raises for a user to act on (a malformed file, an option that cannot work, a model
directory that does not fit, a tokenizer it cannot build) is a ``kbert.Error``; the commands print it
as one line and exit with status 1 (``kbert.cli_support.run``), and show a traceback only for anything
else, which is a bug. Each subclass also derives from the built-in exception its callers caught
before (``ValueError``, ``RuntimeError``, ``OSError``), so ``except ValueError`` keeps working.

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


@kbert_export("kbert.Error")
class Error(Exception):
    """The base of every error kbert raises for a user to act on; shown by the commands as one line.

    The message is the one line a user reads; the keywords keep what it names as attributes (None
    where they do not apply), for code that handles the error.

    Args:
      *args: the message.
      file: the file the problem is in (path or name).
      line: its 1-based line.
      record: a record that lines do not identify (``question id 56be...``, ``data[3]``).
      field: the column, key or setting that is wrong.
      option: the option, as its dataclass field is named (``seq_length`` for ``--seq-length``).
      value: the value found.

    Examples:
        >>> import kbert
        >>> error = kbert.OptionsError("--seq-length 600 exceeds 512", option="seq_length", value=600)
        >>> isinstance(error, kbert.Error), error.option, error.value, error.file
        (True, 'seq_length', 600, None)
    """

    file = None
    line = None
    record = None
    field = None
    option = None
    value = None
    exit_status = 1

    def __init__(self, *args, file=None, line: int | None = None, record: str | None = None,
                 field: str | None = None, option: str | None = None, value=_MISSING):
        super().__init__(*args)
        where = {"file": None if file is None else os.fspath(file), "line": line, "record": record, "field": field,
                 "option": option}
        for name, given in where.items():
            if given is not None:
                setattr(self, name, given)
        if value is not _MISSING:
            self.value = value


@kbert_export("kbert.DataError")
class DataError(Error, ValueError):
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
        # One line whatever the file holds: a header or field with a bare CR (read into ``expected``
        # by the callers that name the columns) would otherwise break it.
        super().__init__(message.replace("\r", "\\r").replace("\n", "\\n"))


@kbert_export("kbert.OptionsError")
class OptionsError(Error, ValueError):
    """An option that cannot work (a missing required option, a value out of range, one the current
    backend cannot run, one that does not apply to the task); the message names the option and its
    value, and ``option`` holds its name as the dataclass field spells it (``seq_length``).

    Examples:
        >>> import kbert
        >>> kbert.FinetuneOptions(task="csv", init="runs/tiny", model_dir="runs/out", batch_size=0)
        Traceback (most recent call last):
        ...
        kbert.errors.OptionsError: ...
    """



@kbert_export("kbert.MissingExtra")
class MissingExtra(Error, ImportError):
    """An optional part of kbert whose packages are not installed; the message names the extra to
    install (``pip install 'kbert[ja]'``), kept as ``extra``.

    Args:
      message: the one line a user reads, naming the extra.
      extra: the extra's name (``ja``, ``onnx``, ``explore``, ``zh``).
      name: the module that could not be imported.

    Examples:
        >>> import kbert
        >>> error = kbert.MissingExtra("the ONNX export needs the onnx extra: pip install 'kbert[onnx]'", extra="onnx")
        >>> error.extra, isinstance(error, ImportError)
        ('onnx', True)
    """

    def __init__(self, message: str, *, extra: str, name: str | None = None):
        super().__init__(message)
        self.extra = extra
        self.name = name  # the module that is missing (ImportError's attribute)


@kbert_export("kbert.tasks.TaskModelError")
class TaskModelError(Error, ValueError):
    """A task model directory or setting that does not fit: names the file, field and value.

    Examples:
        >>> import kbert
        >>> kbert.load_task_model(kbert.random_model_dir("runs/tiny"))
        Traceback (most recent call last):
        ...
        kbert.errors.TaskModelError: runs/tiny/kbert.json has no 'task' object: runs/tiny is not a fine-tuned task model
    """


class TrainingStopped(Error):
    """Training stopped on request (SIGTERM) after writing a checkpoint at ``step``; running the same
    training again resumes from it. Commands exit with ``exit_status`` (128 + SIGTERM)."""

    exit_status = 143

    def __init__(self, step: int, checkpoint: str | None = None):
        self.step = step
        self.checkpoint = checkpoint
        super().__init__(f"stopped by SIGTERM at step {step}; rerun the same command to resume")
