"""The transformers (torch) peer of the benches (kbert/bench/hf_peer.py): its rows in ``kbert bench
encoder --vs hf``, where it runs as a child process."""

from __future__ import annotations

import re

import pytest

from conftest import require
from fixtures.bench_cli import TINY, run_bench


@pytest.mark.slow
def test_hf_peer_in_a_subprocess(capsys):
    require("torch")
    require("transformers")
    code, out = run_bench(capsys, "encoder", *TINY, "--vs", "hf", "--hf-compile", "off")
    assert code == 0
    assert "matmul peak torch float32" in out
    assert re.search(r"^transformers \S+ eager", out, re.M)

