"""python -m kbert.bench train (kbert/bench/train_bench.py): the pre-training step's table on a tiny
case (no timing assertions)."""

from __future__ import annotations

import re

import pytest

from fixtures.bench_cli import RATIO, TINY, run_bench


@pytest.mark.slow
def test_train_bench_table(capsys):
    code, out = run_bench(capsys, "train", *TINY, "--vs", "keras-hub", "--xla", "off", "--predictions", "3")
    assert code == 0
    assert "== pre-training step" in out
    assert re.search(r"^kbert \(no XLA\)\s+[\d,.]+", out, re.M)
    assert re.search(r"^keras-hub \S+ \(no XLA\)", out, re.M)
    assert RATIO.match(out.strip().splitlines()[-1])
