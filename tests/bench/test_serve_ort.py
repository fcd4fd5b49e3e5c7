"""python -m kbert.bench serve --random-hf / --hf-dir (kbert/bench/serve_ort.py): kbert's SavedModel
and ONNX exports against ONNX Runtime's torch export in one run, and the tables and ratios it prints
(print_case, on known times)."""

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


def _row(name, group, items=1):
    import types

    return types.SimpleNamespace(name=name, group=group, items=items, concurrency=0)


@pytest.mark.parametrize("batch_size", [1, 4])
def test_the_case_table_and_its_ratios_from_known_times(batch_size):
    """print_case on hand-made per-request times: each row's percentiles, the spread of the rounds'
    medians and the rate, then kbert's best over ORT's best and kbert's ONNX against the ORT-optimized
    export and kbert's SavedModel, judged against their goals on the batch-1 ids case only."""
    import io

    import numpy as np

    from kbert.bench.serve_ort import ONNX_GOALS, print_case

    name = f"ids b{batch_size}"
    times = {  # seconds per request, per round
        f"{name}: kbert export": [[0.010, 0.012, 0.020], [0.011, 0.013, 0.009]],
        f"{name}: kbert ONNX": [[0.005, 0.006, 0.005], [0.005, 0.006, 0.006]],  # slower than ORT's best
        f"{name}: ORT 1.0": [[0.008, 0.008, 0.009], [0.009, 0.010, 0.008]],
        f"{name}: ORT 1.0 optimized": [[0.005, 0.005, 0.004], [0.006, 0.004, 0.006]],
    }
    runners = [_row(n, "peer" if ": ORT" in n else "kbert", batch_size) for n in times]
    out = io.StringIO()
    ratio, best, peer = print_case(dict(name=name, kind="ids", batch_size=batch_size), runners, times, file=out)
    text = out.getvalue()

    rates = {}
    for n, rounds in times.items():
        flat = np.concatenate(rounds)
        rates[n] = batch_size / flat.mean()
        p50, p90, p99 = np.percentile(flat, [50, 90, 99], method="nearest") * 1e3
        medians = [np.median(r) * 1e3 for r in rounds]
        row = next(line for line in text.splitlines() if line.startswith(n + "  "))
        assert row.split()[-5:] == [f"{p50:.1f}", f"{p90:.1f}", f"{p99:.1f}",
                                    f"{min(medians):.1f}–{max(medians):.1f}", f"{rates[n]:.1f}"], row
    onnx, export = rates[f"{name}: kbert ONNX"], rates[f"{name}: kbert export"]
    ort = rates[f"{name}: ORT 1.0 optimized"]
    assert (best.name, peer.name) == (f"{name}: kbert ONNX", f"{name}: ORT 1.0 optimized")
    assert ratio == pytest.approx(onnx / ort)
    assert f"ratio kbert / fastest peer: {onnx / ort:.2f}  ({name}: kbert ONNX vs {name}: ORT 1.0 optimized)" in text

    def verdict(value, goal):
        return f"  goal >= {goal:.2f}: {'met' if value >= goal else 'MISSED'}" if batch_size == 1 else ""

    assert text.strip().splitlines()[-2:] == [
        f"ratio kbert ONNX / ORT 1.0 optimized: {onnx / ort:.2f}" + verdict(onnx / ort, ONNX_GOALS["ORT optimized"]),
        f"ratio kbert ONNX / kbert export: {onnx / export:.2f}" + verdict(onnx / export, ONNX_GOALS["SavedModel"])]
    if batch_size == 1:  # one goal missed, one met
        assert "1.00: MISSED" in text and "1.25: met" in text
