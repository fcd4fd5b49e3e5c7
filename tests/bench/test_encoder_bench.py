"""python -m kbert.bench encoder (kbert/bench/encoder_bench.py) on tiny cases: the table, the peers'
rows, the floor and attentions notes, and the last line.

Smoke tests of what the table says (no timing assertions): its rows and notes, and that the last line
is the worst ratio kbert / fastest peer.
"""

from __future__ import annotations

import re

import pytest

from fixtures.bench_cli import RATIO, TINY, run_bench


@pytest.mark.slow
def test_encoder_bench_table_with_keras_hub(capsys, monkeypatch):
    monkeypatch.delenv("KBERT_BENCH_MODEL_GARDEN_PYTHON", raising=False)
    code, out = run_bench(capsys, "encoder", *TINY, "--vs", "keras-hub,model-garden", "--xla", "both")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].startswith("machine: ") and "load average" in lines[0]
    assert any(line.startswith("matmul peak TF float32") for line in lines)
    assert any(line.startswith("kbert (no XLA)") for line in lines)
    assert any(line.startswith("kbert (XLA)") for line in lines)
    assert any(line.startswith("keras-hub") and "(XLA)" in line for line in lines)
    assert any(line.startswith("Model Garden: n/a") for line in lines)
    row = next(line for line in lines if line.startswith("kbert (no XLA)"))
    assert re.search(r"\d%$", row)  # % of the matmul peak
    # The projections-only bound: a row and a note, never a candidate in the ratio.
    floor = next(line for line in lines if line.startswith("floor: kbert's projections only"))
    assert re.search(r"\d%$", floor)
    assert re.search(r"^floor: the projections alone take [\d.,]+ ms, \d+% of kbert's time; .* would be "
                     r"\d+\.\d\d\.$", out, re.M)
    assert re.match(r"ratio kbert / fastest peer: \d+\.\d\d", lines[-2])
    assert "floor" not in lines[-2] and "floor" not in lines[-1]
    assert RATIO.fullmatch(lines[-1].split("  (")[0])


@pytest.mark.slow
@pytest.mark.parametrize("bf16_matmul", ["native", "float32"])
def test_encoder_bench_bf16_reports_the_difference_to_float32(capsys, monkeypatch, bf16_matmul):
    from kbert.layers import tf_fast

    monkeypatch.setenv(tf_fast.BF16_MATMUL_ENV, bf16_matmul)
    tf_fast.bf16_matmul_mode.cache_clear()
    try:
        code, out = run_bench(capsys, "encoder", *TINY, "--vs", "keras-hub", "--precision", "mixed_bfloat16",
                         "--no-peak")
    finally:
        monkeypatch.delenv(tf_fast.BF16_MATMUL_ENV)
        tf_fast.bf16_matmul_mode.cache_clear()
    assert code == 0
    assert f"kbert (no XLA, mixed_bfloat16, bf16 matmuls {bf16_matmul})" in out
    assert f"bf16 matmuls: {bf16_matmul}" in out
    m = re.search(r"kbert mixed_bfloat16 vs float32, same weights: sequence_output max \|diff\| ([\d.]+), "
                  r"mean ([\d.]+)", out)
    assert m and float(m.group(2)) < 0.05  # bf16 rounding, not a broken model (values have std ~1)
    import keras

    assert keras.config.dtype_policy().name == "float32"  # restored


@pytest.mark.slow
def test_encoder_bench_cases_end_with_the_worst(capsys):
    code, out = run_bench(capsys, "encoder", "--case", "tiny:1", "--case", "tiny:2", "--seq-length", "8",
                     "--rounds", "1", "--warmup", "0", "--vs", "keras-hub", "--xla", "off", "--no-peak",
                     "--no-floor")
    assert code == 0
    assert out.count("== encoder inference") == 2
    assert "floor" not in out
    assert "attentions returned" not in out  # only on request (--attentions)
    assert RATIO.match(out.strip().splitlines()[-1])


@pytest.mark.slow
def test_encoder_bench_attentions_row_beside_the_plain_row(capsys):
    """--attentions (issue 18): a row with every layer's attention probabilities returned beside the plain
    kbert row, its cost as a note, and never a candidate in the ratio."""
    code, out = run_bench(capsys, "encoder", *TINY, "--vs", "keras-hub", "--xla", "off", "--no-peak", "--no-floor",
                     "--attentions")
    assert code == 0
    lines = out.strip().splitlines()
    assert re.search(r"^kbert \(no XLA\)\s+[\d.,]+", out, re.M)
    assert re.search(r"^kbert \(no XLA, attentions returned\)\s+[\d.,]+", out, re.M)
    assert re.search(r"^kbert \(no XLA\) with attentions returned: [\d.,]+ ms vs [\d.,]+ ms without \([+-]\d+%\)$",
                     out, re.M)
    assert re.match(r"ratio kbert / fastest peer: \d+\.\d\d  \(kbert \(no XLA\) vs keras-hub", lines[-2])

