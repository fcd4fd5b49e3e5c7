"""Where the project's shared data lives: ``../shared/data`` next to the repository (or
``shared/data`` inside it), or the folder ``KBERT_SHARED_DATA`` names. Benchmarks and the
walk-throughs find their default inputs here; tests use tests/conftest.py's fixtures."""

from __future__ import annotations

import os
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]


def candidates() -> list:
    env = os.environ.get("KBERT_SHARED_DATA")
    return ([pathlib.Path(env)] if env else []) + [REPO.parent / "shared" / "data", REPO / "shared" / "data"]


def shared_data_dir() -> pathlib.Path | None:
    """The first candidate folder that holds the data's README.md, or None."""
    for path in candidates():
        if (path / "README.md").exists():
            return path
    return None
