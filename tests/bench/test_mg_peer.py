"""The Model Garden peer of the benches (kbert/bench/mg_peer.py). Model Garden needs TensorFlow 2.20:
the peer runs in the Python that KBERT_BENCH_MODEL_GARDEN_PYTHON names (a separate venv with
tf-models-official 2.20), and its rows are checked only where there is one."""

from __future__ import annotations

import re

import pytest

from fixtures.bench_cli import TINY, run_bench


def test_model_garden_peer_in_its_own_environment(capsys):
    """Model Garden needs TensorFlow 2.20: it runs in the Python that KBERT_BENCH_MODEL_GARDEN_PYTHON
    names (a separate venv with tf-models-official 2.20), skipped where there is none."""
    import os

    if not os.environ.get("KBERT_BENCH_MODEL_GARDEN_PYTHON"):
        pytest.skip("KBERT_BENCH_MODEL_GARDEN_PYTHON is not set (no tf-models-official environment)")
    code, out = run_bench(capsys, "encoder", *TINY, "--vs", "model-garden", "--xla", "off")
    assert code == 0
    assert re.search(r"^Model Garden \S+ \(no XLA\)\s+[\d,.]+", out, re.M)
    code, out = run_bench(capsys, "train", *TINY, "--vs", "model-garden", "--xla", "off", "--predictions", "3")
    assert code == 0
    assert re.search(r"^Model Garden \S+ \(no XLA\), AdamW\s+[\d,.]+", out, re.M)
