"""SWAG CSV and generic CSV/TSV/JSONL readers (fixtures written here: no such files in shared data)."""

import csv

import pytest

from kbert.data.swag import read_swag
from kbert.data.table import read_table
from kbert.errors import DataError

SWAG_HEADER = ["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source",
               "ending0", "ending1", "ending2", "ending3", "label"]
SWAG_ROWS = [
    ["0", "anetv_jkn6uvmqwh4", "3416", "Members of the procession walk down the street holding small "
     "horn brass instruments. A drum line", "Members of the procession walk down the street holding "
     "small horn brass instruments.", "A drum line", "gold", "passes by walking down the street "
     "playing their instruments.", "has heard approaching them.", "arrives and they're outside "
     "dancing and asleep.", "turns the lead singer watches the performance.", "0"],
    ["1", "lsmdc3001_21_JUMP_STREET-422", "5038", 'He says, "Hi, ma," and kisses her. She', 'He says, '
     '"Hi, ma," and kisses her.', "She", "gen", "smiles, then turns away.", "grins, still\nsmiling.",
     "shakes her head.", "frowns.", "2"],
]


def _swag(tmp_path, rows, header=SWAG_HEADER, name="val.csv"):
    path = tmp_path / name
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_swag_reads_official_columns(tmp_path):
    data = read_swag(_swag(tmp_path, SWAG_ROWS))
    assert len(data.examples) == 2 and data.label_names == ("0", "1", "2", "3")
    first, second = data.examples
    assert first["id"] == "3416" and first["video_id"] == "anetv_jkn6uvmqwh4"
    assert first["context"].startswith("Members of the procession") and first["start_ending"] == "A drum line"
    assert first["endings"][0] == "passes by walking down the street playing their instruments."
    assert first["label"] == 0
    # quoted fields with commas, quotes and a newline survive
    assert second["context"] == 'He says, "Hi, ma," and kisses her.'
    assert second["endings"][1] == "grins, still\nsmiling." and second["label"] == 2


def test_swag_test_file_without_label(tmp_path):
    rows = [r[:-1] for r in SWAG_ROWS]
    data = read_swag(_swag(tmp_path, rows, SWAG_HEADER[:-1], "test.csv"))
    assert [e["label"] for e in data.examples] == [None, None]


def test_swag_errors(tmp_path):
    bad = [SWAG_ROWS[0], SWAG_ROWS[1][:-1] + ["4"]]
    # row 2 starts on line 3 (header is line 1), even though row 2 spans two lines
    with pytest.raises(DataError, match=r"val.csv, line 3: field 'label': got '4'; expected an ending"):
        read_swag(_swag(tmp_path, bad))
    with pytest.raises(DataError, match=r"line 2: field 'record with 11 fields'"):
        read_swag(_swag(tmp_path, [SWAG_ROWS[0][:-1], SWAG_ROWS[1]]))
    with pytest.raises(DataError, match=r"line 1: field 'header'.*'ending3'"):
        read_swag(_swag(tmp_path, [], SWAG_HEADER[:-2]))
    path = tmp_path / "quote.csv"
    path.write_text(",".join(SWAG_HEADER) + '\n0,v,1,s,"a"b,c,g,e0,e1,e2,e3,0\n')
    with pytest.raises(DataError, match=r"quote.csv, line 2: field 'record'.*well-formed CSV"):
        read_swag(path)


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
