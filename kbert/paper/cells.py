"""Resumable cells: every unit of a table run (the corpus's vocabulary and TFRecords, one
pre-training variant, one fine-tuning task x variant x seed) is a directory
``OUT/cells/<kind>-<hash>/`` keyed by its content (the options that decide its result, never a
path of this run), so two tables written to the same OUT share the cells they have in common.

A cell is finished when its ``result.json`` exists: that file is written last and atomically
(a temporary file renamed), so a killed run never leaves a half-written one, and a rerun returns
the stored result without doing the work again. A cell left unfinished is done again from its
directory (pre-training resumes from its checkpoints there; a fine-tuning search from its
finished runs).
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib

CELLS = "cells"
RESULT = "result.json"
SPEC = "spec.json"


def cell_key(kind: str, spec: dict) -> str:
    """``kind-<12 hex digits>`` of the spec's canonical JSON."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return f"{kind}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}"


def write_json(path: pathlib.Path, value) -> None:
    """``value`` as JSON at ``path``, whole or not at all (a temporary file renamed over it)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def execute(work, cell_dir: pathlib.Path) -> dict:
    """Does one cell's work (the one place a table run trains; the tests count calls here)."""
    return work(cell_dir)


def run_cell(out_dir, kind: str, spec: dict, work, log=print) -> tuple[str, dict]:
    """``(key, result)`` of the cell ``spec``: the stored result when finished, else
    ``work(cell_dir) -> dict`` run and stored."""
    key = cell_key(kind, spec)
    cell_dir = pathlib.Path(out_dir) / CELLS / key
    done = cell_dir / RESULT
    if done.is_file():
        log(f"cell {key}: done before, read back", flush=True)
        return key, json.loads(done.read_text(encoding="utf-8"))
    cell_dir.mkdir(parents=True, exist_ok=True)
    write_json(cell_dir / SPEC, spec)
    log(f"cell {key}: {kind} {describe(spec)}", flush=True)
    result = execute(work, cell_dir)
    write_json(done, result)
    return key, result


def describe(spec: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in spec.items() if k in ("row", "task", "seed", "size", "column"))
