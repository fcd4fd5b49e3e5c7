"""Fuzz target: CSV / TSV / JSONL tables (``read_table``, ``kbert finetune --task table``), made from SST-2's
first rows and mutated: lines and bytes (tests/fixtures/file_mutations.py) and, for JSONL, each record's
structure (wrong types, deep nesting, duplicate ids). The oracle (tests/fixtures/fuzz_harness.py): rows,
the unmutated file's where only a BOM was put first, or one ``kbert.Error`` line naming the file."""

import csv
import io
import json
import pathlib

from hypothesis import strategies as st

from conftest import SHARED
from fixtures.file_mutations import (byte_mutations, first_lines, json_mutations, mutate, mutate_bytes,
                                     mutate_json, mutations)
from fixtures.fuzz_harness import fuzz, read_or_error
from kbert.data.table import read_table

BOM = b"\xef\xbb\xbf"


def _records():
    lines = first_lines(SHARED / "glue" / "SST-2" / "dev.tsv", 12)[1:]
    return [{"id": f"r{i}", "sentence": s, "label": label}
            for i, (s, label) in enumerate(line.decode("utf-8").rstrip("\n").split("\t") for line in lines)]


def _table(records, fmt) -> bytes:
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    if fmt == "tsv":
        rows = [list(records[0])] + [list(r.values()) for r in records]
        return "".join("\t".join(row) + "\n" for row in rows).encode("utf-8")
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(records[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return out.getvalue().encode("utf-8")


OPTIONS = [dict(), dict(id_column="id"), dict(multi_label=True), dict(regression=True),
           dict(label_required=False), dict(label_names=("0", "1"))]


def test_tables(request):
    records = _records()
    tables = {fmt: (pathlib.Path(f"fuzz/table.{fmt}"), _table(records, fmt)) for fmt in ("csv", "tsv", "jsonl")}
    read = {(fmt, i): (lambda fmt=fmt, opts=opts, data=None: read_table(
        tables[fmt][0], "sentence", "label", data=data, **opts)) for fmt in tables for i, opts in enumerate(OPTIONS)}
    reference = {key: r(data=tables[key[0]][1]).examples for key, r in read.items()}

    def check(value):
        key, (kind, ops) = value
        path, data = tables[key[0]]
        if kind == "bom":
            assert read[key](data=BOM + data).examples == reference[key]
            return
        if key[0] == "jsonl" and ops[2]:
            data = b"".join(mutate_json(r, ops[2]) + b"\n" for r in records)
        data = mutate_bytes(mutate(data.splitlines(keepends=True), ops[0]), ops[1])
        result = read_or_error(lambda: read[key](data=data), path)
        assert result is None or result.examples

    damage = st.tuples(mutations(), byte_mutations(), st.one_of(st.just([]), json_mutations()))
    fuzz(request, st.tuples(st.sampled_from(sorted(read)), st.one_of(st.just(("bom", None)),
                                                                      st.tuples(st.just("damage"), damage))),
         check, weight=8)
