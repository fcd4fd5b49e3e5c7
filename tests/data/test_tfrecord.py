"""Task TFRecords (kbert.data.tfrecord): every kind written with tf.io.TFRecordWriter reads back through
make_dataset as the example dicts it came from, single records and ragged batches; unlabelled rows
read as -1 / NaN."""

import math

import pytest
import tensorflow as tf

from kbert.data.tfrecord import KINDS, encode_example, make_dataset

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
