"""Pre-training records (kbert.data.pretraining.record_dataset): each input pipeline reads the files
``Dataset.shard(n, i)`` would give it, held-out data once and in order; too few or only empty shards
for a pipeline fail before any work. (The masked batches: tests/models/test_pretrainer.py, the damage:
tests/test_reliability_data.py.)"""

import pathlib

import pytest
import tensorflow as tf

from kbert.data.pretraining import list_files, record_dataset
from kbert.errors import DataError


def _shards(tmp_path, counts):
    for s, count in enumerate(counts):
        with tf.io.TFRecordWriter(str(tmp_path / f"p-{s:05d}.tfrecord")) as writer:
            for r in range(count):
                writer.write(f"{s}:{r}".encode())
    return str(tmp_path / "p-*.tfrecord")


def test_each_input_pipeline_reads_its_share_of_the_files(tmp_path):
    counts = [2, 1, 3, 2, 1]
    pattern = _shards(tmp_path, counts)
    files = list_files(pattern)
    assert files == sorted(files) and len(files) == 5

    def records_of(names):  # shard s holds "s:0", "s:1", ...
        shards = [int(pathlib.Path(name).stem.split("-")[1]) for name in names]
        return sorted(f"{s}:{r}" for s in shards for r in range(counts[s]))

    assert sorted(r.numpy().decode() for r in record_dataset(pattern, is_training=False)) == records_of(files)
    for i in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=i)
        got = [r.numpy().decode() for r in record_dataset(pattern, is_training=False, input_context=context)]
        share = [f.decode() for f in tf.data.Dataset.from_tensor_slices(files).shard(2, i).as_numpy_iterator()]
        assert sorted(got) == records_of(share)


def test_held_out_data_is_read_once_and_in_file_order(tmp_path):
    pattern = _shards(tmp_path, [3])
    held_out = record_dataset(pattern, is_training=False).take(4)  # take: a repeated dataset would not end
    assert [r.numpy() for r in held_out] == [b"0:0", b"0:1", b"0:2"]
    training = record_dataset(pattern, is_training=True, seed=0).take(7)
    assert len(list(training)) == 7  # repeated when training


def test_pipelines_without_records_fail_before_any_work(tmp_path):
    pattern = _shards(tmp_path, [2, 0, 2, 0])
    with pytest.raises(ValueError, match="4 file\\(s\\) for 5 input pipelines"):
        record_dataset(pattern, input_context=tf.distribute.InputContext(num_input_pipelines=5, input_pipeline_id=0))
    with pytest.raises(DataError, match="records for input pipeline 1 of 2"):
        record_dataset(pattern, input_context=tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1))
    with pytest.raises(FileNotFoundError, match="no pre-training files match"):
        record_dataset(str(tmp_path / "none-*.tfrecord"))
