"""kbert.bench.common, the harness every model bench shares: its options and cases, FLOP counts,
the timed runners (in this process and across a pipe), the interleaved rounds, and the table whose
numbers are checked here against timings given by the test (no real benchmark loop)."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import types

import numpy as np
import pytest

from kbert.bench import common


def _args(*argv, suites=None):
    parser = argparse.ArgumentParser()
    common.add_model_args(parser, suites=suites)
    return parser.parse_args(list(argv))


# -- options and cases ---------------------------------------------------------------------------
def test_cases_from_flags_and_suites():
    assert common.parse_cases(_args("--config", "tiny", "--batch-size", "4", "--seq-length", "16")) == [
        common.Case("tiny", 4, 16, "float32")]
    # --case replaces --config/--batch-size; a precision of its own or the flag's, bf16 spelled either way
    cases = common.parse_cases(_args("--case", "mini:8", "--case", "base:2:bf16", "--case", "tiny:1:bfloat16",
                                     "--precision", "mixed_bfloat16", "--seq-length", "64"))
    assert cases == [common.Case("mini", 8, 64, "mixed_bfloat16"), common.Case("base", 2, 64, "mixed_bfloat16"),
                     common.Case("tiny", 1, 64, "mixed_bfloat16")]
    suites = {"quick": ["tiny:1", "tiny:2:float32"]}
    args = _args("--suite", "quick", "--case", "small:3", suites=suites)
    assert [(c.config, c.batch_size) for c in common.parse_cases(args, suites)] == [("small", 3), ("tiny", 1),
                                                                                   ("tiny", 2)]
    assert common.Case("tiny", 4, 16, "mixed_bfloat16").label == "BERT-Tiny (L2/H128) batch 4 seq 16 mixed_bfloat16"
    assert common.Case("base", 32).label == "BERT-Base (L12/H768) batch 32 seq 128 float32"


def test_a_malformed_case_is_refused_naming_it():
    for spec in ("tiny", "tiny:1:float32:x"):
        with pytest.raises(SystemExit, match=re.escape(f"error: --case {spec!r}: expected CONFIG:BATCH[:PRECISION]")):
            common.parse_cases(_args("--case", spec))


def test_peers_named_by_vs_and_unknown_ones_refused():
    assert common.peers(_args()) == set(common.PEERS)
    assert common.peers(_args("--vs", "none")) == set()
    assert common.peers(_args("--vs", " hf , keras-hub,")) == {"hf", "keras-hub"}
    with pytest.raises(SystemExit) as e:
        common.peers(_args("--vs", "hf,torch,jax"))
    assert str(e.value) == ("error: --vs 'hf,torch,jax': unknown peer(s) jax, torch; expected "
                            "keras-hub, hf, model-garden, ort or none")


def test_model_garden_peer_is_skipped_with_a_note_or_refused(tmp_path):
    notes = []
    assert common.model_garden_peer(_args(), {"hf"}, notes) is None and notes == []
    args = _args("--model-garden-python", "")
    assert common.model_garden_peer(args, {"model-garden"}, notes) is None
    assert notes == [f"Model Garden: {common.MODEL_GARDEN_NOTE}"]
    missing = str(tmp_path / "no-python")
    with pytest.raises(SystemExit, match=re.escape(f"error: --model-garden-python {missing!r} does not exist")):
        common.model_garden_peer(_args("--model-garden-python", missing), {"model-garden"}, [])


def test_a_model_garden_python_without_tf_models_is_one_line(tmp_path):
    """A Python whose child answers as mg_peer does without tf-models-official (the child's first line):
    the bench ends with one line naming that Python and the package, not a RuntimeError traceback."""
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho '{\"error\": \"ModuleNotFoundError: No module named official\"}'\n")
    python.chmod(0o755)
    with pytest.raises(SystemExit) as e:
        common.model_garden_peer(_args("--model-garden-python", str(python), "--threads", "1"), {"model-garden"},
                                 [], task="encoder")
    message = str(e.value)
    assert message.startswith(f"error: the Model Garden peer could not start in --model-garden-python {str(python)!r}")
    assert "No module named official" in message and "needs tf-models-official" in message
    assert "\n" not in message


# -- environment ----------------------------------------------------------------------------------
def test_machine_line_names_the_cpu_threads_onednn_and_load(monkeypatch):
    monkeypatch.setattr(common.os, "getloadavg", lambda: (1.234, 0.5, 0.0))
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    line = common.machine_line(3)
    assert line.startswith(f"machine: {os.cpu_count()} CPUs, ")
    assert line.endswith("; threads 3; TF_ENABLE_ONEDNN_OPTS=0; load average 1.23 0.50 0.00")
    try:
        with open("/proc/cpuinfo") as f:
            model = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        model = None
    if model:
        assert f", {model} [" in line
    monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS")
    assert "TF_ENABLE_ONEDNN_OPTS=default (on);" in common.machine_line(1)


def test_versions_and_have():
    from importlib import metadata

    assert common.versions("pytest", "no-such-distribution-kbert") == (
        f"pytest {metadata.version('pytest')}, no-such-distribution-kbert (not installed)")
    assert common.have("json") and not common.have("no_such_module_kbert")


# -- FLOPs ---------------------------------------------------------------------------------------
def test_flop_counts_match_a_hand_count():
    config = types.SimpleNamespace(hidden_size=128, intermediate_size=512, num_hidden_layers=2, vocab_size=1000)
    seq = 32
    # per layer: q, k, v, o (4 h^2) and the FFN (2 h i) per position; QK^T and PV (2 T^2 h); x2 for multiply-add
    layer = 2 * seq * (4 * 128 * 128 + 2 * 128 * 512) + 2 * 2 * seq * seq * 128
    pooler = 2 * 128 * 128
    assert common.encoder_flops(config, seq) == 2 * layer + pooler == 26_247_168  # 2 x (12,582,912 + 524,288) + 32,768
    # MLM at 5 positions: transform h x h and the tied decoder h x vocab; NSP h x 2; backward = 2 x forward
    head = 2 * 5 * (128 * 128 + 128 * 1000) + 2 * 128 * 2
    assert common.pretraining_flops(config, seq, 5) == 3 * (2 * layer + pooler + head)


# -- runners -------------------------------------------------------------------------------------
def _clock(monkeypatch, values):
    """time.perf_counter as common sees it: the given readings, in order."""
    readings = iter(values)
    monkeypatch.setattr(common.time, "perf_counter", lambda: next(readings))


def test_in_process_runner_times_each_call(monkeypatch):
    calls = []
    runner = common.InProcess("kbert", lambda: calls.append(1), group="kbert", items=8, flops=5.0)
    _clock(monkeypatch, [10.0, 10.5, 20.0, 20.25, 30.0, 31.0])
    assert runner.run(3) == [0.5, 0.25, 1.0] and len(calls) == 3
    assert (runner.name, runner.group, runner.items, runner.flops, runner.framework, runner.unit) == (
        "kbert", "kbert", 8, 5.0, "tf", "seq")


class _Fake(common.Runner):
    """A runner that logs its turns and returns the next of its given timings."""

    def __init__(self, name, group, log, times=(), items=1, flops=0.0, framework="tf", unit="seq"):
        self.name, self.group, self.log, self.items, self.flops = name, group, log, items, flops
        self.framework, self.unit = framework, unit
        self.times = list(times)

    def run(self, n):
        self.log.append((self.name, n))
        return [self.times.pop(0) if self.times else 1.0 for _ in range(n)]


def test_interleave_runs_peaks_first_then_the_others_rotated(capsys):
    log = []
    runners = [_Fake("kbert", "kbert", log), _Fake("peak", "peak", log), _Fake("hub", "peer", log),
               _Fake("hf", "peer", log)]
    times = common.interleave(runners, rounds=4, reps=2, pause=0)
    rounds = [[name for name, _ in log[i:i + 4]] for i in range(0, 16, 4)]
    assert rounds == [["peak", "kbert", "hub", "hf"], ["peak", "hub", "hf", "kbert"],
                      ["peak", "hf", "kbert", "hub"], ["peak", "kbert", "hub", "hf"]]
    assert all(n == 2 for _, n in log) and all(len(t) == 8 for t in times.values())
    assert capsys.readouterr().err.count("done") == 4
    log.clear()
    common.interleave(runners[1:2], rounds=2, pause=0, progress=False)  # peaks alone
    assert log == [("peak", 1), ("peak", 1)] and capsys.readouterr().err == ""


def test_warm_up_runs_the_in_process_runners_only():
    log = []

    class Child(common._ChildRunner):
        def __init__(self):
            self.name = "child"

        def run(self, n):
            log.append(("child", n))

    common.warm_up([_Fake("kbert", "kbert", log), Child()], 2)
    common.warm_up([_Fake("hub", "peer", log)], 0)
    assert log == [("kbert", 2)]


# -- the table -----------------------------------------------------------------------------------
def _measured():
    """A peak, two kbert rows and two peers with given seconds per iteration."""
    log = []
    runners = [_Fake("matmul peak", "peak", log, flops=2e9, framework="tf-float32"),
               _Fake("kbert (no XLA)", "kbert", log, items=32, flops=4e9, framework="tf-float32"),
               _Fake("kbert (XLA)", "kbert", log, items=32, flops=4e9, framework="tf-float32"),
               _Fake("keras-hub", "peer", log, items=32, flops=4e9, framework="tf-float32"),
               _Fake("transformers", "peer", log, items=32, framework="torch")]
    times = {"matmul peak": [0.010, 0.008, 0.020], "kbert (no XLA)": [0.100, 0.080, 0.300, 0.090],
             "kbert (XLA)": [0.064, 0.060, 0.070], "keras-hub": [0.080, 0.120], "transformers": [0.5, 0.4, 0.45]}
    return runners, times


def test_summary_rows_are_medians_rates_and_shares_of_the_peak():
    runners, times = _measured()
    rows = {r.name: r for r in common.summarize(runners, times)}
    peak_gflops = 2e9 / np.median(times["matmul peak"]) / 1e9  # 200 GFLOP/s
    for name, t in times.items():
        row = rows[name]
        assert (row.median, row.low, row.high) == pytest.approx((np.median(t), min(t), max(t)))
        assert row.rate == pytest.approx(({"matmul peak": 1}.get(name, 32)) / np.median(t))
    kbert = rows["kbert (XLA)"]
    assert kbert.gflops == pytest.approx(4e9 / 0.064 / 1e9)
    assert kbert.peak_pct == pytest.approx(100 * (4e9 / 0.064 / 1e9) / peak_gflops)
    assert rows["keras-hub"].peak_pct == pytest.approx(100 * (4e9 / 0.1 / 1e9) / peak_gflops)
    # no FLOPs, or no peak of its framework, or the peak itself: no share
    assert rows["transformers"].gflops == 0.0 and rows["transformers"].peak_pct is None
    assert rows["matmul peak"].peak_pct is None
    ratio, k, p = common.best_ratio(list(rows.values()))
    assert (k.name, p.name) == ("kbert (XLA)", "keras-hub")  # the fastest of each side
    assert ratio == pytest.approx((32 / 0.064) / (32 / 0.1))
    assert common.best_ratio([rows["kbert (XLA)"], rows["matmul peak"]]) is None


def test_table_prints_the_rows_and_the_ratio_line():
    runners, times = _measured()
    rows = common.summarize(runners, times)
    out = io.StringIO()
    ratio = common.print_table("encoder inference", rows, notes=["a note"], file=out)
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["", "== encoder inference"]
    assert lines[2].split() == ["candidate", "median", "ms", "min–max", "ms", "seq/s", "GFLOP/s", "%", "peak"]
    cells = {ln.split("  ")[0]: ln for ln in lines[3:8]}
    # kbert (XLA): median 64.0 ms, 60.0–70.0, 500 seq/s (32 / 0.064), 62.5 GFLOP/s -> 63 (of 200: 31%)
    assert cells["kbert (XLA)"].split()[2:] == ["64.0", "60.0–70.0", "500", "62", "31%"]
    # the peak: no rate; 200 GFLOP/s; no share
    assert cells["matmul peak"].split()[2:] == ["10.0", "8.0–20.0", "200"]
    # under 100 items/s one decimal; no FLOPs: no GFLOP/s and no share
    assert cells["transformers"].split()[1:] == ["450.0", "400.0–500.0", "71.1"]
    assert lines[8] == "a note"
    assert lines[9] == f"ratio kbert / fastest peer: {500 / 320:.2f}  (kbert (XLA) vs keras-hub)" == lines[-1]
    assert ratio[0] == pytest.approx(500 / 320)
    # the column widths follow the longest name
    long = common.Row("x" * 40, "kbert", 0.001, 0.001, 0.001, 1000.0, 0.0, None, "request")
    out = io.StringIO()
    assert common.print_table("t", [long], file=out) is None
    header, row = out.getvalue().splitlines()[2:4]
    assert header.startswith("candidate" + " " * 33) and "request/s" in header and row.startswith("x" * 40 + "  ")
    assert row.split()[1:] == ["1.0", "1.0–1.0", "1,000"]


def test_worst_ratio_over_the_cases():
    row = common.Row("k", "kbert", 1, 1, 1, 1, 0, None, "seq")
    peer = common.Row("p", "peer", 1, 1, 1, 1, 0, None, "seq")
    out = io.StringIO()
    results = [("case A", (1.25, row, peer)), ("case C", (0.87, row, peer)), ("case B", None), ("case D", (1.5, row, peer))]
    common.print_worst(results, file=out)
    assert out.getvalue() == "worst ratio kbert / fastest peer: 0.87  (case C: k vs p)\n"
    out = io.StringIO()
    common.print_worst([("case B", None)], file=out)
    assert out.getvalue() == "worst ratio kbert / fastest peer: n/a (no peer measured)\n"


def test_traced_calls_count_by_phase_kernel_and_dropout():
    calls = common.TracedCalls()
    for args in [("cudnn", True, True), ("cudnn", True, True), ("plain", True, False), ("plain", False, False)]:
        calls(*args)
    assert calls.counts == {"train:cudnn+dropout": 2, "train:plain": 1, "infer:plain": 1}
    assert calls.training() == {"cudnn+dropout": 2, "plain": 1}


# -- a child process's candidates ----------------------------------------------------------------
def test_warm_up_rows_run_each_candidate_and_describe_it():
    ran = {"a": 0, "b": 0}
    fns = {"a": lambda: ran.__setitem__("a", ran["a"] + 1), "b": lambda: ran.__setitem__("b", ran["b"] + 1)}
    infos = common.warm_up_rows(fns, {"warmup": 3, "flops": 10.0}, items=4, framework="torch")
    assert ran == {"a": 3, "b": 3}
    assert infos == [dict(name=n, items=4, flops=40.0, framework="torch", group="peer") for n in ("a", "b")]
    common.warm_up_rows(fns, {"warmup": 0}, items=1, framework="torch")  # at least once
    assert ran == {"a": 4, "b": 4}


class _Many:
    """A candidate that answers several requests at once (as kbert.bench.concurrency's ClosedLoop)."""

    def __call__(self):
        raise AssertionError("run_many is used")

    def run_many(self, n):
        return [0.25] * n


def _child(monkeypatch, build, *requests):
    """common.child_main in this process: its stdout lines, parsed, and its exit code."""
    monkeypatch.setattr(sys, "argv", ["peer", json.dumps({"warmup": 1})])
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(json.dumps(r) + "\n" for r in requests)))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    code = common.child_main(build)
    return [json.loads(line) for line in out.getvalue().splitlines()], code


def test_child_main_answers_the_protocol(monkeypatch):
    calls = []

    def fail():
        raise ValueError("no such input")

    def build(spec):
        assert spec == {"warmup": 1}
        return [{"name": "one"}], {"one": lambda: calls.append(1), "many": _Many(), "bad": fail}, "x 1.0"

    lines, code = _child(monkeypatch, build, {"op": "run", "name": "one", "n": 3}, {"op": "run", "name": "many", "n": 2},
                         {"op": "run", "name": "bad", "n": 1}, {"op": "run", "name": "nobody", "n": 1},
                         {"op": "quit"}, {"op": "run", "name": "one", "n": 1})
    assert code == 0 and len(calls) == 3  # nothing after quit
    assert lines[0] == {"ready": [{"name": "one"}], "versions": "x 1.0"}
    assert len(lines[1]["times"]) == 3 and all(t >= 0 for t in lines[1]["times"])
    assert lines[2] == {"times": [0.25, 0.25]}
    assert lines[3] == {"error": "ValueError: no such input"} and lines[4] == {"error": "KeyError: 'nobody'"}
    assert len(lines) == 5

    def broken(spec):
        raise ImportError("no module named torch")

    lines, code = _child(monkeypatch, broken, {"op": "quit"})
    assert code == 1 and lines == [{"error": "ImportError: no module named torch"}]


PEER_MODULE = '''
import sys
from kbert.bench.common import child_main

def build(spec):
    if spec.get("fail"):
        raise RuntimeError("cannot build " + spec["fail"])
    print("a stray line of some library")
    class Many:
        def run_many(self, n):
            return [spec["seconds"]] * n
    def boom():
        raise ValueError("broken candidate")
    return ([{"name": "torch eager", "items": 8, "flops": 3.0}, {"name": "boom", "unit": "request",
             "concurrency": 4, "framework": "ort", "group": "kbert"}],
            {"torch eager": Many(), "boom": boom}, "torch 0.0")

sys.exit(child_main(build))
'''


def test_subprocess_peer_talks_to_its_child(tmp_path, monkeypatch, capsys):
    """The protocol across a pipe: a real child Python (the point of SubprocessPeer is the process)."""
    (tmp_path / "kbert_test_peer.py").write_text(PEER_MODULE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p))
    peer = common.SubprocessPeer("kbert_test_peer", {"seconds": 0.125}, threads=1, timeout=60)
    try:
        assert peer.versions == "torch 0.0"
        eager, boom = peer.runners
        assert (eager.name, eager.items, eager.flops, eager.framework, eager.group, eager.unit,
                eager.concurrency) == ("torch eager", 8, 3.0, "torch", "peer", "seq", 0)
        assert (boom.unit, boom.concurrency, boom.framework, boom.group) == ("request", 4, "ort", "kbert")
        assert eager.run(3) == [0.125, 0.125, 0.125]
        with pytest.raises(RuntimeError, match="ValueError: broken candidate"):
            boom.run(1)
        assert eager.run(1) == [0.125]  # the child goes on after an error
    finally:
        peer.close()
    assert peer.proc.returncode == 0
    assert "  [peer] a stray line of some library" in capsys.readouterr().err
    with pytest.raises(RuntimeError, match="RuntimeError: cannot build torch"):
        common.SubprocessPeer("kbert_test_peer", {"fail": "torch"}, threads=1, timeout=60)

