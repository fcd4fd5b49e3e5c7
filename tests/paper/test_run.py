"""kbert.paper.run: every table at --scale micro end to end (slow: real pre-training and fine-tuning,
one output folder shared by the six tables, as a user's would be), and a killed run of each table
resuming without redoing its finished cells (fast: the cells' work replaced by a stand-in)."""

import json
import math
import pathlib

import pytest

from conftest import SHARED
from kbert.paper import cells
from kbert.paper.run import PaperOptions, paper_table
from kbert.paper.tables import TABLES

QUIET = dict(log=lambda *a, **k: None)
METRICS = ("accuracy", "f1", "exact_match", "matthews_corrcoef", "spearman")


# -- resume, with the cells' work replaced -------------------------------------------------------------
class Killed(Exception):
    pass


def stand_in(calls: list, kill_after: int | None = None):
    """A cells.execute that records each cell it is asked to do and returns made-up results (from
    the key); with ``kill_after``, the next cell after that many raises Killed."""
    def execute(work, cell_dir):
        if kill_after is not None and len(calls) >= kill_after:
            raise Killed(cell_dir.name)
        calls.append(cell_dir.name)
        value = int(cell_dir.name[-4:], 16) % 997 / 1000
        kind = cell_dir.name.split("-")[0]
        if kind == "data":
            return {"vocab_size": 100, "vocab": "vocab.txt", "train_data": "t", "eval_data": "e"}
        if kind == "pretrain":
            return {"lm_perplexity": 1 + 10 * value}
        return {"best": {m: value for m in METRICS}}
    return execute


def data_options(table, out, **extra):
    return PaperOptions(table=table, out=str(out), glue_dir=str(SHARED / "glue"), conll_dir=str(SHARED / "conll2003"),
                        squad_dir=str(SHARED / "squad"), **extra)


def comparable(table: dict) -> dict:
    """The table as its JSON file holds it (tuples as lists), less what says when and where it ran."""
    return {k: v for k, v in json.loads(json.dumps(table)).items() if k not in ("budget", "files")}


@pytest.mark.parametrize("name", list(TABLES))
def test_a_killed_table_run_resumes_where_it_stopped(tmp_path, monkeypatch, name):
    whole = []
    monkeypatch.setattr(cells, "execute", stand_in(whole))
    reference = paper_table(data_options(name, tmp_path / "whole", seeds=2), **QUIET)
    assert len(whole) == len(set(whole)) >= 2
    first, second = [], []
    monkeypatch.setattr(cells, "execute", stand_in(first, kill_after=len(whole) // 2))
    with pytest.raises(Killed):
        paper_table(data_options(name, tmp_path / "resumed", seeds=2), **QUIET)
    assert not (tmp_path / "resumed" / f"{name}.json").exists()
    monkeypatch.setattr(cells, "execute", stand_in(second))
    resumed = paper_table(data_options(name, tmp_path / "resumed", seeds=2), **QUIET)
    assert not set(first) & set(second), "a finished cell was done again"
    assert sorted(first + second) == sorted(whole)
    assert comparable(resumed) == comparable(reference)
    assert json.loads((tmp_path / "resumed" / f"{name}.json").read_text())["rows"] == reference["rows"]
    for row in resumed["rows"]:
        for cell, column in zip(row["cells"], TABLES[name].columns):
            if cell["status"] == "ok" and column.task != "lm_perplexity":
                assert len(cell["values"]) == 2  # one per seed
            assert cell["status"] in ("ok", "no data")


def test_tables_in_one_folder_share_their_pretraining(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(cells, "execute", stand_in(calls))
    for name in ("table1", "table6", "table8"):
        paper_table(data_options(name, tmp_path), **QUIET)
    pretrained = [c for c in calls if c.startswith("pretrain")]
    # table1: Base, Large; table6: four more sizes (its 12/768/12 is Base, 24/1024/16 Large);
    # table8: five more maskings (80/10/10 is Base)
    assert len(pretrained) == len(set(pretrained)) == 2 + 4 + 5


def test_a_table_without_its_data_says_which_flag():
    from kbert.errors import OptionsError

    with pytest.raises(OptionsError, match="--conll-dir"):
        paper_table(PaperOptions(table="table7", out="runs/paper-none"), **QUIET)
    with pytest.raises(OptionsError, match="seeds"):
        PaperOptions(table="table7", out="runs/x", seeds=0)
    with pytest.raises(OptionsError, match="table9"):
        PaperOptions(table="table9", out="runs/x")


# -- end to end at micro scale --------------------------------------------------------------------------
# Within the CI budget: a GLUE folder with MRPC only, and none for Tables 6 and 8 (Table 6 then
# runs its LM-perplexity column alone; both pre-train all their rows).
NO_GLUE = ("table6", "table8")


def micro_options(micro_out, name) -> PaperOptions:
    return PaperOptions(table=name, out=str(micro_out / "out"), scale="micro",
                        glue_dir=None if name in NO_GLUE else str(micro_out / "glue"),
                        conll_dir=str(SHARED / "conll2003"), squad_dir=str(SHARED / "squad"))


@pytest.fixture(scope="module")
def micro_out(tmp_path_factory):
    """One output folder for the six tables, and a GLUE folder with MRPC only."""
    root = tmp_path_factory.mktemp("paper")
    (root / "glue").mkdir()
    (root / "glue" / "MRPC").symlink_to(SHARED / "glue" / "MRPC")
    return root


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TABLES))
def test_table_end_to_end_at_micro_scale(micro_out, name):
    table = paper_table(micro_options(micro_out, name), **QUIET)
    out = micro_out / "out"
    for suffix in ("md", "json", "png"):
        assert (out / f"{name}.{suffix}").stat().st_size > 0
    assert json.loads((out / f"{name}.json").read_text())["rows"] == table["rows"]
    md = (out / f"{name}.md").read_text()
    spec = TABLES[name]
    assert len([line for line in md.splitlines() if line.startswith("| ")]) == 1 + len(spec.rows)
    for row, spec_row in zip(table["rows"], spec.rows):
        for cell, column, paper in zip(row["cells"], spec.columns, spec_row.paper):
            assert cell["paper"] == paper
            glue = column.data.startswith("glue/")
            expected = "no data" if glue and (column.data != "glue/MRPC" or name in NO_GLUE) else "ok"
            assert cell["status"] == expected, (row["label"], column.label, cell)
            if expected == "ok":
                check_against_the_cell_files(out, cell, column)


def check_against_the_cell_files(out: pathlib.Path, cell: dict, column) -> None:
    """The table's number equals the one in the run's own files (read back here)."""
    if column.task == "lm_perplexity":
        stored = [json.loads(p.read_text()) for p in out.glob("cells/pretrain-*/model/pretrain_results.json")]
        # (a left-to-right run of Table 5 in the same folder has an LM loss, no masked-LM one)
        assert any(math.isclose(cell["values"][0], math.exp(r["eval_mlm_loss"])) for r in stored if "eval_mlm_loss" in r)
        return
    scale = 1 if column.task.startswith("squad") else 100
    stored = [json.loads(p.read_text()) for p in out.glob("cells/finetune-*/model/eval_results.json")]
    assert any(r["task"] == column.task and math.isclose(cell["values"][0], scale * r["best"][column.metric])
               for r in stored)
    assert 0 <= cell["values"][0] <= 100


@pytest.mark.slow
def test_tables_rerun_from_their_cells(micro_out, monkeypatch):
    """After the six tables: each again from the same folder trains nothing and gives the same table."""
    def refuse(work, cell_dir):
        raise AssertionError(f"cell {cell_dir.name} done again")

    monkeypatch.setattr(cells, "execute", refuse)
    for name in TABLES:
        before = json.loads((micro_out / "out" / f"{name}.json").read_text())
        assert comparable(paper_table(micro_options(micro_out, name), **QUIET)) == comparable(before)
