"""kbert.paper.report and kbert.paper.tables: numbers in, Markdown and JSON out, checked against
means and spreads computed here with numpy; the tables' shapes against the paper's."""

import json
import math

import numpy as np
import pytest

from kbert.paper import report
from kbert.paper.scales import SCALES
from kbert.paper.tables import TABLES


def test_every_table_has_the_papers_shape():
    shapes = {"table1": (2, 9), "table2": (2, 2), "table5": (4, 5), "table6": (6, 4), "table7": (8, 1),
              "table8": (6, 3)}
    for name, (rows, columns) in shapes.items():
        spec = TABLES[name]
        assert (len(spec.rows), len(spec.columns)) == (rows, columns), name
        assert all(len(row.paper) == columns for row in spec.rows), name
    assert TABLES["table1"].rows[1].paper[5] == 60.5  # BERT-Large CoLA
    assert [r.label for r in TABLES["table8"].rows] == ["80/10/10", "100/0/0", "80/0/20", "80/20/0", "0/20/80",
                                                         "0/0/100"]
    # MASK/SAME/RND -> mask_token_rate, random_token_rate (SAME is what is left)
    assert dict(TABLES["table8"].rows[5].pretrain) == {"mask_token_rate": 0.0, "random_token_rate": 1.0}
    assert dict(TABLES["table8"].rows[4].pretrain) == {"mask_token_rate": 0.0, "random_token_rate": 0.8}


def test_scales_keep_the_papers_sizes_apart():
    sizes = [row.size for row in TABLES["table6"].rows]
    assert [SCALES["paper"].size(s) for s in sizes] == sizes
    for scale in SCALES.values():  # six distinct models at every scale
        assert len(set(map(scale.size, sizes))) == 6
        for layers, hidden, heads in map(scale.size, sizes):
            assert layers >= 1 and hidden % heads == 0


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
