"""kbert.tasks.classification.predict without a model: which GLUE task a model names, how GLUE files
and tables are read for kbert predict (ids, columns) and the refusals naming the flag."""

import pytest

from kbert.tasks.classification.predict import ClassificationPrediction, glue_task_of
from kbert.tasks.core.prediction import PredictOptions

SST2 = {"type": "text_classifier", "num_segments": 1, "label_names": ["negative", "positive"],
        "info": {"task_name": "glue/sst2"}}
CSV = {"type": "text_classifier", "num_segments": 1, "label_names": ["neg", "pos"],
       "info": {"task_name": "csv", "text_columns": ["review"]}}


def _read(meta, path, **options):
    return ClassificationPrediction().read_prediction_input(meta, path, PredictOptions(**options))


def test_glue_task_of_names_only_glue_tasks():
    assert glue_task_of(SST2).name == "sst2"
    assert glue_task_of({"info": {"task_name": "GLUE/MRPC"}}).name == "mrpc"
    assert glue_task_of(CSV) is None and glue_task_of({}) is None
    assert glue_task_of({"info": {"task_name": "glue/nope"}}) is None


def test_glue_files_keep_their_index_or_number_the_rows(tmp_path):
    test = tmp_path / "test.tsv"
    test.write_text("index\tsentence\n10\tgood film\n11\tbad film\n", encoding="utf-8")
    examples = _read(SST2, test).examples  # a .tsv for a GLUE model: the GLUE format
    assert [(e["id"], e["text_a"]) for e in examples] == [("10", "good film"), ("11", "bad film")]
    dev = tmp_path / "dev.tsv"
    dev.write_text("sentence\tlabel\ngood film \t1\nbad film \t0\n", encoding="utf-8")
    assert [e["id"] for e in _read(SST2, dev).examples] == ["0", "1"]  # no index column: row numbers


def test_tables_read_the_columns_the_model_was_trained_on(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("key,review\nr1,great\nr2,awful\n", encoding="utf-8")
    examples = _read(CSV, path, id_column="key").examples
    assert [(e["id"], e["text_a"]) for e in examples] == [("r1", "great"), ("r2", "awful")]


@pytest.mark.parametrize("meta, options, message", [
    ({**SST2, "type": "text_regressor"}, {"probabilities": True},
     "--probabilities: a regression model predicts a score, not probabilities"),
    (CSV, {"task_format": "glue"}, "--task-format glue needs a model fine-tuned on a GLUE task .* 'csv'"),
    (CSV, {"task_format": "swag"}, "--task-format 'swag': a text_classifier model reads one of glue, csv, tsv, jsonl"),
    (CSV, {"text_columns": ("a", "b")}, "--text-columns a,b: this model takes 1 text"),
])
def test_refusals_name_the_flag(tmp_path, meta, options, message):
    path = tmp_path / "rows.csv"
    path.write_text("review\nok\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        _read(meta, path, **options)
