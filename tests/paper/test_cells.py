"""kbert.paper.cells: a cell's key is its content; a finished cell is not done again; a failed one is."""

import json

import pytest

from kbert.paper import cells


def test_key_is_the_content_whatever_the_order():
    assert cells.cell_key("pretrain", {"a": 1, "b": [1, 2]}) == cells.cell_key("pretrain", {"b": [1, 2], "a": 1})
    assert cells.cell_key("pretrain", {"a": 1}) != cells.cell_key("pretrain", {"a": 2})
    assert cells.cell_key("pretrain", {"a": 1}) != cells.cell_key("finetune", {"a": 1})


def test_a_finished_cell_is_read_back_and_a_failed_one_done_again(tmp_path):
    calls = []

    def work(cell_dir):
        calls.append(cell_dir)
        if len(calls) == 1:
            raise RuntimeError("killed")
        return {"value": 3}

    quiet = dict(log=lambda *a, **k: None)
    with pytest.raises(RuntimeError):
        cells.run_cell(tmp_path, "x", {"n": 1}, work, **quiet)
    key, result = cells.run_cell(tmp_path, "x", {"n": 1}, work, **quiet)
    assert result == {"value": 3} and len(calls) == 2
    assert cells.run_cell(tmp_path, "x", {"n": 1}, work, **quiet) == (key, result) and len(calls) == 2
    stored = tmp_path / "cells" / key
    assert json.loads((stored / "result.json").read_text()) == result
    assert json.loads((stored / "spec.json").read_text()) == {"n": 1}
    assert [p.name for p in stored.iterdir() if p.name.startswith(".")] == []  # no temporary file left
