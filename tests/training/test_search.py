"""The paper's fine-tuning protocol (kbert/training/search.py): every learning rate x restart is
trained, the best on dev is kept in the model directory with every run reported, a killed search
resumes without training finished runs again, and one value of each flag is the plain run."""

from __future__ import annotations

import hashlib
import json
import pathlib

import pytest

import kbert
from fixtures.cli import run_command
from kbert.errors import OptionsError
import kbert.training.finetune as finetune_module
from kbert.training.search import SearchOptions, finetune_search


@pytest.fixture(scope="module")
def csv_task(tmp_path_factory):
    root = tmp_path_factory.mktemp("search")
    model_dir = kbert.random_model_dir(root / "tiny")
    rows = ["a good movie,positive", "a bad movie,negative", "good fun,positive", "bad and dull,negative"]
    (root / "train.csv").write_text("text,label\n" + "\n".join(rows * 3) + "\n", encoding="utf-8")
    (root / "dev.csv").write_text("text,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return root, model_dir


def _options(root, model_dir, out, **settings):
    return kbert.FinetuneOptions(task="csv", init=str(model_dir), model_dir=str(out), train_file=str(root / "train.csv"),
                                 eval_file=str(root / "dev.csv"), epochs=1, batch_size=4, seq_length=16,
                                 task_options=kbert.TableOptions(text_columns=("text",)), **settings)


def _digest(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


@pytest.mark.slow
def test_every_run_is_trained_the_best_kept_and_a_killed_search_resumes(csv_task, tmp_path, monkeypatch):
    root, model_dir = csv_task
    out = tmp_path / "out"
    options = _options(root, model_dir, out, seed=7)
    search = SearchOptions(learning_rates=(1e-3, 1e-5), restarts=2)
    results = finetune_search(options, search, progress_bar=False, log=lambda *a, **k: None)

    runs = results["runs"]
    assert [(r["learning_rate"], r["seed"]) for r in runs] == [(1e-3, 7), (1e-3, 8), (1e-5, 7), (1e-5, 8)]
    main = results["main_metric"]
    for run in runs:  # each run's dev metrics are its own directory's best epoch
        own = json.loads((pathlib.Path(run["model_dir"]) / "eval_results.json").read_text())
        assert own["learning_rate"] == run["learning_rate"] and own["best"][main] == run[main]
    values = [r[main] for r in runs]
    assert results["selected"] == values.index(max(values))
    kept = pathlib.Path(runs[results["selected"]]["model_dir"])
    assert results["best"][main] == max(values)
    assert results["spread"]["min"] == min(values) and results["spread"]["max"] == max(values)
    weights = [p.name for p in kept.glob("*.weights.h5")]
    assert weights and all(_digest(out / name) == _digest(kept / name) for name in weights)
    assert json.loads((out / "eval_results.json").read_text())["selected"] == results["selected"]
    assert type(kbert.load_task_model(out)).__name__ == "TextClassifier"

    # A search killed during its third run: that run's directory holds no results yet. The rerun
    # trains that run alone; the finished ones are read back.
    (pathlib.Path(runs[2]["model_dir"]) / "eval_results.json").unlink()
    trained = []
    original = finetune_module.finetune

    def counting(run_options, **kwargs):
        trained.append(run_options.model_dir)
        return original(run_options, **kwargs)

    monkeypatch.setattr(finetune_module, "finetune", counting)
    lines = []
    again = finetune_search(options, search, progress_bar=False, log=lambda line, **k: lines.append(line))
    assert trained == [runs[2]["model_dir"]]
    assert sum("finished before, not trained again" in line for line in lines) == 3
    assert len(again["runs"]) == 4 and [r["seed"] for r in again["runs"]] == [7, 8, 7, 8]


def test_search_options_refuse_what_cannot_run(tmp_path):
    with pytest.raises(OptionsError, match="restarts") as info:
        SearchOptions(restarts=0)
    assert info.value.option == "restarts"
    with pytest.raises(OptionsError, match="learning_rates"):
        SearchOptions(learning_rates=(5e-5, 5e-5))
    with pytest.raises(OptionsError, match="batch_sizes"):
        SearchOptions(batch_sizes=(16, 0))
    options = kbert.FinetuneOptions(task="csv", init=str(tmp_path / "a"), model_dir=str(tmp_path / "b"),
                                    learning_rate=3e-5)
    with pytest.raises(OptionsError, match="given twice") as info:
        finetune_search(options, SearchOptions(learning_rates=(5e-5, 2e-5)))
    assert info.value.option == "learning_rate"


def test_the_grid_is_every_combination_in_order(tmp_path):
    options = kbert.FinetuneOptions(task="csv", init=str(tmp_path / "a"), model_dir=str(tmp_path / "b"), seed=3)
    settings = SearchOptions(learning_rates=(5e-5, 2e-5), batch_sizes=(16, 32), epochs=(2, 3, 4)).settings(options)
    assert len(settings) == 12 and len({tuple(s.values()) for s in settings}) == 12
    assert settings[0] == {"learning_rate": 5e-5, "batch_size": 16, "epochs": 2, "seed": 3}
    assert SearchOptions().settings(options) == [{"learning_rate": options.learning_rate, "batch_size": 32,
                                                   "epochs": 3, "seed": 3}]


@pytest.mark.slow
def test_the_command_runs_a_search_and_one_value_runs_one(csv_task, tmp_path):
    root, model_dir = csv_task
    common = ["--task", "csv", "--init", model_dir, "--train-file", root / "train.csv", "--eval-file", root / "dev.csv",
              "--text-columns", "text", "--epochs", "1", "--batch-size", "4", "--seq-length", "16", "--quiet"]
    grid = run_command("finetune", *common, "--model-dir", tmp_path / "grid", "--learning-rate", "1e-3,1e-5")
    assert grid.status == 0, grid.err[-2000:]
    assert "kept run" in grid.out and "of 2" in grid.out
    assert len(json.loads((tmp_path / "grid" / "eval_results.json").read_text())["runs"]) == 2
    one = run_command("finetune", *common, "--model-dir", tmp_path / "one", "--learning-rate", "3e-5")
    assert one.status == 0, one.err[-2000:]
    results = json.loads((tmp_path / "one" / "eval_results.json").read_text())
    assert "runs" not in results and results["learning_rate"] == 3e-5 and not (tmp_path / "one" / "runs").exists()
    bad = run_command("finetune", *common, "--model-dir", tmp_path / "bad", "--learning-rate", "5e-5,x")
    assert bad.status == 1 and "--learning-rate: expected floats separated by commas, got '5e-5,x'" in bad.err
