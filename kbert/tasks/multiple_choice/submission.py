"""SWAG's prediction file: predictions.csv, id and pred (the chosen ending, 0-3), one row per example."""

from __future__ import annotations

import csv
import pathlib


def write_swag(path, ids, choices) -> pathlib.Path:
    path = pathlib.Path(path)
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "pred"])
        for qid, choice in zip(ids, choices):
            writer.writerow([qid, int(choice)])
    return path
