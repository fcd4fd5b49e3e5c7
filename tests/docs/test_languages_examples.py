"""The Korean and Russian fine-tuning examples of docs/languages.md, as written there, on BERT-Tiny for
a few steps: the data commands build the JSONL files, fine-tuning writes a model whose dev accuracy is
the one its own predictions give, and `kbert predict` reloads it and answers with the file's labels."""

import json
import os
import shlex
import subprocess

import pytest

from conftest import REPO, SHARED
from fixtures.readme_scratch import user_bin
from fixtures.docs_commands import readme_commands

DOC = REPO / "docs" / "languages.md"
FAST = ["--max-train-examples", "64", "--batch-size", "16", "--learning-rate", "1e-3",
        "--seq-length", "32", "--quiet"]


def _commands(prefix):
    commands = [c for c in readme_commands(DOC.read_text(encoding="utf-8")) if f"runs/{prefix}" in c]
    assert commands, f"docs/languages.md has no command for runs/{prefix}"
    return commands


@pytest.mark.slow
@pytest.mark.parametrize("prefix, labels", [("ko_", {"da-ending", "other"}), ("ru_", {"masculine", "feminine"})])
def test_the_documented_example_trains_and_its_model_predicts(tmp_path, monkeypatch, tiny_model_dir, prefix, labels):
    from kbert.commands.finetune import main as finetune
    from kbert.commands.predict import main as predict
    from kbert.tasks import load_task_model

    (tmp_path / "runs").mkdir()
    monkeypatch.chdir(tmp_path)
    model_dir = None
    for command in _commands(prefix):
        command = command.replace("../shared/data", str(SHARED))
        if command.startswith("python -m kbert.finetune "):
            argv = shlex.split(command)[3:]
            argv[argv.index("--init") + 1] = str(tiny_model_dir)
            model_dir = tmp_path / argv[argv.index("--model-dir") + 1]
            eval_file = tmp_path / argv[argv.index("--eval-file") + 1]
            finetune(argv + FAST)
        elif command.startswith("python -m kbert.predict "):
            assert predict(shlex.split(command)[3:]) == 0
            output = tmp_path / shlex.split(command)[shlex.split(command).index("--output") + 1]
        else:
            env = {**os.environ, "PATH": f"{user_bin(tmp_path / 'bin')}{os.pathsep}{os.environ.get('PATH', '')}"}
            result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120, env=env)
            assert result.returncode == 0, (command, result.stderr)

    gold = [json.loads(line)["label"] for line in eval_file.read_text(encoding="utf-8").splitlines()]
    assert set(gold) == labels
    results = json.loads((model_dir / "eval_results.json").read_text())
    [predictions] = results["predictions"]  # the whole dev file's, one row each: index (0-based), prediction
    rows = [line.split("\t") for line in (tmp_path / predictions).read_text(encoding="utf-8").splitlines()[1:]]
    assert [int(i) for i, _ in rows] == list(range(len(gold)))
    assert {label for _, label in rows} <= labels
    accuracy = sum(g == label for g, (_, label) in zip(gold, rows)) / len(gold)
    assert results["best"]["accuracy"] == pytest.approx(accuracy)
    # the model reloads, and kbert predict answered every unlabelled row with one of the labels
    assert load_task_model(model_dir) is not None
    answers = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [a["id"] for a in answers] == ["1", "2"] and {a["label"] for a in answers} <= labels
