"""kbert paper TABLE: the flags reach kbert.PaperOptions, the three files are written and named, a
table without its data or a wrong flag is one line with status 1. The cells' work is replaced by a
stand-in here (tests/paper/test_run.py trains them for real)."""

import json
import subprocess
import sys

from conftest import REPO, SHARED
from fixtures.cli import run_command
from kbert.paper import cells


def test_the_command_writes_the_table_from_its_flags(tmp_path, monkeypatch):
    seen = []

    def execute(work, cell_dir):
        seen.append(cell_dir.name)
        kind = cell_dir.name.split("-")[0]
        if kind == "data":
            return {"vocab_size": 100, "vocab": "vocab.txt", "train_data": "t", "eval_data": "e"}
        return {"lm_perplexity": 2.0} if kind == "pretrain" else {"best": {"exact_match": 40.0, "f1": 50.0}}

    monkeypatch.setattr(cells, "execute", execute)
    result = run_command("paper", "table2", "--scale", "micro", "--out", tmp_path / "out", "--squad-dir",
                         SHARED / "squad", "--seeds", "2")
    assert result.status == 0, result.err[-2000:]
    table = json.loads((tmp_path / "out" / "table2.json").read_text())
    assert [line.split(" ", 1)[1] for line in result.out.splitlines() if line.startswith("wrote ")] == \
        list(table["files"].values())
    assert table["budget"]["seeds"] == 2 and table["scale"]["name"] == "micro"
    assert [c["values"] for c in table["rows"][0]["cells"]] == [[40.0, 40.0], [50.0, 50.0]]
    specs = [json.loads((tmp_path / "out" / "cells" / name / "spec.json").read_text()) for name in seen
             if name.startswith("finetune")]
    assert {s["options"]["seq_length"] for s in specs} == {64} and {s["seed"] for s in specs} == {0, 1}


def test_wrong_lines_are_one_line_errors(tmp_path):
    result = run_command("paper", "table7", "--out", tmp_path / "out")
    assert result.status == 1 and "--conll-dir" in result.err and len(result.err.strip().splitlines()) == 1
    result = run_command("paper", "table7", "--out", tmp_path / "out", "--scale", "huge")
    assert result.status == 1 and "huge" in result.err
    result = run_command("paper", "table7", "--out", tmp_path / "out", "--conll-dir", tmp_path / "nowhere")
    assert result.status == 1 and "nowhere" in result.err


def test_python_dash_m_kbert_paper_is_the_command():
    done = subprocess.run([sys.executable, "-m", "kbert.paper", "--help"], cwd=REPO, capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and "table5" in done.stdout and "--glue-dir" in done.stdout
