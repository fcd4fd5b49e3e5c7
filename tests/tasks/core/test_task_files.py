"""kbert.tasks.core.task_files: task names to a file and a reader for pipelines/task_data.py (the
records it writes are checked in tests/pipelines/test_task_data.py)."""

import os

import pytest

from conftest import SHARED
from kbert.data.glue import read_glue
from kbert.tasks.core.task_files import resolve_task


def test_a_glue_split_is_the_file_in_the_task_folder():
    spec = resolve_task("glue/mrpc", SHARED / "glue" / "MRPC", "dev", text_columns=["ignored"], doc_stride=3)
    assert spec.path == os.path.join(SHARED / "glue" / "MRPC", "dev.tsv")  # other types' options ignored
    assert (spec.name, spec.kind) == ("glue/mrpc", "classification")
    assert resolve_task("glue/stsb", SHARED / "glue" / "STS-B", "dev").kind == "regression"
    dev = resolve_task("glue/mrpc", SHARED / "glue" / "MRPC", "dev")
    assert dev.read(dev.path).examples == read_glue("mrpc", "dev", SHARED / "glue" / "MRPC").examples


def test_input_path_overrides_and_what_each_task_needs(tmp_path):
    assert resolve_task("glue/mrpc", "elsewhere", "dev", input_path=tmp_path / "x.tsv").path == str(tmp_path / "x.tsv")
    with pytest.raises(ValueError, match="task 'glue/mrpc' needs data_dir or input_path"):
        resolve_task("glue/mrpc")
    with pytest.raises(ValueError, match="task 'csv' needs text_columns"):
        resolve_task("csv", tmp_path)
    table = resolve_task("csv", input_path=tmp_path / "t.csv", text_columns=["text"], regression=True)
    assert (table.path, table.kind) == (str(tmp_path / "t.csv"), "regression")
    with pytest.raises(ValueError, match="'jglue/jsts' has no TFRecord pipeline; fine-tune it from its files"):
        resolve_task("jglue/jsts", SHARED / "jglue" / "jsts")
