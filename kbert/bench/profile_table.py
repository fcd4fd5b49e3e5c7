"""The top ops of a training step by device time, from a ``jax.profiler`` trace.

``jax.profiler.trace(dir, create_perfetto_trace=True)`` writes ``perfetto_trace.json.gz`` (Chrome
trace events) beside its XPlane file; that JSON needs no profiler plug-in to read. Device work is
in the processes named ``/device:GPU:N`` (their streams' kernels); ``top_ops`` sums the complete
("X") events of those processes by name, and ``markdown_table`` writes the first rows as the table
kept under docs/bench/accelerator/.
"""

from __future__ import annotations

import collections
import gzip
import json
import pathlib

DEVICE_PREFIX = "/device:GPU"


def find_trace(log_dir) -> pathlib.Path | None:
    """The newest ``perfetto_trace.json.gz`` under ``log_dir``, or None."""
    found = sorted(pathlib.Path(log_dir).rglob("perfetto_trace.json.gz"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def top_ops(trace_path, n: int = 15, device_prefix: str = DEVICE_PREFIX, steps: int = 1) -> dict:
    """``{"device_ms": total per step, "rows": [{"op", "calls", "ms", "share"}, ...]}``: the ``n``
    ops with the most device time (per step: the trace's totals divided by ``steps``)."""
    with gzip.open(trace_path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    device_pids = {e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
                   and str(e.get("args", {}).get("name", "")).startswith(device_prefix)}
    time_us, calls = collections.Counter(), collections.Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("pid") in device_pids:
            time_us[e["name"]] += float(e.get("dur", 0.0))
            calls[e["name"]] += 1
    total = sum(time_us.values())
    rows = [{"op": name, "calls": calls[name] / steps, "ms": us / 1000.0 / steps,
             "share": us / total if total else 0.0} for name, us in time_us.most_common(n)]
    return {"device_ms": total / 1000.0 / steps, "rows": rows, "device_processes": len(device_pids)}


def markdown_table(title: str, table: dict) -> str:
    """``table`` (from ``top_ops``) as Markdown: a heading line, then op | calls | ms | share."""
    lines = [f"### {title}", "",
             f"Device time per step: {table['device_ms']:.2f} ms "
             f"({table['device_processes']} device process(es) in the trace)", "",
             "| # | op | calls / step | ms / step | share |", "|---:|---|---:|---:|---:|"]
    for i, row in enumerate(table["rows"], 1):
        op = row["op"].replace("|", "\\|")
        if len(op) > 90:
            op = op[:87] + "..."
        lines.append(f"| {i} | `{op}` | {row['calls']:g} | {row['ms']:.3f} | {100 * row['share']:.1f}% |")
    if not table["rows"]:
        lines.append("| - | (no device events: the trace holds no GPU process) | - | - | - |")
    return "\n".join(lines) + "\n"
