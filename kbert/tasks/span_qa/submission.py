"""SQuAD's prediction files: predictions.json {question id: answer text} (what evaluate-v1.1.py /
-v2.0.py read), nbest_predictions.json, and null_odds.json {id: score_diff} for 2.0 (as run_squad.py).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib


def write_squad(out_dir, predictions: dict, version_2_with_negative: bool) -> list:
    """``predictions``: {question id: SquadPrediction}."""
    out_dir = pathlib.Path(out_dir)
    paths = [out_dir / "predictions.json", out_dir / "nbest_predictions.json"]
    _write_json(paths[0], {qid: p.text for qid, p in predictions.items()})
    _write_json(paths[1], {qid: [dataclasses.asdict(a) for a in p.nbest] for qid, p in predictions.items()})
    if version_2_with_negative:
        paths.append(out_dir / "null_odds.json")
        _write_json(paths[2], {qid: p.score_diff for qid, p in predictions.items()})
    return paths


def _write_json(path, data):
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
