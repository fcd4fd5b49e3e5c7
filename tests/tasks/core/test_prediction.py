"""kbert.tasks.core.prediction: the JSON-lines and TSV texts of kbert predict on awkward values
(numpy scalars and arrays, NaN, non-ASCII, tabs and line breaks, nested dicts), the atomic write, and
FilePredictor's refusals for a named task's own file."""

import csv
import io
import json

import numpy as np
import pytest

from kbert.tasks.core.prediction import FilePredictor, PredictOptions, jsonl_text, tsv_text, write_jsonl

ROWS = [
    {"id": np.int64(7), "label": "東京", "probabilities": {"pos": np.float32(0.25), "neg": 0.75}},
    {"id": "a\tb", "label": "two\nlines\r\n", "probabilities": {"pos": float("nan"), "neg": 1 / 3},
     "tags": np.array(["B-X", "O"])},
    {"id": 3, "label": None, "extra": {"deep": {"x": 1}}, "scores": (1.0, 2.5)},
]


def test_jsonl_text_one_plain_object_a_line():
    lines = jsonl_text(ROWS).splitlines()
    assert len(lines) == 3 and "東京" in lines[0]  # non-ASCII as it is
    first, second, third = map(json.loads, lines)
    assert first == {"id": 7, "label": "東京", "probabilities": {"pos": 0.25, "neg": 0.75}}
    assert second["probabilities"] == {"pos": None, "neg": round(1 / 3, 6)}  # NaN is no JSON number
    assert second["id"] == "a\tb" and second["label"] == "two\nlines\r\n" and second["tags"] == ["B-X", "O"]
    assert third == {"id": 3, "label": None, "extra": {"deep": {"x": 1}}, "scores": [1.0, 2.5]}
    assert jsonl_text([]) == ""


def test_tsv_text_columns_for_dict_keys_and_no_breaks_inside_a_cell():
    text = tsv_text(ROWS)
    lines = text.split("\n")
    assert lines[-1] == "" and len(lines) == 5  # a header, three rows, a final newline
    rows = list(csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE))
    assert rows[0] == ["id", "label", "probabilities.pos", "probabilities.neg", "tags", "extra.deep", "scores"]
    assert all(len(r) == len(rows[0]) for r in rows)
    assert rows[1] == ["7", "東京", "0.25", "0.75", "", "", ""]
    assert rows[2] == ["a b", "two lines  ", "", str(round(1 / 3, 6)), "B-X O", "", ""]
    assert rows[3][:2] == ["3", ""] and json.loads(rows[3][5]) == {"x": 1} and rows[3][6] == "1.0 2.5"


def test_write_jsonl_is_atomic_and_keeps_full_floats(tmp_path):
    path = tmp_path / "out" / "rows.jsonl"
    assert write_jsonl(path, [{"x": 1 / 3, "t": "é"}]) == path
    assert json.loads(path.read_text(encoding="utf-8")) == {"x": 1 / 3, "t": "é"}

    def broken():
        yield {"x": 1}
        raise RuntimeError("stopped")

    with pytest.raises(RuntimeError):
        write_jsonl(path, broken())
    assert json.loads(path.read_text(encoding="utf-8")) == {"x": 1 / 3, "t": "é"}  # the previous file
    assert [p.name for p in path.parent.iterdir()] == ["rows.jsonl"]


def test_file_predictor_reads_only_its_own_file_and_has_no_probabilities(tmp_path):
    read = []
    predictor = FilePredictor(lambda path, labelled: read.append((path, labelled)) or "data", "klue-ner", "klue/ner")
    assert predictor.input_formats == ("klue-ner",) and predictor.output_formats({}) == ("jsonl", "tsv")
    assert predictor.read_prediction_input({}, "f.tsv", PredictOptions()) == "data"
    assert predictor.read_prediction_input({}, "f.tsv", PredictOptions(task_format="klue-ner")) == "data"
    assert read == [("f.tsv", False)] * 2  # read without labels
    with pytest.raises(ValueError, match=r"--task-format 'csv': a klue/ner model reads its own file \('klue-ner'\)"):
        predictor.read_prediction_input({}, "f.tsv", PredictOptions(task_format="csv"))
    with pytest.raises(ValueError, match="--probabilities: the klue/ner prediction file has none"):
        predictor.read_prediction_input({}, "f.tsv", PredictOptions(probabilities=True))
    rows = [{"id": "1", "tags": ["O", "B-PS"]}]
    assert predictor.format_predictions({}, None, rows, "jsonl") == jsonl_text(rows)
    assert predictor.format_predictions({}, None, rows, "tsv") == "id\ttags\n1\tO B-PS\n"
