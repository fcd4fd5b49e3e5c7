"""The command lines a new user meets first (issue 19): ``kbert`` and ``python -m kbert.X`` answer
--help fast without importing TensorFlow, user errors are one line (no traceback), start-up noise
is filtered (``--verbose`` shows it), pre-training shows one progress display and evaluates the
same checkpoint to the same numbers."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import PRETRAIN_RUN_STEPS, REPO, SHARED, UNCASED_VOCAB
from kbert import cli

MODULE_COMMANDS = ["kbert", "kbert.pretrain", "kbert.finetune", "kbert.export", "kbert.convert", "kbert.vocab",
                   "kbert.features", "kbert.paper", "kbert.bench", "pipelines.pretraining_data", "pipelines.task_data"]
# What a user reads as an error although nothing is wrong (issue 19 §5).
NOISE = ("absl::InitializeLog", "cuInit", "cuda_platform", "oneDNN custom operations", "cpu_feature_guard",
         "rebuild TensorFlow", "apitools not found", "python-snappy or google-crc32c",
         "shuffle=True` was passed", "Your input ran out of data", "Traceback")


def _run(args, timeout=600, **kwargs):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # as a user's shell has it
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=timeout, **kwargs)


def _imports_tensorflow(importtime_stderr: str) -> bool:
    return re.search(r"\|\s+tensorflow(\.|$)", importtime_stderr, re.M) is not None


@pytest.mark.parametrize("module", MODULE_COMMANDS)
def test_help_imports_no_tensorflow(module):
    # What keeps --help fast (under a second, against several for importing TensorFlow) is that it
    # imports no TensorFlow: asserted from the interpreter's import log, not from a clock, which
    # a busy machine would make fail.
    result = _run(["-X", "importtime", "-m", module, "--help"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage:" in result.stdout.lower()
    assert not _imports_tensorflow(result.stderr), f"{module} --help imported TensorFlow"


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_every_subcommand_answers_help_or_says_it_is_missing(name):
    result = _run(["-X", "importtime", "-m", "kbert", name, "--help"])
    module = cli.COMMANDS[name][0]
    try:
        __import__(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        assert result.returncode == 1
        assert f"'kbert {name}' is not available in this installation (module {module} not found)" in result.stderr
        return
    assert result.returncode == 0, result.stderr[-2000:]
    assert not _imports_tensorflow(result.stderr), f"kbert {name} --help imported TensorFlow"


def test_kbert_lists_every_command_in_one_screen():
    result = _run(["-m", "kbert", "--help"])
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert len(lines) <= 24 and max(map(len, lines)) <= 100
    for name in ("pretrain", "finetune", "predict", "export", "convert", "vocab", "tokenize", "features",
                 "explore", "bench"):
        assert any(line.split()[:1] == [name] for line in lines), name
    unknown = _run(["-m", "kbert", "nonsense"])
    assert unknown.returncode == 1 and unknown.stderr.startswith("kbert: error: unknown command 'nonsense'")
    assert len(unknown.stderr.strip().splitlines()) == 1, unknown.stderr


@pytest.mark.slow
def test_a_missing_directory_is_one_line_saying_it_does_not_exist(tmp_path):
    missing = tmp_path / "runs" / "sst2" / "model"
    for args in (["-m", "kbert.export", "task", str(missing), str(tmp_path / "out" / "1")],
                 ["-m", "kbert", "export", "encoder", str(missing), str(tmp_path / "out" / "1")]):
        result = _run(args)
        assert result.returncode == 1
        assert result.stderr.strip() == f"kbert export: error: model directory {missing} does not exist"
    verbose = _run(["-m", "kbert.export", "task", str(missing), str(tmp_path / "o"), "--verbose"])
    assert verbose.returncode == 1 and "Traceback" in verbose.stderr
    assert f"kbert export: error: model directory {missing} does not exist" in verbose.stderr
    usage = _run(["-m", "kbert.export", "task"])
    assert usage.returncode == 1 and usage.stderr.startswith("kbert export task: error: the following arguments are required")
    assert len(usage.stderr.strip().splitlines()) == 1, usage.stderr  # one line, not the usage text


@pytest.mark.slow
def test_start_up_noise_is_filtered_and_verbose_shows_it(tmp_path):
    quiet = _run(["-m", "kbert.export", "preprocessor", str(UNCASED_VOCAB), str(tmp_path / "pre"),
                  "--seq-length", "16"])
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert quiet.stderr == "", quiet.stderr[-3000:]
    loud = _run(["-m", "kbert.export", "preprocessor", str(UNCASED_VOCAB), str(tmp_path / "pre2"),
                 "--seq-length", "16", "--verbose"])
    assert loud.returncode == 0
    assert any(n in loud.stderr for n in NOISE), loud.stderr[-3000:]  # the lines quiet mode drops
    # A Beam pipeline: its progress lines only.
    beam = _run(["-m", "pipelines.pretraining_data", "--input",
                 str(SHARED / "corpus" / "en" / "nltk_gutenberg" / "blake-poems.txt"), "--output",
                 str(tmp_path / "records"), "--vocab", str(UNCASED_VOCAB), "--format", "prose",
                 "--num-shards", "1", "--doc-sentences", "8"])
    assert beam.returncode == 0, beam.stderr[-3000:]
    assert not [n for n in NOISE if n in beam.stderr], beam.stderr[-3000:]
    assert re.search(r"^pretraining_data: read .*blake-poems\.txt: \d+ documents$", beam.stderr, re.M)
    assert all(line.startswith("pretraining_data: ") for line in beam.stderr.splitlines()), beam.stderr


@pytest.mark.slow
def test_pretraining_is_quiet_shows_one_progress_display_and_evaluates_repeatably(tmp_path, pretrain_run):
    # conftest.pretrain_run: python -m kbert.pretrain run in a user's environment (as _run does), 150
    # steps in two checkpoint intervals (two Keras epochs), evaluated on held-out records.
    first = pretrain_run
    assert not [n for n in NOISE if n in first.stderr + first.stdout], first.stderr[-3000:]
    # Not a terminal: progress lines of the whole run (both intervals), no per-epoch "Epoch 1/2" bars.
    assert "Epoch 1/" not in first.stdout
    steps = PRETRAIN_RUN_STEPS
    assert re.search(rf"^step {steps}/{steps} \(100%\)\s+[\d.]+ steps/s\s+took \d+s\s+loss [\d.]+", first.stdout,
                     re.M), first.stdout
    results = json.loads((first.model_dir / "pretrain_results.json").read_text())
    # The same command on (a copy of) the finished checkpoint: no training, the same held-out numbers.
    model_dir = tmp_path / "m"
    shutil.copytree(first.model_dir, model_dir)
    (model_dir / "pretrain_results.json").unlink()
    second = _run(first.command(model_dir)[1:])
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"resuming from step {steps}" in second.stdout and f"step {steps}/{steps}" not in second.stdout, \
        second.stdout
    again = json.loads((model_dir / "pretrain_results.json").read_text())
    evals = {k: v for k, v in results.items() if k.startswith("eval_")}
    assert evals and {k: again[k] for k in evals} == evals
