"""Generic task files: CSV (quoted), TSV (no quoting) or JSONL, with named text and label columns."""

from __future__ import annotations

import json
import os

from kbert.data.examples import TaskData
from kbert.data.labels import collect_label_names, label_index, parse_score
from kbert.data.textio import csv_rows, json_lines, tsv_rows
from kbert.errors import DataError, OptionsError

FORMATS = {".csv": "csv", ".tsv": "tsv", ".txt": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}


def _format_of(path, fmt):
    if fmt is not None:
        if fmt not in ("csv", "tsv", "jsonl"):
            raise OptionsError(f"format must be 'csv', 'tsv' or 'jsonl', not {fmt!r}", option="format", value=fmt)
        return fmt
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in FORMATS:
        raise OptionsError(f"cannot tell the format of {os.fspath(path)!r} from its extension; "
                           "pass format='csv', 'tsv' or 'jsonl'", option="format")
    return FORMATS[ext]


def _table_records(path, data, fmt):
    """Yields (line, {column: value}) for each data row."""
    if fmt == "jsonl":
        yield from json_lines(path, data)
        return
    rows = csv_rows(path, data) if fmt == "csv" else tsv_rows(path, data)
    first = next(rows, None)
    if first is None:
        raise DataError(path, "a header line", value="empty file")
    header = first[1]
    for line, fields in rows:
        if len(fields) != len(header):
            raise DataError(path, f"{len(header)} columns ({', '.join(header)})", line=line,
                            field=f"row with {len(fields)} columns", value=fields)
        yield line, dict(zip(header, fields))


def _text(path, line, record, column):
    if column not in record:
        raise DataError(path, f"a {column!r} column", line=line, field=column)
    value = record[column]
    if not isinstance(value, str):
        raise DataError(path, "a string", line=line, field=column, value=value)
    return value


def read_table(path, text_columns, label_column: str | None = None, *, label_names=None,
               regression: bool = False, multi_label: bool = False, label_required: bool = True,
               id_column: str | None = None, format: str | None = None,
               data: bytes | None = None) -> TaskData:
    """Reads a generic text-classification/regression file.

    Args:
      text_columns: one or two column names (text_a, text_b).
      label_column: the label's column, or None for unlabelled data.
      label_names: the label vocabulary (values must be in it); None collects the distinct values
        (sorted; numerically when all are integers). JSON labels are compared as strings
        (1 and "1" are the same label).
      regression: labels are decimal numbers (floats), not classes.
      multi_label: each row holds a set of labels: a JSON list of labels (JSONL), or one label
        (a string: a one-label list; the only form a CSV/TSV cell has). An empty list is allowed
        and means "none of the labels". The vocabulary is then the union over the file.
      label_required: False: rows without the label column get label None (files to predict
        on); labels that are there are still checked against ``label_names``.
      id_column: column with the example id; default "<line number>".
      format: "csv" (RFC 4180 quoting), "tsv" (tab, no quoting) or "jsonl"; default from the
        extension (.csv, .tsv/.txt, .jsonl/.json).

    Returns:
      TaskData whose examples are {"id", "text_a", "text_b", "label"}; a multi-label
      example's label is the sorted tuple of its label indices.
    """
    if isinstance(text_columns, str):
        text_columns = (text_columns,)
    if not 1 <= len(text_columns) <= 2:
        raise OptionsError(f"text_columns must name one or two columns, got {text_columns!r}", option="text_columns",
                           value=text_columns)
    if multi_label and regression:
        raise OptionsError("a table is either multi-label or regression, not both", option="multi_label")
    fmt = _format_of(path, format)
    rows, id_lines = [], {}
    for line, record in _table_records(path, data, fmt):
        texts = [_text(path, line, record, c) for c in text_columns]
        raw_label = None
        if label_column is not None and (label_required or label_column in record):
            raw_label = _raw_label(path, line, record, label_column, multi_label)
        rid = str(record.get(id_column, "")) if id_column else str(line)
        if id_column and id_column not in record:
            raise DataError(path, f"a {id_column!r} column", line=line, field=id_column)
        if id_column and rid in id_lines:
            raise DataError(path, f"a unique id (line {id_lines[rid]} has the same one)", line=line,
                            field=id_column, value=rid)
        id_lines[rid] = line
        rows.append((line, rid, texts, raw_label))
    if not rows:
        raise DataError(path, "at least one data row", value="no rows")

    names = None
    if label_column is not None and not regression:
        names = tuple(label_names) if label_names is not None else collect_label_names(
            value for r in rows if r[3] is not None for value in (r[3] if multi_label else [r[3]]))
    examples = []
    for line, rid, texts, raw in rows:
        label = None
        if raw is not None:
            if regression:
                label = parse_score(path, line, label_column, raw)
            elif multi_label:
                label = tuple(sorted({label_index(path, line, label_column, v, names) for v in raw}))
            else:
                label = label_index(path, line, label_column, raw, names)
        examples.append({"id": rid, "text_a": texts[0], "text_b": texts[1] if len(texts) > 1 else None,
                         "label": label})
    return TaskData(examples, names, str(path), {"format": fmt})


def _raw_label(path, line, record, column, multi_label):
    """The label cell as a string (a list of strings for multi_label); numbers become their JSON
    text."""
    if column not in record:
        raise DataError(path, f"a {column!r} column", line=line, field=column)
    value = record[column]
    if multi_label and isinstance(value, list):
        return [_label_text(path, line, column, v, "a list of string or number labels", non_empty=True)
                for v in value]
    expected = "a label or a list of labels" if multi_label else "a string or number label"
    text = _label_text(path, line, column, value, expected, non_empty=multi_label)
    return [text] if multi_label else text


def _label_text(path, line, column, value, expected, non_empty=False):
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DataError(path, expected, line=line, field=column, value=value)
    if non_empty and isinstance(value, str) and not value.strip():
        # A multi-label class name: "" would become a class of its own (an empty list means no label).
        raise DataError(path, "a non-empty label name (an empty list [] means none of the labels)", line=line,
                        field=column, value=value)
    return value if isinstance(value, str) else json.dumps(value)
