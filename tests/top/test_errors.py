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


# -- the family ------------------------------------------------------------------------------------
# Constructor arguments (positional, keywords) of the errors whose constructor is not (message); every
# other takes one message.
SPECIAL_ARGUMENTS = {
    "DataError": (("rows.tsv", "0 or 1"), {}),
    "CorruptRecordError": (("train-0.tfrecord", 3, 120, 400), {}),
    "TrainingStopped": ((40, "runs/m/checkpoints/ckpt-40"), {}),
    "MissingExtra": (("the ONNX export needs the onnx extra: pip install 'kbert[onnx]'",), {"extra": "onnx"}),
}


def kbert_modules() -> list:
    """Every module of kbert/ and pipelines/ that imports here (an extra's may be missing)."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    return [".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
            for package in ("kbert", "pipelines") for p in sorted((root / package).rglob("*.py"))
            if p.name != "__main__.py"]


def exception_classes_defined_in_kbert() -> list:
    """(qualified name, class) of every exception class defined in kbert/ and pipelines/."""
    import importlib
    import inspect

    found = {}
    for name in kbert_modules():
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == module.__name__:
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return sorted(found.items())


@pytest.mark.slow
def test_every_exception_kbert_defines_is_a_kbert_error():
    from kbert.errors import Error

    classes = exception_classes_defined_in_kbert()
    assert len(classes) > 20  # the walk found them (it imports every module)
    assert [name for name, cls in classes if not issubclass(cls, Error)] == []


@pytest.mark.slow
def test_each_is_one_line_and_its_exit_status_through_a_command(monkeypatch, capsys):
    from kbert import cli_support

    monkeypatch.setattr(cli_support, "quiet_setup", lambda: None)
    monkeypatch.setattr(cli_support, "_state", dict(cli_support._state))
    for name, cls in exception_classes_defined_in_kbert():
        args, kwargs = SPECIAL_ARGUMENTS.get(cls.__name__, (("the file x.tsv has no column 'label'",), {}))
        error = cls(*args, **kwargs)

        def main(argv, error=error):
            raise error

        assert cli_support.run("finetune", main, []) == error.exit_status, name
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("kbert finetune: error: ") and len(lines[0]) > 24, (name, lines)


def test_a_message_of_several_lines_is_shown_as_one():
    from kbert.cli_support import one_line
    from kbert.errors import TaskModelError

    error = TaskModelError("runs/m/classifier.weights.h5 does not fit:\n  dense/kernel: (128, 3) here, (128, 2) saved\n")
    assert one_line(error) == "runs/m/classifier.weights.h5 does not fit:; dense/kernel: (128, 3) here, (128, 2) saved"


def test_an_options_error_names_its_option():
    from kbert.errors import OptionsError

    error = OptionsError("--seq-length 600 exceeds max_position_embeddings 512", option="seq_length", value=600)
    assert (error.option, error.value, error.file) == ("seq_length", 600, None)


def test_a_data_error_is_one_line_whatever_the_file_holds():
    # Found by the fuzz tier (tests/fuzz/test_tables.py): a TSV header "\rsentence<TAB>label" (a bare CR
    # put first) went into the message's "expected 2 columns (...)" and broke it in two.
    from kbert.data.table import read_table

    with pytest.raises(DataError) as error:
        read_table("table.tsv", "sentence", "label", data=b"\rsentence\tlabel\nr0\tgood\t1\n")
    assert str(error.value) == ("table.tsv, line 2: field 'row with 3 columns': got ['r0', 'good', '1']; "
                                "expected 2 columns (\\rsentence, label)")
