"""Scale-out, tested: the data pipelines on Beam's Dask runner against a local dask.distributed
cluster of 2 worker processes give the same records as on the DirectRunner (same seed, compared as
sets). The short name ``--runner DaskRunner`` is accepted; the Dask runner has no metrics, so the
pipelines' counters are optional there."""

import glob

import pytest

from conftest import SHARED, UNCASED_VOCAB, require

distributed = require("distributed", reason="the test extra installs apache-beam[dask]")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dask_address():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    try:
        assert len(cluster.workers) == 2
        yield cluster.scheduler_address
    finally:
        cluster.close()


def _records(prefix) -> list:
    """Each tf.train.Example as a hashable (feature name, values) tuple: the serialized bytes
    themselves may differ between processes (a proto map has no fixed order)."""
    import tensorflow as tf

    files = sorted(glob.glob(f"{prefix}-*.tfrecord"))
    assert files, prefix
    out = []
    for record in tf.data.TFRecordDataset(files):
        features = tf.train.Example.FromString(record.numpy()).features.feature
        out.append(tuple(sorted((name, str(feature).strip()) for name, feature in features.items())))
    return out


def test_pretraining_data_on_dask_equals_direct_runner(tmp_path, dask_address):
    from pipelines.pretraining_data import run

    common = ["--input", str(SHARED / "corpus" / "en" / "nltk_gutenberg" / "blake-poems.txt"),
              "--vocab", str(UNCASED_VOCAB), "--format", "prose", "--max-seq-length", "64",
              "--doc-sentences", "8", "--num-shards", "2", "--seed", "7"]
    direct = run([*common, "--output", str(tmp_path / "direct" / "out"), "--runner", "DirectRunner"])
    on_dask = run([*common, "--output", str(tmp_path / "dask" / "out"), "--runner", "DaskRunner",
                   "--dask_client_address", dask_address])
    assert on_dask == {}  # no counters on this runner; the run still succeeds
    assert len(glob.glob(str(tmp_path / "dask" / "out-*-of-00002.tfrecord"))) == 2
    expected = _records(tmp_path / "direct" / "out")
    got = _records(tmp_path / "dask" / "out")
    assert len(got) == len(expected) == direct["instances"] > 50
    assert set(got) == set(expected)


def test_task_data_on_dask_equals_direct_runner(tmp_path, dask_address):
    from pipelines.task_data import run

    common = ["--task", "glue/mrpc", "--data-dir", str(SHARED / "glue" / "MRPC"), "--split", "dev",
              "--num-shards", "2"]
    direct = run([*common, "--output", str(tmp_path / "direct"), "--runner", "DirectRunner"])
    on_dask = run([*common, "--output", str(tmp_path / "dask"), "--runner", "DaskRunner",
                   "--dask_client_address", dask_address])
    assert direct["records"] == on_dask["records"] == 408  # counted from the shards on Dask
    assert set(_records(tmp_path / "dask")) == set(_records(tmp_path / "direct"))
