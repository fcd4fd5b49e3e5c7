"""python -m kbert.bench serve --random-hf / --hf-dir (kbert/bench/serve_ort.py): kbert's SavedModel
and ONNX exports against ONNX Runtime's torch export in one run, and the ratios it prints."""

from __future__ import annotations

import re

import pytest

from conftest import SHARED, require
from fixtures.bench_cli import run_bench


@pytest.mark.slow
def test_serve_bench_measures_kberts_onnx_beside_the_ort_torch_export(capsys, tmp_path):
    """--random-hf tiny: kbert's SavedModel, kbert's ONNX export and the ORT torch export in one run; the
    batch-1 ids case judges kbert's ONNX against both, and strings in go through its tokenizer.json."""
    require("torch")
    require("transformers")
    require("onnxruntime")
    code, out = run_bench(capsys, "serve", "--random-hf", "tiny", "--work-dir", str(tmp_path), "--batch-sizes", "1",
                     "--requests", "2", "--rounds", "1", "--warmup", "1", "--threads", "1",
                     "--text", str(SHARED / "glue" / "SST-2" / "dev.tsv"))
    assert code == 0
    for case in ("ids b1", "strings b1"):
        assert re.search(rf"^{case}: kbert ONNX\s+[\d.]+", out, re.M), out
        assert re.search(rf"^{case}: ORT \S+ optimized\s+[\d.]+", out, re.M)
    assert re.search(r"^ratio kbert ONNX / ORT \S+ optimized: \d+\.\d\d  goal >= 1\.00: (met|MISSED)$", out, re.M), out
    assert re.search(r"^ratio kbert ONNX / kbert export( \(XLA\))?: \d+\.\d\d  goal >= 1\.25: (met|MISSED)$", out, re.M)
    assert (tmp_path / "kbert_onnx" / "tokenizer.json").exists()
