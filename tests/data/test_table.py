"""Generic CSV/TSV/JSONL readers (fixtures written here: no such files in shared data; SWAG: tests/data/test_swag.py);
a multi-label row cannot name an empty class (``[""]``), while ``[]`` means none of the labels."""

import pytest

from kbert.data.table import read_table
from kbert.errors import DataError
from fixtures.task_runs import write_jsonl_rows


def test_csv_tsv_jsonl_agree(tmp_path):
    (tmp_path / "a.csv").write_text('text,other,label\n"Hello, ""world""",x,pos\nBye,y,neg\n')
    (tmp_path / "a.tsv").write_text('text\tother\tlabel\n"Hello, ""world"""\tx\tpos\nBye\ty\tneg\n')
    (tmp_path / "a.jsonl").write_text('{"text": "Hello, \\"world\\"", "other": "x", "label": "pos"}\n\n'
                                      '{"text": "Bye", "other": "y", "label": "neg"}\n')
    csv_data = read_table(tmp_path / "a.csv", ["text", "other"], "label")
    assert csv_data.label_names == ("neg", "pos")
    assert csv_data.examples[0] == {"id": "2", "text_a": 'Hello, "world"', "text_b": "x", "label": 1}
    tsv_data = read_table(tmp_path / "a.tsv", "text", "label")
    assert tsv_data.examples[0]["text_a"] == '"Hello, ""world"""'  # TSV: no quoting
    jsonl = read_table(tmp_path / "a.jsonl", ["text", "other"], "label", label_names=["pos", "neg"])
    assert [e["label"] for e in jsonl.examples] == [0, 1]
    assert jsonl.examples[0]["text_a"] == 'Hello, "world"' and jsonl.examples[1]["id"] == "3"


def test_labels_numeric_sort_regression_and_unlabelled(tmp_path):
    (tmp_path / "n.jsonl").write_text("".join(
        f'{{"id": "r{i}", "t": "x", "y": {y}}}\n' for i, y in enumerate([10, 2, 2, 1])))
    data = read_table(tmp_path / "n.jsonl", "t", "y", id_column="id")
    assert data.label_names == ("1", "2", "10")
    assert [e["label"] for e in data.examples] == [2, 1, 1, 0] and data.examples[0]["id"] == "r0"
    reg = read_table(tmp_path / "n.jsonl", "t", "y", regression=True)
    assert [e["label"] for e in reg.examples] == [10.0, 2.0, 2.0, 1.0] and reg.label_names is None
    unl = read_table(tmp_path / "n.jsonl", "t")
    assert unl.label_names is None and unl.examples[0]["label"] is None


@pytest.mark.parametrize("name,content,kwargs,match", [
    ("b.jsonl", '{"t": "a", "y": "p"}\n{"t": "a", "y": "p"\n', {}, r"b.jsonl, line 2.*one JSON object"),
    ("b.jsonl", '{"t": "a", "y": "p"}\n["t"]\n', {}, r"line 2: field 'record'.*JSON object"),
    ("b.jsonl", '{"t": "a", "y": "p"}\n{"t": 5, "y": "p"}\n', {}, r"line 2: field 't': got 5"),
    ("b.jsonl", '{"t": "a", "y": "p"}\n{"t": "b"}\n', {}, r"line 2: field 'y': missing"),
    ("b.csv", "t,y\na,p\nb,q\n", {"label_names": ["p"]}, r"b.csv, line 3: field 'y': got 'q'; expected one of 'p'"),
    ("b.csv", "t,y\na,1.5\nb,1.x\n", {"regression": True}, r"line 3: field 'y': got '1.x'"),
    ("b.tsv", "t\ty\na\tp\nb\n", {}, r"b.tsv, line 3: field 'row with 1 columns'"),
    ("b.csv", "t,y\n", {}, r"b.csv \(whole file\).*at least one data row"),
    ("b.jsonl", "", {}, r"non-empty file"),
])
def test_table_errors(tmp_path, name, content, kwargs, match):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DataError, match=match):
        read_table(path, "t", "y", **kwargs)


def test_table_bad_utf8(tmp_path):
    path = tmp_path / "u.csv"
    path.write_bytes(b"t,y\na,p\n\xe9t\xe9,p\n")
    with pytest.raises(DataError, match=r"u.csv, line 3: field 'bytes'.*UTF-8"):
        read_table(path, "t", "y")


def test_training_labels_cannot_name_an_empty_class(tmp_path):
    path = write_jsonl_rows(tmp_path / "train.jsonl", [{"text": "a", "labels": ["art", "place"]},
                                                       {"text": "b", "labels": [""]}, {"text": "c", "labels": []}])
    with pytest.raises(DataError, match=r"line 2: field 'labels': got ''; expected a non-empty label name"):
        read_table(path, "text", "labels", multi_label=True)
    path = write_jsonl_rows(tmp_path / "train.jsonl", [{"text": "a", "labels": ["art"]}, {"text": "c", "labels": []}])
    assert read_table(path, "text", "labels", multi_label=True).label_names == ("art",)  # [] still means none
