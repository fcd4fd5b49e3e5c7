"""Reading task files: bytes -> UTF-8 text -> lines -> rows, every failure a DataError.

The readers take either a path or the file's bytes (`data=`), so a Beam worker can hand them bytes
it read through its own file system layer (GCS, HDFS, ...) while error messages still name the file.
"""

from __future__ import annotations

import csv
import io
import json
import re

from kbert.errors import DataError

_BOM = "\ufeff"
_SURROGATE = re.compile("[\ud800-\udfff]")


def read_bytes(path, data: bytes | None = None) -> bytes:
    if data is not None:
        return data
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise DataError(path, "an existing file", value="file not found") from None


def decode_utf8(raw: bytes, path) -> str:
    """Decodes UTF-8, dropping one leading BOM (GLUE's MRPC files start with one)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        bad = raw[e.start:e.end]
        raise DataError(path, "UTF-8 text", line=line, field="bytes", value=bad) from None
    return text[1:] if text.startswith(_BOM) else text


def read_text(path, data: bytes | None = None) -> str:
    text = decode_utf8(read_bytes(path, data), path)
    if not text.strip():
        raise DataError(path, "a non-empty file", value="empty file" if not text else "only whitespace")
    return text


def split_lines(text: str) -> list:
    """Splits on LF only (and drops a CR before it).

    str.splitlines() is not used on purpose: it also breaks at U+0085, U+2028, U+001C..U+001E,
    VT and FF, which occur inside real sentences.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def tsv_rows(path, data: bytes | None = None):
    """Yields (1-based line number, fields) of a tab-separated file without quoting.

    GLUE's files are not CSV: a '"' is an ordinary character, so no csv module here. Trailing
    empty lines are ignored; an empty line inside the file is a row with one empty field (the
    caller's column-count check then names it).
    """
    lines = split_lines(read_text(path, data))
    while lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        yield number, line.split("\t")


def csv_rows(path, data: bytes | None = None, delimiter: str = ","):
    """Yields (1-based line number where the record starts, fields) of an RFC 4180 CSV file.

    Uses the csv module (quoted fields may hold delimiters and newlines). Fully empty lines are
    skipped, as csv.reader yields them as [].
    """
    text = read_text(path, data)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    start = 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise DataError(path, "a well-formed CSV record", line=start, field="record",
                            value=str(e)) from None
        if fields:
            yield start, fields
        start = reader.line_num + 1


def check_columns(path, line: int, fields: list, expected: int, header=None) -> None:
    if len(fields) != expected:
        names = f" ({', '.join(header)})" if header else ""
        raise DataError(path, f"{expected} columns{names}", line=line,
                        field=f"row with {len(fields)} columns", value="\t".join(fields))


def header_index(path, header: list, name: str, line: int = 1) -> int:
    try:
        return header.index(name)
    except ValueError:
        raise DataError(path, f"a header with a column named {name!r}", line=line, field="header",
                        value=header) from None


def json_lines(path, data: bytes | None = None):
    """Yields (1-based line number, object) for each non-blank line of a JSON-lines file."""
    for number, line in enumerate(split_lines(read_text(path, data)), start=1):
        if not line.strip():
            continue
        record = load_json(path, line, "one JSON object per line", line=number)
        if not isinstance(record, dict):
            raise DataError(path, "a JSON object", line=number, field="record", value=record)
        yield number, record


# No task file nests deeper (SQuAD: 6 levels); deeper nesting would reach Python's recursion limit in
# json.loads, or later in whatever walks or prints the value.
MAX_JSON_DEPTH = 100


def load_json(path, text: str, expected: str = "valid JSON", *, line: int | None = None):
    """``text`` parsed as JSON and checked (nested at most MAX_JSON_DEPTH levels, no lone surrogate);
    otherwise a DataError naming the file and the line (``line``: the line ``text`` is, in a file of
    JSON lines; else where the parser stopped)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(path, expected, line=e.lineno if line is None else line, field=f"column {e.colno}",
                        value=e.msg) from None
    except RecursionError:
        too_deep = True
    else:
        too_deep = _depth_over(value, MAX_JSON_DEPTH)
    if too_deep:
        raise DataError(path, f"JSON nested at most {MAX_JSON_DEPTH} levels deep", line=line,
                        value="deeper nesting")
    check_no_surrogates(path, value, line=line)
    return value


def _depth_over(value, limit: int) -> bool:
    """Whether lists and objects nest more than ``limit`` levels in ``value`` (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def lone_surrogate_field(value, where: str = ""):
    """``(field, string)`` of the first string in ``value`` (JSON data) holding a lone surrogate
    (``"\\ud800"`` escapes: valid JSON, but no UTF-8 text), e.g. ``("text", ...)`` or
    ``("labels[2]", ...)``; None if there is none."""
    if isinstance(value, str):
        return (where or "value", value) if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            found = lone_surrogate_field(key, where or "key") or lone_surrogate_field(
                item, f"{where}.{key}" if where else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = lone_surrogate_field(item, f"{where}[{i}]")
            if found:
                return found
    return None


def check_no_surrogates(path, value, line=None, record=None) -> None:
    """A DataError naming file, line and field if a JSON string holds a lone surrogate."""
    found = lone_surrogate_field(value)
    if found:
        raise DataError(path, "text without lone surrogates (a \\ud800-\\udfff escape that is not half of a pair)",
                        line=line, record=record, field=found[0], value=found[1])
