"""The Model Garden peer of the benches (kbert/bench/mg_peer.py). Model Garden needs TensorFlow 2.20:
the peer runs in the Python that KBERT_BENCH_MODEL_GARDEN_PYTHON names (a separate venv with
tf-models-official 2.20), and its rows are checked only where there is one; here, in kbert's own
Python, what the child answers its parent."""

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


def test_a_python_without_model_garden_answers_the_parent_with_what_is_missing(monkeypatch, capsys):
    """The peer run as its parent starts it (``python -m kbert.bench.mg_peer SPEC``), here in kbert's own
    Python, which has no tf-models-official: its one line to the parent is the error naming the
    package (which the parent raises), and it exits 1, rather than answering with rows or silence."""
    import importlib.util
    import json
    import runpy
    import sys

    from kbert import BertConfig
    from kbert.bench import mg_peer

    if importlib.util.find_spec("tensorflow_models") is not None:
        pytest.skip("tf-models-official is importable here")
    spec = dict(task="encoder", config=BertConfig.preset("tiny").to_dict(), batch_size=2, seq_length=8,
                precision="float32", threads=1, xla=[False], warmup=1, flops=1.0)
    monkeypatch.setattr(sys, "argv", [mg_peer.__file__, json.dumps(spec)])
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(mg_peer.__file__, run_name="__main__")
    assert exited.value.code == 1
    assert json.loads(capsys.readouterr().out) == {"error": "ModuleNotFoundError: No module named 'tensorflow_models'"}
