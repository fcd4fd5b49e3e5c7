"""Checked TFRecord reading (kbert.data.records): a truncated file is named with the record and byte
offset that TFRecord's framing puts it at (length 8 + CRC 4 + data + CRC 4 bytes per record, computed
here), or skipped and counted; inputs that match nothing or only empty files fail before any work.
(Damage of every kind, through the pre-training and task readers: tests/test_reliability_data.py.)"""

import pytest
import tensorflow as tf

from kbert.data import records
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
