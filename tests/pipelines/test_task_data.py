"""pipelines/task_data.py on real files: records read back with kbert.data.tfrecord equal the
reader output."""

import csv
import json

import numpy as np
import pytest

from conftest import SHARED
from fixtures.cli import run_command
from kbert.tasks.core.task_files import resolve_task
from pipelines import task_data


def read_task(name, data_dir, split):
    """The task's reader output for a split: what the pipeline reads (resolve_task's file and reader)."""
    spec = resolve_task(name, data_dir, split)
    return spec.read(spec.path)


def _records(prefix, kind, **kwargs):
    from kbert.data.tfrecord import make_dataset

    return list(make_dataset(f"{prefix}-*.tfrecord", kind, **kwargs).as_numpy_iterator())


def _text(value):
    return value.decode("utf-8")


@pytest.mark.slow
def test_cli_mrpc_dev(tmp_path):
    """The command line ``python -m pipelines.task_data`` (its main through kbert.cli_support.run)."""
    prefix = tmp_path / "mrpc-dev"
    run = run_command("pipelines.task_data", "--task", "glue/mrpc", "--data-dir", SHARED / "glue" / "MRPC",
                      "--split", "dev", "--output", prefix, "--num-shards", "3", "--runner", "DirectRunner")
    assert run.status == 0, run.err[-3000:]
    assert "task_data: glue/mrpc dev: 408 records" in run.out
    assert sorted(p.name for p in tmp_path.glob("mrpc-dev-*")) == [
        f"mrpc-dev-0000{i}-of-00003.tfrecord" for i in range(3)]
    meta = json.loads((tmp_path / "mrpc-dev.meta.json").read_text())
    assert meta["records"] == 408 and meta["label_names"] == ["0", "1"]
    assert meta["kind"] == "classification" and meta["metrics"] == ["accuracy", "f1"]

    expected = {e["id"]: e for e in read_task("glue/mrpc", SHARED / "glue" / "MRPC", "dev").examples}
    records = _records(prefix, "classification")
    assert len(records) == 408
    for r in records:
        e = expected[_text(r["id"])]
        assert (_text(r["text_a"]), _text(r["text_b"]), int(r["label"])) == (
            e["text_a"], e["text_b"], e["label"])
    assert {_text(r["id"]) for r in records} == set(expected)


def test_stsb_regression_and_batched_read(tmp_path):
    meta = task_data.run(["--task", "glue/stsb", "--data-dir", str(SHARED / "glue" / "STS-B"),
                          "--split", "dev", "--output", str(tmp_path / "stsb")])
    assert meta["records"] == 1500 and meta["label_names"] is None and meta["kind"] == "regression"
    expected = {e["id"]: e["label"] for e in read_task("glue/stsb", SHARED / "glue" / "STS-B", "dev").examples}
    batches = _records(tmp_path / "stsb", "regression", batch_size=64)
    assert batches[0]["label"].dtype == np.float32 and batches[0]["label"].shape == (64,)
    ids = [_text(i) for b in batches for i in b["id"]]
    labels = np.concatenate([b["label"] for b in batches])
    assert sorted(ids) == sorted(expected)
    np.testing.assert_allclose(labels, [expected[i] for i in ids], rtol=1e-6)


def test_conll_lists(tmp_path):
    meta = task_data.run(["--task", "conll2003", "--data-dir", str(SHARED / "conll2003"),
                          "--split", "dev", "--output", str(tmp_path / "conll"), "--num-shards", "2"])
    assert meta["records"] == 3250 and meta["label_names"][:3] == ["O", "B-PER", "I-PER"]
    expected = {e["id"]: e for e in read_task("conll2003", SHARED / "conll2003", "valid").examples}
    records = _records(tmp_path / "conll", "conll")
    assert len(records) == 3250
    for r in records:
        e = expected[_text(r["id"])]
        assert [_text(w) for w in r["words"]] == e["words"]
        assert [_text(t) for t in r["tags"]] == e["tags"]
        assert r["labels"].tolist() == e["labels"]


def test_squad_subset(tmp_path):
    full = json.loads((SHARED / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))
    (tmp_path / "dev-v1.1.json").write_text(
        json.dumps({"version": "1.1", "data": full["data"][:2]}, ensure_ascii=False), encoding="utf-8")
    meta = task_data.run(["--task", "squad/v1.1", "--data-dir", str(tmp_path), "--split", "dev",
                          "--output", str(tmp_path / "squad")])
    expected = {e["id"]: e for e in read_task("squad/v1.1", tmp_path, "dev").examples}
    assert meta["records"] == len(expected) > 100
    for r in _records(tmp_path / "squad", "squad"):
        e = expected[_text(r["id"])]
        assert (_text(r["question"]), _text(r["context"])) == (e["question"], e["context"])
        assert [_text(t) for t in r["answer_text"]] == [a["text"] for a in e["answers"]]
        assert r["answer_start"].tolist() == [a["answer_start"] for a in e["answers"]]
        assert r["is_impossible"] == 0


def test_swag_and_table(tmp_path):
    header = ["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source",
              "ending0", "ending1", "ending2", "ending3", "label"]
    with open(tmp_path / "val.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerow(["0", "v1", "17", "He sat. She", "He sat.", "She", "gold", "smiled.", "ran, fast.",
                    'said "hi".', "left.", "2"])
    task_data.run(["--task", "swag", "--data-dir", str(tmp_path), "--split", "dev",
                   "--output", str(tmp_path / "swag")])
    (r,) = _records(tmp_path / "swag", "swag")
    assert [_text(x) for x in r["endings"]] == ["smiled.", "ran, fast.", 'said "hi".', "left."]
    assert (_text(r["id"]), _text(r["context"]), int(r["label"])) == ("17", "He sat.", 2)

    (tmp_path / "t.jsonl").write_text('{"q": "a?", "y": "yes"}\n{"q": "b?", "y": "no"}\n')
    meta = task_data.run(["--task", "table", "--input", str(tmp_path / "t.jsonl"), "--text-columns",
                          "q", "--label-column", "y", "--label-names", "no,yes",
                          "--output", str(tmp_path / "t")])
    assert meta["label_names"] == ["no", "yes"]
    got = {(_text(r["text_a"]), _text(r["text_b"]), int(r["label"])) for r in _records(tmp_path / "t", "classification")}
    assert got == {("a?", "", 1), ("b?", "", 0)}


def test_bad_file_fails_before_the_pipeline(tmp_path):
    from kbert.errors import DataError

    (tmp_path / "train.tsv").write_text("sentence\tlabel\ngood \t1\nbad \tpositive\n")
    with pytest.raises(DataError, match=r"train.tsv, line 3: field 'label'"):
        task_data.run(["--task", "glue/sst2", "--data-dir", str(tmp_path), "--output",
                       str(tmp_path / "out")])
    assert not list(tmp_path.glob("out*"))
    with pytest.raises(ValueError, match="no split 'dev'"):
        resolve_task("glue/mnli", tmp_path, "dev")


def test_unlabelled_records_parse_to_defaults():
    import tensorflow as tf

    from kbert.data.tfrecord import encode_example, feature_spec

    row = {"id": "0", "text_a": "Bill whistled.", "text_b": None, "label": None}
    for kind, check in [("classification", lambda v: v == -1), ("regression", np.isnan)]:
        parsed = tf.io.parse_single_example(encode_example(kind, row).SerializeToString(),
                                            feature_spec(kind))
        assert check(parsed["label"].numpy()) and parsed["text_b"].numpy() == b""
    with pytest.raises(ValueError, match="unknown kind"):
        feature_spec("nope")
