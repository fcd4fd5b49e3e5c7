"""Checked TFRecord reading (kbert.data.records): a truncated file is named with the record and byte
offset that TFRecord's framing puts it at (length 8 + CRC 4 + data + CRC 4 bytes per record, computed
here), or skipped and counted; inputs that match nothing or only empty files fail before any work.

Every kind of damage (tests/fixtures/tiny_records.py: truncated inside a record's data or header, a
flipped byte in a record's data (CRC) or length field, garbage appended), read through the
pre-training reader, is named with its file, record index and byte offset, where an independent
framing walk puts that record; intact files read exactly as tf.data's own reader reads them.
(Damaged shards through the whole pre-training pipeline: tests/data/test_pretraining.py; through the
task-data reader: tests/data/test_tfrecord.py.)"""

import os
import struct

import pytest
import tensorflow as tf

from fixtures.tiny_records import DAMAGE, damaged, write_records
from kbert.data import records
from kbert.data.pretraining import record_dataset
from kbert.data.records import CorruptRecordError, explain_data_errors
from kbert.errors import DataError

PAYLOADS = [b"a" * n for n in (3, 10, 0, 7, 25)]


def _write(path, payloads=PAYLOADS):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for payload in payloads:
            writer.write(payload)
    return path


def _read(path, **kwargs):
    files, sizes = records.list_files_and_sizes(str(path))
    return [r.numpy() for r in records.read_files(files, sizes, **kwargs)]


def test_a_truncated_file_is_named_at_the_record_where_it_breaks(tmp_path):
    path = _write(tmp_path / "a.tfrecord")
    data = path.read_bytes()
    starts = [sum(len(p) + 16 for p in PAYLOADS[:i]) for i in range(len(PAYLOADS) + 1)]
    assert starts[-1] == len(data)  # the framing as documented
    path.write_bytes(data[:starts[3] + 9])  # inside record 3's length CRC
    with pytest.raises(records.CorruptRecordError) as e, records.explain_data_errors():
        _read(path)
    assert (e.value.index, e.value.offset, e.value.size) == (3, starts[3], starts[3] + 9)
    assert str(path) in str(e.value) and "--skip-bad-records" in str(e.value)


def test_skipping_keeps_every_readable_record_and_counts_the_file(tmp_path, capfd):
    path = _write(tmp_path / "a.tfrecord")
    data = path.read_bytes()
    path.write_bytes(data[:-2])  # the last record's data CRC cut short
    _write(tmp_path / "b.tfrecord", [b"intact"])
    counter = records.BadRecordCounter()
    files, sizes = records.list_files_and_sizes(str(tmp_path / "*.tfrecord"))
    got = [r.numpy() for r in records.read_files(files, sizes, skip_bad_records=True, bad_record_counter=counter)]
    assert sorted(got) == sorted(PAYLOADS[:-1] + [b"intact"])
    assert counter.count == 1
    assert "skipping damaged TFRecord data in" in capfd.readouterr().err
    assert _read(tmp_path / "b.tfrecord") == [b"intact"]


def test_nothing_matching_and_only_empty_files_fail_before_any_work(tmp_path):
    with pytest.raises(FileNotFoundError, match="no task-data files match"):
        records.list_files_and_sizes(str(tmp_path / "*.tfrecord"), "task-data")
    (tmp_path / "a.tfrecord").write_bytes(b"")
    (tmp_path / "b.tfrecord").write_bytes(b"")
    with pytest.raises(DataError, match=r"2 matching file\(s\), all empty"):
        records.list_files_and_sizes([str(tmp_path / "a.tfrecord"), str(tmp_path / "b.*")])
    (tmp_path / "dir.tfrecord").mkdir()
    with pytest.raises(DataError, match="not a directory"):
        records.list_files_and_sizes(str(tmp_path / "*.tfrecord"))


# -- damage of every kind, through the pre-training reader ------------------------------------------
def frame_offsets(data: bytes):
    """Independent framing walk (header lengths only): start offsets of the records."""
    offsets, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        offsets.append(pos)
        pos += 12 + length + 4
    return offsets


def _count_records(pattern, **kwargs):
    with explain_data_errors():
        return sum(1 for _ in record_dataset(pattern, is_training=False, **kwargs))


@pytest.mark.parametrize("name", list(DAMAGE))
def test_damaged_shard_is_named_with_record_and_offset(tmp_path, name):
    write_records(tmp_path / "a-good.tfrecord", 10, seed=2)
    bad, index, offsets = damaged(tmp_path, name)
    with pytest.raises(CorruptRecordError) as info:
        _count_records(str(tmp_path / "*.tfrecord"))
    error = info.value
    assert error.file == str(bad) and error.index == index and error.offset == offsets[index]
    assert error.size == os.path.getsize(bad)
    message = str(error)
    assert str(bad) in message and f"record {index}" in message and f"byte offset {offsets[index]}" in message
    assert "--skip-bad-records" in message
    if name != "garbage appended":  # the independent framing walk agrees on where records start
        assert frame_offsets(bad.read_bytes())[:index] == offsets[:index]


def test_intact_files_read_exactly_as_before(tmp_path):
    """The checked reader yields the records of tf.data.TFRecordDataset, in order."""
    from kbert.data.pretraining import checked_records

    write_records(tmp_path / "x.tfrecord", 25, seed=3)
    (tmp_path / "empty.tfrecord").write_bytes(b"")
    for f in ("x.tfrecord", "empty.tfrecord"):
        path = str(tmp_path / f)
        mine = [r.numpy() for r in checked_records(path, os.path.getsize(path))]
        assert mine == [r.numpy() for r in tf.data.TFRecordDataset(path)]
