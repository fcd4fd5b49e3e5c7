"""kbert.cli_support, the entry every command goes through, called here in this process: ``run`` turns
a user's error into one line ``kbert NAME: error: ...`` and exit status 1 (``--verbose``, taken out of
the arguments wherever it is, adds the traceback), an interrupt into 130, and lets a bug's exception
through; ``is_user_error`` tells them apart by class (``kbert.Error`` or a file-system error); the
commands' parser reports a wrong command line in one line with status 1; a typed options dataclass
becomes flags and the parsed flags become it again. (The start-up noise filter needs a process of its
own: tests/top/test_cli.py.)"""

import argparse
import dataclasses

import pytest

from kbert import cli_support
from kbert.cli_support import is_user_error
from kbert.config import ConfigError
from kbert.errors import DataError
from kbert.options import option


@pytest.fixture
def run(monkeypatch):
    """cli_support.run without its stderr filter (a pipe on fd 2) and with its state restored after."""
    monkeypatch.setattr(cli_support, "quiet_setup", lambda: None)
    monkeypatch.setattr(cli_support, "_state", dict(cli_support._state))
    return cli_support.run


def test_a_users_error_is_one_line_and_status_1(run, capsys, tmp_path):
    def main(argv):
        assert argv == ["--input", "rows.jsonl"]
        raise DataError(tmp_path / "rows.jsonl", "a string", line=2, field="text", value=3)

    assert run("predict", main, ["--input", "rows.jsonl"]) == 1
    assert capsys.readouterr().err == (f"kbert predict: error: {tmp_path / 'rows.jsonl'}, line 2: field 'text': "
                                       "got 3; expected a string\n")
    assert not cli_support.verbose()


def test_verbose_is_taken_out_of_the_arguments_and_adds_the_traceback(run, capsys):
    seen = []

    def main(argv):
        seen.append(argv)
        raise FileNotFoundError(2, "No such file or directory", "runs/none")

    assert run("export", main, ["a", "--verbose", "b"]) == 1
    err = capsys.readouterr().err
    assert seen == [["a", "b"]] and cli_support.verbose()
    assert err.startswith("Traceback") and err.splitlines()[-1] == "kbert export: error: runs/none: does not exist"


def test_interrupts_exits_and_bugs(run, capsys):
    def interrupted(argv):
        raise KeyboardInterrupt

    assert run("finetune", interrupted, []) == 130
    assert capsys.readouterr().err == "kbert finetune: interrupted\n"

    def exits(argv):
        raise SystemExit("error: --steps must be positive")

    assert run("pipelines.pretraining_data", exits, []) == 1  # a module run with python -m: named so
    assert capsys.readouterr().err == "python -m pipelines.pretraining_data: error: --steps must be positive\n"

    def bug(argv):
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):
        run("finetune", bug, [])
    assert run("finetune", lambda argv: None, []) == 0 and run("finetune", lambda argv: 3, []) == 3
    assert capsys.readouterr().err == ""


def _raised(function):
    try:
        function()
    except Exception as e:  # noqa: BLE001 -- returned to be classified
        return e
    raise AssertionError("nothing raised")


def test_a_users_error_is_a_kbert_error_or_a_file_systems_and_nothing_else():
    from kbert.data.tfrecord import encode_example

    assert is_user_error(ConfigError("bad")) and is_user_error(FileNotFoundError(2, "missing"))
    assert is_user_error(DataError("rows.tsv", "0 or 1", line=2))
    # A plain ValueError is a bug wherever it was raised, kbert's own code included (an unknown record
    # kind can only come from kbert's code): it keeps its traceback.
    assert not is_user_error(_raised(lambda: encode_example("ner", {})))
    assert not is_user_error(_raised(lambda: int("x"))) and not is_user_error(ValueError("never raised"))
    assert not is_user_error(RuntimeError("a bug")) and not is_user_error(KeyError("k"))


def test_a_wrong_command_line_is_one_line_and_status_1(capsys):
    parser = cli_support.ArgumentParser(prog="kbert predict")
    parser.add_argument("--steps", type=int)
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--steps", "many"])
    assert info.value.code == 1
    assert capsys.readouterr().err == ("kbert predict: error: argument --steps: invalid int value: 'many' "
                                       "(see kbert predict --help)\n")
    assert "--verbose" in parser.format_help()


@dataclasses.dataclass
class _Options:
    steps: int = option(help="steps to run", type=int)  # no default to take the type from
    name: str = option("run", help="its name")
    shuffle: bool = option(True, help="do not shuffle", flag="--no-shuffle")
    rate: float | None = option(None, help="the learning rate", type=float)


def test_a_dataclass_becomes_flags_and_the_flags_become_it_again(capsys):
    parser = cli_support.add_arguments(argparse.ArgumentParser(), _Options)
    args = parser.parse_args(["--steps", "3", "--no-shuffle", "--rate", "0.5"])
    assert cli_support.from_args(_Options, args) == _Options(steps=3, name="run", shuffle=False, rate=0.5)
    assert cli_support.from_args(_Options, parser.parse_args(["--steps", "1"])) == _Options(steps=1)
    assert "its name (default run)" in " ".join(parser.format_help().split())
    with pytest.raises(SystemExit):  # no default: a required flag
        parser.parse_args([])
    assert "the following arguments are required: --steps" in capsys.readouterr().err
