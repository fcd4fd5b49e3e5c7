"""python -m kbert.bench finetune: the same rows for every contender, the command kbert runs, the row
it makes of kbert's eval_results.json, the rates of the table from the seconds the contenders report,
and the refusals. The contenders themselves are faked here (each is a fine-tuning run in a process
of its own); tests/tasks/core/test_options.py checks the flags it shares with kbert.finetune."""

import json
import pathlib
import sys

import pytest

from conftest import SHARED
from kbert.bench import finetune_bench as bench


def _glue_sst2(folder, train_rows=20, dev_rows=5):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.tsv").write_text("sentence\tlabel\n" + "".join(f"train sentence {i}\t{i % 2}\n"
                                                                      for i in range(train_rows)))
    (folder / "dev.tsv").write_text("sentence\tlabel\n" + "".join(f"dev sentence {i}\t{(i + 1) % 2}\n"
                                                                    for i in range(dev_rows)))
    return folder


def _args(*argv):
    return bench.parse_args(list(argv))


def test_every_contender_gets_the_rows_kbert_reads(tmp_path):
    from kbert.data.glue import read_glue
    from kbert.tasks.core.task_type import subsample

    glue = _glue_sst2(tmp_path / "SST-2")
    args = _args("--data-dir", str(glue), "--train-examples", "7", "--seed", "3")
    data = json.loads(bench._write_subset(args, tmp_path).read_text())
    # kbert.finetune --max-train-examples 7 --seed 3 draws these rows (kbert.tasks.core.task_type.subsample)
    rows, _ = subsample(read_glue("sst2", "train", glue).examples, 7, 3)
    assert data["train"] == [[e["text_a"], e["label"]] for e in rows]
    assert len({text for text, _ in data["train"]}) == 7
    assert all(label == int(text.split()[-1]) % 2 for text, label in data["train"])  # as written above
    assert data["dev"] == [[f"dev sentence {i}", (i + 1) % 2] for i in range(5)] and data["num_labels"] == 2
    assert bench._peer_data({"data": str(tmp_path / "data.json")}) == (data["train"], data["dev"], 2)
    # more examples asked than there are: all of them, in file order
    data = json.loads(bench._write_subset(_args("--data-dir", str(glue), "--train-examples", "99"), tmp_path)
                      .read_text())
    assert [text for text, _ in data["train"]] == [f"train sentence {i}" for i in range(20)]


def test_a_pair_or_regression_task_is_refused():
    for task in ("MRPC", "STS-B"):
        args = _args("--task", f"glue/{task.lower().replace('-', '')}", "--data-dir", str(SHARED / "glue" / task))
        with pytest.raises(SystemExit, match=f"error: the finetune bench takes a single-text classification task, "
                                             f"not {args.task}"):
            bench._write_subset(args, pathlib.Path("/nonexistent"))


def test_peers_by_name_or_what_is_installed(monkeypatch):
    assert bench._peers("keras-hub, kbert") == ["keras-hub", "kbert"]
    with pytest.raises(SystemExit, match=r"error: unknown peers \['hf', 'torch'\]; expected kbert, transformers, "
                                         r"keras-hub"):
        bench._peers("kbert,torch,hf")
    import importlib.util

    found = {"torch": True, "transformers": True}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if found.get(name) else None)
    assert bench._peers("auto") == ["kbert", "transformers"]
    found["torch"] = False
    assert bench._peers("auto") == ["kbert", "keras-hub"]


def test_kbert_runs_kbert_finetune_on_the_same_rows_and_reports_its_times(monkeypatch, tmp_path):
    calls = []

    def fake_call(command, log_path):
        calls.append((command, log_path))
        model_dir = pathlib.Path(command[command.index("--model-dir") + 1])
        model_dir.mkdir()
        (model_dir / "eval_results.json").write_text(json.dumps({
            "history": [{"accuracy": 0.5}, {"accuracy": 0.75}], "train_seconds": 10.0, "prepare_seconds": 2.5,
            "train_cpu_seconds": 18.0, "prepare_cpu_seconds": 3.0, "train_examples": 40}))

    monkeypatch.setattr(bench, "_call", fake_call)
    args = _args("--data-dir", "glue-dir", "--train-examples", "40", "--epochs", "2", "--batch-size", "8",
                 "--learning-rate", "1e-4", "--seq-length", "64", "--seed", "5")
    row = bench._run_kbert(args, "init-dir", tmp_path, "fixed")
    # the last epoch's accuracy; the tokenizer pass that measures lengths counts as training time
    assert row == {"name": "kbert (fixed)", "dev_accuracy": 0.75, "train_seconds": 12.5, "train_cpu_seconds": 21.0,
                   "train_examples": 80}
    command, log = calls[0]
    assert command[:3] == [sys.executable, "-m", "kbert.finetune"] and log == tmp_path / "kbert_fixed.log"
    flags = dict(zip(command[3:-3:2], command[4:-3:2]))
    assert flags == {"--task": "glue/sst2", "--data-dir": "glue-dir", "--init": "init-dir",
                     "--model-dir": str(tmp_path / "kbert_fixed"), "--max-train-examples": "40", "--epochs": "2",
                     "--batch-size": "8", "--learning-rate": "0.0001", "--seq-length": "64", "--seed": "5"}
    assert command[-3:] == ["--quiet", "--no-bucketing", "--fixed-length"]


def test_a_peer_gets_the_runs_settings_in_its_spec(monkeypatch, tmp_path):
    def fake_call(command, log_path):
        assert command[:2] == [sys.executable, str(pathlib.Path(bench.__file__).resolve())]
        assert command[2:4] == ["--peer", "transformers"]
        spec = json.loads(pathlib.Path(command[4]).read_text())
        pathlib.Path(spec["result"]).write_text(json.dumps({"spec": spec}))

    monkeypatch.setattr(bench, "_call", fake_call)
    args = _args("--hf-dir", "hf", "--epochs", "3", "--batch-size", "4", "--seq-length", "32", "--hf-group-by-length")
    spec = bench._run_peer(args, "transformers", tmp_path / "data.json", tmp_path)["spec"]
    assert spec == {"data": str(tmp_path / "data.json"), "hf_dir": "hf", "epochs": 3, "batch_size": 4,
                    "learning_rate": args.learning_rate, "seq_length": 32, "seed": 0, "group_by_length": True,
                    "result": str(tmp_path / "transformers.json")}


def test_a_failed_contender_stops_the_bench_with_its_log(tmp_path):
    log = tmp_path / "x.log"
    with pytest.raises(SystemExit) as e:
        bench._call([sys.executable, "-c", "print('out of memory'); raise SystemExit(3)"], log)
    assert str(e.value).startswith(f"error: {sys.executable} -c print('out of memory'); raise SystemExit(3) ... "
                                   f"failed (exit 3); log {log}:\n")
    assert str(e.value).endswith("out of memory\n") and log.read_text() == "out of memory\n"
    bench._call([sys.executable, "-c", "pass"], log)  # exit 0: nothing to say


def test_the_table_rates_are_examples_over_the_seconds_each_contender_reports(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(bench, "_write_subset", lambda args, out: out / "data.json")
    monkeypatch.setattr(bench, "_run_kbert", lambda args, init, out, mode: {
        "name": f"kbert ({mode})", "dev_accuracy": 0.875, "train_seconds": 8.0, "train_cpu_seconds": 12.0,
        "train_examples": 100})
    monkeypatch.setattr(bench, "_run_peer", lambda args, name, data, out: {
        "name": f"{name} 1.0", "dev_accuracy": 0.8125, "train_seconds": 30.0, "train_cpu_seconds": 45.0,
        "train_examples": 100})
    out = tmp_path / "bench"
    assert bench.main(["--init", "given", "--peers", "kbert,transformers", "--kbert-modes", "bucketed,trimmed",
                       "--out", str(out), "--train-examples", "100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = lines[lines.index(f"{'contender':<44}{'dev accuracy':>14}{'examples/s':>12}{'per CPU-s':>11}") + 1:]
    # 100 / 8 = 12.5 and 100 / 12 = 8.3 examples per (CPU) second; 100 / 30, 100 / 45
    assert [ln.split() for ln in table] == [["kbert", "(bucketed)", "0.8750", "12.5", "8.3"],
                                            ["kbert", "(trimmed)", "0.8750", "12.5", "8.3"],
                                            ["transformers", "1.0", "0.8125", "3.3", "2.2"]]
    saved = json.loads((out / "bench_results.json").read_text())
    assert [(r["name"], r["examples_per_second"], r["examples_per_cpu_second"]) for r in saved["results"]] == [
        ("kbert (bucketed)", 12.5, 8.3), ("kbert (trimmed)", 12.5, 8.3), ("transformers 1.0", 3.3, 2.2)]
    assert saved["args"]["init"] == "given" and saved["args"]["train_examples"] == 100


def test_an_unknown_kbert_mode_is_refused(monkeypatch, tmp_path):
    def no_run(args, out):
        raise AssertionError("the bench went on to run")

    monkeypatch.setattr(bench, "_write_subset", no_run)
    with pytest.raises(SystemExit, match=r"error: unknown --kbert-modes \['padded'\]; expected \['bucketed', "
                                         r"'trimmed', 'fixed'\]"):
        bench.main(["--kbert-modes", "bucketed,padded", "--peers", "kbert", "--out", str(tmp_path)])
