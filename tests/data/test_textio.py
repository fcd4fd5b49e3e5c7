"""Task file text (kbert.data.textio): UTF-8 with one BOM dropped, lines split on LF only, TSV without
quoting, CSV records numbered by the line they start on, JSON lines without lone surrogates; each
failure a DataError naming the file, line and field."""

import pytest

from kbert.data.textio import (check_columns, csv_rows, decode_utf8, header_index, json_lines, read_text,
                               split_lines, tsv_rows)
from kbert.errors import DataError


def test_lines_break_at_lf_only_where_str_splitlines_would_break_sentences():
    text = "a\u2028b\u0085c\x0cd\r\ne\n"
    assert text.splitlines() != ["a\u2028b\u0085c\x0cd", "e"]  # what str.splitlines does differs
    assert split_lines(text) == ["a\u2028b\u0085c\x0cd", "e"]
    assert split_lines("a\n\n") == ["a", ""]


def test_one_bom_is_dropped_and_bad_utf8_names_its_line():
    assert decode_utf8("\ufeff\ufeffx".encode(), "f.tsv") == "\ufeffx"
    with pytest.raises(DataError) as e:
        decode_utf8(b"ok\nok\nbad \xff here\n", "f.tsv")
    assert "line 3" in str(e.value) and "UTF-8" in str(e.value)


def test_empty_missing_and_whitespace_files(tmp_path):
    with pytest.raises(DataError, match="empty file"):
        read_text(tmp_path / "e.tsv", data=b"")
    with pytest.raises(DataError, match="only whitespace"):
        read_text(tmp_path / "e.tsv", data=b" \n\t\n")
    with pytest.raises(DataError, match="file not found"):
        read_text(tmp_path / "missing.tsv")


def test_tsv_quotes_are_characters_and_trailing_blank_lines_are_dropped():
    rows = list(tsv_rows("f.tsv", data=b'"a\tb"\tc\n\nd\te\n\n\n'))
    assert rows == [(1, ['"a', 'b"', "c"]), (2, [""]), (3, ["d", "e"])]


def test_csv_records_are_numbered_by_their_first_line():
    data = b'text,label\n"two\nlines, one field",1\n\nplain,0\n'
    assert list(csv_rows("f.csv", data=data)) == [
        (1, ["text", "label"]), (2, ["two\nlines, one field", "1"]), (5, ["plain", "0"])]
    with pytest.raises(DataError, match="line 2"):
        list(csv_rows("f.csv", data=b'a,b\n"x"y,1\n'))


def test_columns_and_header_errors_name_the_row():
    check_columns("f.tsv", 4, ["a", "b"], 2)
    with pytest.raises(DataError) as e:
        check_columns("f.tsv", 4, ["a", "b"], 3, header=["x", "y", "z"])
    assert (e.value.line, e.value.expected, e.value.value) == (4, "3 columns (x, y, z)", "a\tb")
    assert header_index("f.tsv", ["id", "label"], "label") == 1
    with pytest.raises(DataError, match="'sentence'"):
        header_index("f.tsv", ["id", "label"], "sentence")


def test_json_lines_skip_blank_lines_and_refuse_lone_surrogates():
    data = b'{"text": "a"}\n\n  \n{"text": "b"}\n'
    assert list(json_lines("f.jsonl", data=data)) == [(1, {"text": "a"}), (4, {"text": "b"})]
    with pytest.raises(DataError, match="labels\\[1\\]"):
        list(json_lines("f.jsonl", data=b'{"text": "a"}\n{"labels": ["x", "\\ud800"]}\n'))
    with pytest.raises(DataError, match="a JSON object"):
        list(json_lines("f.jsonl", data=b"[1, 2]\n"))


def test_json_nested_too_deep_is_a_data_error_naming_the_line():
    # Found by the fuzz tier (tests/fuzz/test_tables.py): json.loads' RecursionError escaped json_lines.
    deep = b'{"text": "a"}\n{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    with pytest.raises(DataError, match=r"^rows.jsonl, line 2: .*expected JSON nested at most 100 levels deep"):
        list(json_lines("rows.jsonl", deep))
    # 500 levels: json.loads reads them, but what walks or prints the value may not (repr, the surrogate check)
    medium = b'{"text": ' + b"[" * 500 + b"]" * 500 + b"}\n"
    with pytest.raises(DataError, match="nested at most 100 levels"):
        list(json_lines("rows.jsonl", medium))
    assert list(json_lines("rows.jsonl", b'{"text": ' + b"[" * 99 + b"]" * 99 + b"}\n")) == [
        (1, {"text": eval("[" * 99 + "]" * 99)})]
