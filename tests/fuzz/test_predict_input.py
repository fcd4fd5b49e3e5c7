"""Fuzz target: ``kbert predict``'s input rows for a classification model (kbert.tasks.classification's
``read_prediction_input``, then kbert.tasks.core.predict's id check): SST-2's first rows as a GLUE TSV,
CSV, TSV and JSONL with an id column, mutated (tests/fixtures/file_mutations.py). The oracle
(tests/fixtures/fuzz_harness.py): rows, or one ``kbert.Error`` line naming the file."""

import csv
import io
import json

from hypothesis import strategies as st

from conftest import SHARED
from fixtures.file_mutations import (byte_mutations, first_lines, json_mutations, mutate, mutate_bytes,
                                     mutate_json, mutations)
from fixtures.fuzz_harness import fuzz, read_or_error
from kbert.tasks.classification.predict import ClassificationPrediction
from kbert.tasks.core.predict import check_unique_ids
from kbert.tasks.core.prediction import PredictOptions

TASK_META = {"type": "text_classifier", "num_segments": 1, "label_names": ["0", "1"],
             "info": {"task_name": "glue/sst2", "text_columns": ["sentence"]}}


def _inputs():
    glue = b"".join(first_lines(SHARED / "glue" / "SST-2" / "dev.tsv", 12))
    records = [{"id": f"r{i}", "sentence": line.decode("utf-8").split("\t")[0]}
               for i, line in enumerate(glue.splitlines()[1:])]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["id", "sentence"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return records, {
        "glue.tsv": (glue, None), "rows.csv": (out.getvalue().encode("utf-8"), "id"),
        "rows.tsv": ("".join(f"{r['id']}\t{r['sentence']}\n" for r in [{"id": "id", "sentence": "sentence"}]
                             + records).encode("utf-8"), "id"),
        "rows.jsonl": ("".join(json.dumps(r) + "\n" for r in records).encode("utf-8"), "id")}


def test_predict_input_rows(request, tmp_path):
    records, inputs = _inputs()
    reader = ClassificationPrediction()
    for name, (data, id_column) in inputs.items():  # unmutated, every input reads its 11 rows
        (tmp_path / name).write_bytes(data)
        rows = reader.read_prediction_input(TASK_META, tmp_path / name, PredictOptions(id_column=id_column))
        assert [e["text_a"] for e in rows.examples] == [r["sentence"] for r in records], name

    def check(value):
        name, (line_ops, byte_ops, json_ops) = value
        data, id_column = inputs[name]
        if name.endswith(".jsonl") and json_ops:
            data = b"".join(mutate_json(r, json_ops) + b"\n" for r in records)
        path = tmp_path / name
        path.write_bytes(mutate_bytes(mutate(data.splitlines(keepends=True), line_ops), byte_ops))
        options = PredictOptions(id_column=id_column)

        def read():
            rows = reader.read_prediction_input(TASK_META, path, options)
            check_unique_ids(path, rows.examples)
            return rows

        result = read_or_error(read, path)
        assert result is None or all(isinstance(e["text_a"], str) for e in result.examples)

    strategy = st.tuples(st.sampled_from(sorted(inputs)),
                         st.tuples(mutations(), byte_mutations(), st.one_of(st.just([]), json_mutations())))
    fuzz(request, strategy, check, weight=2)
