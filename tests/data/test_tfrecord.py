"""Task TFRecords (kbert.data.tfrecord): every kind written with tf.io.TFRecordWriter reads back through
make_dataset as the example dicts it came from, single records and ragged batches; unlabelled rows
read as -1 / NaN. A damaged shard among intact ones (each kind of damage in
tests/fixtures/tiny_records.py) is named with its record, batched or not, or skipped and counted with
``skip_bad_records`` (every readable record kept); a glob that matches nothing or only empty shards
fails before any work."""

import math
import os
import re

import pytest
import tensorflow as tf

from fixtures.tiny_records import DAMAGE, write_task_records
from kbert.data.records import BadRecordCounter, CorruptRecordError, explain_data_errors
from kbert.data.tfrecord import KINDS, encode_example, make_dataset
from kbert.errors import DataError

EXAMPLES = {
    "classification": [{"id": "a", "text_a": "Hé", "text_b": "", "label": 1},
                       {"id": "b", "text_a": "x", "text_b": "y", "label": None}],
    "regression": [{"id": "a", "text_a": "p", "text_b": "q", "label": 4.5},
                   {"id": "b", "text_a": "r", "text_b": "s", "label": None}],
    "squad": [{"id": "q1", "question": "who?", "context": "Ann met Bo.",
               "answers": [{"text": "Ann", "answer_start": 0}, {"text": "Bo", "answer_start": 8}]},
              {"id": "q2", "question": "why?", "context": "none", "answers": [], "is_impossible": True}],
    "conll": [{"id": "s1", "words": ["EU", "rejects"], "tags": ["B-ORG", "O"], "labels": [1, 0]},
              {"id": "s2", "words": ["."], "tags": ["O"], "labels": [0]}],
    "swag": [{"id": "v1", "context": "c", "start_ending": "s", "endings": ["e0", "e1", "e2", "e3"], "label": 2},
             {"id": "v2", "context": "d", "start_ending": "t", "endings": ["f0", "f1", "f2", "f3"], "label": None}],
}


def _decoded(record):
    out = {}
    for key, value in record.items():
        value = value.numpy()
        if hasattr(value, "tolist"):
            value = value.tolist()
        out[key] = [v.decode() for v in value] if isinstance(value, list) and value and isinstance(value[0], bytes) \
            else value.decode() if isinstance(value, bytes) else value
    return out


def _expected(kind, example):
    if kind in ("classification", "regression", "swag"):
        label = example["label"]
        return {**example, "label": (math.nan if kind == "regression" else -1) if label is None else label}
    if kind == "squad":
        return {"id": example["id"], "question": example["question"], "context": example["context"],
                "answer_text": [a["text"] for a in example["answers"]],
                "answer_start": [a["answer_start"] for a in example["answers"]],
                "is_impossible": int(bool(example.get("is_impossible")))}
    return example


@pytest.mark.parametrize("kind", KINDS)
def test_written_examples_read_back_as_they_were(tmp_path, kind):
    path = tmp_path / f"{kind}-00000.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for example in EXAMPLES[kind]:
            writer.write(encode_example(kind, example).SerializeToString())
    got = [_decoded(r) for r in make_dataset(str(tmp_path / f"{kind}-*.tfrecord"), kind)]
    for record, example in zip(got, EXAMPLES[kind], strict=True):
        want = _expected(kind, example)
        assert set(record) == set(want)
        for key in want:
            if isinstance(want[key], float):
                assert record[key] == pytest.approx(want[key], nan_ok=True), key
            else:
                assert record[key] == want[key], key
    if kind in ("squad", "conll"):
        batch = next(iter(make_dataset(str(path), kind, batch_size=2)))
        lists = batch["answer_text"] if kind == "squad" else batch["words"]
        assert isinstance(lists, tf.RaggedTensor)
        assert lists.row_lengths().numpy().tolist() == [len(e["answers"] if kind == "squad" else e["words"])
                                                         for e in EXAMPLES[kind]]


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown kind 'ner'"):
        encode_example("ner", {})


# -- damaged, missing and empty shards -----------------------------------------------------------------
@pytest.mark.parametrize("name", list(DAMAGE))
def test_a_damaged_task_data_shard_is_named_or_skipped(tmp_path, name, capfd):
    for i in (0, 2):
        write_task_records(tmp_path / f"sst2-train-0000{i}-of-00003.tfrecord", 10, seed=i)
    bad = tmp_path / "sst2-train-00001-of-00003.tfrecord"
    offsets = write_task_records(bad, 12, seed=1)
    data, index = DAMAGE[name](bad.read_bytes(), offsets)
    bad.write_bytes(data)
    pattern = str(tmp_path / "sst2-train-*.tfrecord")

    for batch_size in (None, 4):
        with pytest.raises(CorruptRecordError) as info, explain_data_errors():
            list(make_dataset(pattern, "classification", batch_size=batch_size))
        error = info.value
        assert (error.file, error.index, error.size) == (str(bad), index, os.path.getsize(bad)), str(error)
        assert str(bad) in str(error) and f"record {index}" in str(error)

    counter = BadRecordCounter()
    got = list(make_dataset(pattern, "classification", shuffle=True, seed=0, skip_bad_records=True,
                            bad_record_counter=counter).as_numpy_iterator())
    ids = sorted(r["id"].decode() for r in got)
    assert ids == sorted([f"sst2-train-0000{i}-of-00003-{j}" for i in (0, 2) for j in range(10)]
                         + [f"sst2-train-00001-of-00003-{j}" for j in range(index)])
    assert counter.count == 1
    assert re.search(rf"skipping damaged TFRecord data in \"?{re.escape(str(bad))}", capfd.readouterr().err)


def test_task_data_reader_refuses_missing_and_empty_shards_before_work(tmp_path):
    with pytest.raises(FileNotFoundError, match="no task-data files match .*none-"):
        make_dataset(str(tmp_path / "none-*.tfrecord"), "classification")
    (tmp_path / "a.tfrecord").write_bytes(b"")
    with pytest.raises(DataError, match=r"1 matching file\(s\), all empty"):
        make_dataset(str(tmp_path / "*.tfrecord"), "classification")
