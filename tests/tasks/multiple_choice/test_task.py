"""The multiple-choice task type (kbert.tasks.multiple_choice.task): SWAG files through kbert
finetune with BERT-Tiny; predictions.csv holds the saved model's own choices and its accuracy."""

import csv
import json

import numpy as np
import pytest

from kbert.commands.finetune import main
from kbert.tasks import load_task_model
from fixtures.task_runs import TINY_FLAGS


def _write_swag(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source",
                    "ending0", "ending1", "ending2", "ending3", "label"])
        for i, (sent1, sent2, endings, label) in enumerate(rows):
            w.writerow([i, f"v{i}", str(i), f"{sent1} {sent2}", sent1, sent2, "gold", *endings, label])


@pytest.mark.slow
def test_swag_multiple_choice(tiny_model_dir, tmp_path):
    rows = [("She opened the fridge.", "She", ["took out milk.", "flew away.", "sang.", "ate it."], i % 4)
            for i in range(12)]
    _write_swag(tmp_path / "train.csv", rows)
    _write_swag(tmp_path / "val.csv", rows[:6])
    out = tmp_path / "swag"
    main(["--task", "swag", "--data-dir", str(tmp_path), "--init", str(tiny_model_dir), "--model-dir", str(out),
          *TINY_FLAGS])
    best = json.loads((out / "eval_results.json").read_text())["best"]
    with open(out / "predictions.csv", newline="") as f:
        predictions = list(csv.DictReader(f))
    assert [p["id"] for p in predictions] == [str(i) for i in range(6)]
    assert all(p["pred"] in {"0", "1", "2", "3"} for p in predictions)
    # the file's choices are the saved model's own (SWAG's input: sent1, then sent2 + " " + each ending)
    own = load_task_model(out).predict_choices({"text_a": [r[0] for r in rows[:6]],
                                                "choices": [[f"{r[1]} {e}" for e in r[2]] for r in rows[:6]]})
    assert [int(p["pred"]) for p in predictions] == own.tolist()
    # accuracy recomputed from the file against the validation labels
    assert best["accuracy"] == pytest.approx(np.mean([int(p["pred"]) == rows[i][3] for i, p in enumerate(predictions)]))
