"""SWAG CSV reader (kbert.data.swag) on fixtures written here (no SWAG files in shared data)."""

import csv

import pytest

from kbert.data.swag import read_swag
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
