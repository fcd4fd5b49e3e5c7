"""Every subcommand (and each of its own subcommands) follows kbert's command-line conventions:
a wrong flag is one line ``kbert COMMAND: error: ...`` with exit status 1 (not argparse's usage text
and status 2), and ``--help`` lists ``--verbose``."""

import subprocess
import sys

import pytest

from conftest import REPO

# (argv after `python -m kbert`, the program name the error line starts with)
COMMANDS = [
    (["pretrain"], "kbert pretrain"),
    (["pretrain", "--demo", "ja"], "kbert pretrain --demo ja"),
    (["finetune"], "kbert finetune"),
    (["predict"], "kbert predict"),
    (["export"], "kbert export"),
    (["export", "encoder"], "kbert export encoder"),
    (["export", "preprocessor"], "kbert export preprocessor"),
    (["export", "task"], "kbert export task"),
    (["export", "onnx"], "kbert export onnx"),
    (["convert"], "kbert convert"),
    (["convert", "hf"], "kbert convert hf"),
    (["convert", "google"], "kbert convert google"),
    (["convert", "to-google"], "kbert convert to-google"),
    (["vocab"], "kbert vocab"),
    (["tokenize"], "kbert tokenize"),
    (["features"], "kbert features"),
    (["explore"], "kbert explore"),
    (["explore", "fill-mask"], "kbert explore fill-mask"),
    (["explore", "next-sentence"], "kbert explore next-sentence"),
    (["explore", "attention"], "kbert explore attention"),
    (["explore", "workshop-data"], "kbert explore workshop-data"),
    (["explore", "workshop-score"], "kbert explore workshop-score"),
    (["paper"], "kbert paper"),
    (["bench"], "kbert bench"),
    *[(["bench", name], f"kbert bench {name}")
      for name in ("encoder", "train", "tokenize", "pipeline", "serve", "finetune", "pretrain")],
]


def _kbert(capsys, *argv):
    """(exit status, stdout, stderr) of ``kbert ARGV`` in this process: the command's own main, as
    ``kbert`` runs it (a wrong flag or --help ends in argparse, before any TensorFlow import)."""
    from kbert.cli import load_main

    capsys.readouterr()
    try:
        status = load_main(argv[0])(list(argv[1:]))
    except SystemExit as e:
        status = e.code
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.mark.parametrize("argv,prog", COMMANDS, ids=[" ".join(a) for a, _ in COMMANDS])
def test_a_wrong_flag_is_one_error_line_and_exit_status_1(argv, prog, capsys):
    status, _, err = _kbert(capsys, *argv, "--no-such-flag")
    assert status == 1, (status, err)
    lines = err.strip().splitlines()
    # argparse reports an unknown flag from the parser that parsed the line: the command's or its parent's
    assert len(lines) == 1 and lines[0].startswith((f"{prog}: error: ", f"{prog.rsplit(' ', 1)[0]}: error: ")), err


@pytest.mark.parametrize("argv,prog", COMMANDS, ids=[" ".join(a) for a, _ in COMMANDS])
def test_help_lists_verbose(argv, prog, capsys):
    status, out, err = _kbert(capsys, *argv, "--help")
    assert status in (0, None), err
    assert "--verbose" in out, out


def test_a_wrong_flag_through_the_kbert_command_exits_1():
    """The same through the installed entry point (kbert.cli + cli_support.run), in a process of its own."""
    result = subprocess.run([sys.executable, "-m", "kbert", "tokenize", "--no-such-flag"], capture_output=True,
                            text=True, timeout=300, cwd=REPO)
    assert result.returncode == 1
    assert result.stderr.strip().startswith("kbert tokenize: error: ") and len(result.stderr.strip().splitlines()) == 1
