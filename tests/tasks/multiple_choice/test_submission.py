"""kbert.tasks.multiple_choice.submission: SWAG's predictions.csv read back with the csv module."""

import csv

import numpy as np

from kbert.tasks.multiple_choice.submission import write_swag


def test_write_swag_reads_back(tmp_path):
    ids = ["anetv_jkn6uvmqwh4-0", "lsmdc3001_21_JUMP_STREET-422", "id, with \"comma\""]
    choices = np.array([3, 0, 2], dtype=np.int64)  # numpy ints, as argmax returns them
    path = write_swag(tmp_path / "predictions.csv", ids, choices)
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows == [["id", "pred"], [ids[0], "3"], [ids[1], "0"], [ids[2], "2"]]
