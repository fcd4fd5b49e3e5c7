"""kbert.bench.profile_table: a jax.profiler trace (Chrome trace events, gzipped JSON) -> the ops with
the most device time per step, and the Markdown table kept under docs/bench/accelerator/. Traces
written by the test, with durations summed by hand."""

import gzip
import json
import os

import pytest

from kbert.bench import profile_table


def _write(path, events, wrapped=True):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events} if wrapped else events, f)
    return path


def _process(pid, name):
    return {"ph": "M", "pid": pid, "name": "process_name", "args": {"name": name}}


def _op(pid, name, dur, ph="X"):
    return {"ph": ph, "pid": pid, "tid": 1, "ts": 0, "dur": dur, "name": name}


def test_profile_table_sums_device_ops_per_step(tmp_path):
    events = [_process(1, "/host:CPU"), _process(7, "/device:GPU:0"),
              _op(1, "python step", 9000.0), _op(7, "cutlass_gemm", 300.0), _op(7, "cutlass_gemm", 500.0),
              _op(7, "cudnn_fmha|fwd", 200.0)]
    trace = _write(tmp_path / "plugins" / "profile" / "run" / "perfetto_trace.json.gz", events)
    assert profile_table.find_trace(tmp_path) == trace
    table = profile_table.top_ops(trace, 15, steps=2)
    assert table["device_ms"] == pytest.approx(0.5)  # (300 + 500 + 200) us over 2 steps
    assert [(r["op"], r["calls"], r["ms"]) for r in table["rows"]] == [("cutlass_gemm", 1.0, 0.4),
                                                                      ("cudnn_fmha|fwd", 0.5, 0.1)]
    text = profile_table.markdown_table("title", table)
    assert "| 1 | `cutlass_gemm` | 1 | 0.400 | 80.0% |" in text and "`cudnn_fmha\\|fwd`" in text


def test_only_complete_events_of_device_processes_count_and_n_cuts_the_rows(tmp_path):
    events = [_process(1, "/host:CPU"), _process(2, "/device:GPU:0"), _process(3, "/device:GPU:1"),
              _process(4, "/device:TPU:0"),
              _op(2, "a", 100.0), _op(3, "a", 50.0), _op(2, "b", 400.0), _op(3, "c", 30.0), _op(2, "d", 20.0),
              _op(2, "a", 9999.0, ph="B"),  # a begin event, not a complete one
              _op(4, "tpu op", 7000.0), _op(1, "host op", 8000.0), _op(9, "no process", 6000.0)]
    trace = _write(tmp_path / "perfetto_trace.json.gz", events, wrapped=False)  # a bare list of events
    table = profile_table.top_ops(trace, n=2)
    assert table["device_processes"] == 2
    assert table["device_ms"] == pytest.approx(0.6)  # a 150 + b 400 + c 30 + d 20 us, all ops, not the first n
    assert [(r["op"], r["calls"], r["ms"], r["share"]) for r in table["rows"]] == [
        ("b", 1, pytest.approx(0.4), pytest.approx(400 / 600)), ("a", 2, pytest.approx(0.15), pytest.approx(150 / 600))]
    tpu = profile_table.top_ops(trace, device_prefix="/device:TPU")
    assert tpu["device_processes"] == 1 and [r["op"] for r in tpu["rows"]] == ["tpu op"]


def test_a_trace_without_device_events_says_so(tmp_path):
    trace = _write(tmp_path / "perfetto_trace.json.gz", [_process(1, "/host:CPU"), _op(1, "host op", 10.0)])
    table = profile_table.top_ops(trace)
    assert table == {"device_ms": 0.0, "rows": [], "device_processes": 0}
    assert profile_table.markdown_table("pretrain kbert", table) == (
        "### pretrain kbert\n\nDevice time per step: 0.00 ms (0 device process(es) in the trace)\n\n"
        "| # | op | calls / step | ms / step | share |\n|---:|---|---:|---:|---:|\n"
        "| - | (no device events: the trace holds no GPU process) | - | - | - |\n")


def test_long_op_names_are_cut_to_90_characters():
    table = {"device_ms": 2.0, "device_processes": 1,
             "rows": [{"op": "f" * 91, "calls": 3.0, "ms": 1.23456, "share": 0.5},
                      {"op": "g" * 90, "calls": 0.5, "ms": 1.0, "share": 0.5}]}
    lines = profile_table.markdown_table("t", table).splitlines()
    assert lines[6] == f"| 1 | `{'f' * 87}...` | 3 | 1.235 | 50.0% |"
    assert lines[7] == f"| 2 | `{'g' * 90}` | 0.5 | 1.000 | 50.0% |"


def test_find_trace_takes_the_newest_or_none(tmp_path):
    assert profile_table.find_trace(tmp_path) is None
    newest = _write(tmp_path / "a" / "perfetto_trace.json.gz", [])
    older = _write(tmp_path / "b" / "c" / "perfetto_trace.json.gz", [])
    os.utime(newest, (2_000_000_000, 2_000_000_000))  # first by name, last by time
    os.utime(older, (1_000_000_000, 1_000_000_000))
    assert profile_table.find_trace(tmp_path) == newest
