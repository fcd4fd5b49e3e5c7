"""kbert.paper.report: numbers in, Markdown and JSON out, checked against means and spreads
computed here with numpy."""

import json
import math

import numpy as np
import pytest

from kbert.paper import report
from kbert.paper.scales import SCALES
from kbert.paper.tables import TABLES


def test_markdown_and_json_hold_the_means_and_spreads(tmp_path):
    spec = TABLES["table2"]
    values = [[[81.0, 79.5, 80.25], [88.0, 90.0, 86.5]], [[70.0], []]]
    rows = [{"label": row.label, "size": [2, 48, 12], "paper_size": list(row.size),
             "cells": [{"status": "ok" if v else "no data", "values": v, "paper": p, **({} if v else {"note": "x"})}
                       for v, p in zip(vs, row.paper)]} for row, vs in zip(spec.rows, values)]
    table = report.build_table(spec, SCALES["micro"], rows, {"cells": 3, "cell_seconds": 1.0,
                                                               "this_run_seconds": 1.0, "seeds": 3})
    written = report.write_table(table, tmp_path, log=lambda *a, **k: None)
    loaded = json.loads((tmp_path / "table2.json").read_text())
    assert loaded["files"] == written["files"] and set(written["files"]) <= {"json", "md", "png"}
    cells = [c for row in loaded["rows"] for c in row["cells"]]
    for cell, v in zip(cells, [x for vs in values for x in vs]):
        if len(v) > 1:
            assert cell["mean"] == pytest.approx(np.mean(v)) and cell["spread"] == pytest.approx(np.std(v, ddof=1))
        elif v:
            assert (cell["mean"], cell["spread"]) == (v[0], None)
        else:
            assert (cell["mean"], cell["spread"]) == (None, None)
    md = (tmp_path / "table2.md").read_text()
    base = next(line for line in md.splitlines() if line.startswith("| BERT-Base"))
    assert base.split(" | ")[2:] == [f"{np.mean(values[0][0]):.1f} ± {np.std(values[0][0], ddof=1):.1f} (80.8)",
                                     f"{np.mean(values[0][1]):.1f} ± {np.std(values[0][1], ddof=1):.1f} (88.5) |"]
    large = next(line for line in md.splitlines() if line.startswith("| BERT-Large"))
    assert large.endswith("| 70.0 (84.1) | no data (90.9) |")
    assert "BERT-Large, SQuAD F1: x" in md and "## Budget" in md


def test_summarize_edge_cases():
    assert report.summarize([]) == (None, None)
    mean, spread = report.summarize([1.0, 2.0])
    assert mean == 1.5 and math.isclose(spread, math.sqrt(0.5))
