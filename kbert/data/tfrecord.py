"""TFRecords of raw task text: tf.train.Example encoders, feature specs and a tf.data reader.

One layout per kind (strings are UTF-8 bytes; no token ids on disk):
  classification  id, text_a, text_b ("" if none), label int64 (-1 if unlabelled)
  regression      id, text_a, text_b, label float (NaN if unlabelled)
  squad           id, question, context, answer_text [bytes list], answer_start [int64 list],
                  is_impossible int64
  conll           id, words [bytes list], tags [bytes list], labels [int64 list]
  swag            id, context, start_ending, endings [4 bytes], label int64 (-1 if unlabelled)
Lists parse to 1-D tensors per record, to RaggedTensors when batched.
"""

from __future__ import annotations

import math

import tensorflow as tf

from kbert.data import records

KINDS = ("classification", "regression", "squad", "conll", "swag")


def _bytes(*values):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode("utf-8") for v in values]))


def _ints(*values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))


def _floats(*values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def encode_example(kind: str, example: dict) -> tf.train.Example:
    """A reader's example dict (see kbert.data) as a tf.train.Example of the given kind."""
    if kind in ("classification", "regression"):
        features = {"id": _bytes(example["id"]), "text_a": _bytes(example["text_a"]),
                    "text_b": _bytes(example.get("text_b") or "")}
        if example.get("label") is not None:
            features["label"] = (_floats(example["label"]) if kind == "regression"
                                 else _ints(example["label"]))
    elif kind == "squad":
        answers = example["answers"]
        features = {"id": _bytes(example["id"]), "question": _bytes(example["question"]),
                    "context": _bytes(example["context"]),
                    "answer_text": _bytes(*(a["text"] for a in answers)),
                    "answer_start": _ints(*(a["answer_start"] for a in answers)),
                    "is_impossible": _ints(bool(example.get("is_impossible")))}
    elif kind == "conll":
        features = {"id": _bytes(example["id"]), "words": _bytes(*example["words"]),
                    "tags": _bytes(*example["tags"]), "labels": _ints(*example["labels"])}
    elif kind == "swag":
        features = {"id": _bytes(example["id"]), "context": _bytes(example["context"]),
                    "start_ending": _bytes(example["start_ending"]),
                    "endings": _bytes(*example["endings"])}
        if example.get("label") is not None:
            features["label"] = _ints(example["label"])
    else:
        raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")
    return tf.train.Example(features=tf.train.Features(feature=features))


def feature_spec(kind: str) -> dict:
    """The tf.io parsing spec of a kind."""
    text = lambda: tf.io.FixedLenFeature([], tf.string, default_value="")  # noqa: E731
    if kind == "classification":
        return {"id": text(), "text_a": text(), "text_b": text(),
                "label": tf.io.FixedLenFeature([], tf.int64, default_value=-1)}
    if kind == "regression":
        return {"id": text(), "text_a": text(), "text_b": text(),
                "label": tf.io.FixedLenFeature([], tf.float32, default_value=math.nan)}
    if kind == "squad":
        return {"id": text(), "question": text(), "context": text(),
                "answer_text": tf.io.RaggedFeature(tf.string),
                "answer_start": tf.io.RaggedFeature(tf.int64),
                "is_impossible": tf.io.FixedLenFeature([], tf.int64, default_value=0)}
    if kind == "conll":
        return {"id": text(), "words": tf.io.RaggedFeature(tf.string),
                "tags": tf.io.RaggedFeature(tf.string), "labels": tf.io.RaggedFeature(tf.int64)}
    if kind == "swag":
        return {"id": text(), "context": text(), "start_ending": text(),
                "endings": tf.io.FixedLenFeature([4], tf.string),
                "label": tf.io.FixedLenFeature([], tf.int64, default_value=-1)}
    raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")


def make_dataset(file_pattern, kind: str, *, batch_size: int | None = None,
                 shuffle: bool = False, shuffle_buffer_size: int = 10_000, seed: int | None = None,
                 repeat: bool = False, drop_remainder: bool = False, skip_bad_records: bool = False,
                 bad_record_counter: records.BadRecordCounter | None = None) -> tf.data.Dataset:
    """A tf.data pipeline over TFRecord shards of raw text, yielding dicts of tensors.

    The shards are read with ``kbert.data.records`` (as the pre-training pipeline): no matching
    file or only empty files raise before any work, and a truncated or corrupted shard raises
    ``CorruptRecordError`` naming the file, record and byte offset when the dataset is iterated
    inside ``kbert.data.records.explain_data_errors()`` (outside it, TensorFlow's
    InvalidArgumentError carries the same facts).

    Args:
      file_pattern: a glob (e.g. "out/sst2-train-*.tfrecord"), or a list of files/globs.
      kind: one of KINDS (the layout the pipeline wrote).
      batch_size: None yields single records; otherwise batches (list features become
        RaggedTensors), parsed after batching.
      shuffle: shuffle the file order and the records (buffer shuffle_buffer_size, seed).
      repeat: repeat forever (before batching).
      skip_bad_records: log a damaged shard to stderr and go on without the rest of it (counted
        in ``bad_record_counter``, a ``records.BadRecordCounter``, if given).
    """
    spec = feature_spec(kind)
    files, sizes = records.list_files_and_sizes(file_pattern, "task-data")
    dataset = records.read_files(files, sizes, shuffle_files=shuffle, seed=seed,
                                 deterministic=not shuffle or seed is not None,
                                 skip_bad_records=skip_bad_records, bad_record_counter=bad_record_counter)
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer_size, seed=seed)
    if repeat:
        dataset = dataset.repeat()
    if batch_size is None:
        dataset = dataset.map(lambda s: tf.io.parse_single_example(s, spec),
                              num_parallel_calls=tf.data.AUTOTUNE)
    else:
        dataset = dataset.batch(batch_size, drop_remainder=drop_remainder).map(
            lambda s: tf.io.parse_example(s, spec), num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)
