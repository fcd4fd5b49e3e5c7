"""kbert.training.distribute on this CPU: which tf.distribute strategy each --strategy/--tpu/TF_CONFIG
picks, its refusals with their messages, and the cross-replica helpers with one replica and under
another backend. Two replicas (MirroredStrategy on two logical CPUs, MultiWorkerMirrored with two
workers) need a fresh process: tests/models/test_pretrainer.py trains through StrategyReplicas there."""

import json
import urllib.error

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.training import distribute
from kbert.training.distribute import (STRATEGIES, StrategyError, StrategyReplicas, cross_replica_sum,
                                       multi_worker_logs, num_replicas, resolve_strategy)


@pytest.fixture
def no_cluster(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert tf.config.list_logical_devices("GPU") == []  # this machine: one CPU, no GPU


@pytest.fixture
def made(monkeypatch):
    """MultiWorkerMirroredStrategy and TPUStrategy replaced by recorders: making a real one starts a
    cluster server (or looks for a TPU) in this test process."""
    calls = []
    monkeypatch.setattr(tf.distribute, "MultiWorkerMirroredStrategy", lambda: calls.append("multi_worker") or "MWMS")
    return calls


def test_an_unknown_strategy_is_refused():
    with pytest.raises(StrategyError, match=r"^--strategy 'horovod'; expected one of auto, one_device, mirrored, "
                                            r"multi_worker, tpu$"):
        resolve_strategy("horovod")
    assert STRATEGIES == ("auto", "one_device", "mirrored", "multi_worker", "tpu")


def test_auto_on_one_cpu_is_the_default_strategy(no_cluster, made):
    strategy = resolve_strategy()
    assert strategy is tf.distribute.get_strategy() and strategy.num_replicas_in_sync == 1
    assert resolve_strategy("auto") is strategy and made == []


def test_one_device_and_mirrored_on_this_cpu(no_cluster):
    one = resolve_strategy("one_device")
    assert isinstance(one, tf.distribute.OneDeviceStrategy)
    assert [tf.DeviceSpec.from_string(d).device_type for d in one.extended.worker_devices] == ["CPU"]
    mirrored = resolve_strategy("mirrored")
    assert isinstance(mirrored, tf.distribute.MirroredStrategy) and mirrored.num_replicas_in_sync == 1


@pytest.mark.parametrize("workers, name, expected", [
    (["a:1", "b:1"], "auto", ["multi_worker"]),  # TF_CONFIG names two workers
    (["a:1"], "auto", []),  # one worker: nothing to spread over
    ([], "multi_worker", ["multi_worker"]),  # asked for by name
])
def test_tf_config_decides_multi_worker(monkeypatch, made, workers, name, expected):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": 0}}))
    strategy = resolve_strategy(name)
    assert made == expected
    assert strategy == "MWMS" if expected else strategy is tf.distribute.get_strategy()


def test_tpu_without_a_name_off_google_cloud_is_refused():
    with pytest.raises(StrategyError, match=r"^no TPU answered at --tpu=None: Please provide a TPU Name"):
        resolve_strategy("tpu")


def test_a_tpu_name_that_cannot_be_looked_up_is_refused(monkeypatch):
    """Off Google Cloud the resolver asks the metadata server for the project and fails with urllib's
    error (what it raised on this machine, offline), which is a one-line refusal too."""
    def unreachable(tpu):
        raise urllib.error.URLError("[Errno -2] Name or service not known")

    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", unreachable)
    with pytest.raises(StrategyError, match=r"^no TPU answered at --tpu='my-tpu': <urlopen error \[Errno -2\] "):
        resolve_strategy("auto", tpu="my-tpu")


def test_the_helpers_with_one_replica():
    value = tf.constant([1.0, 2.0])
    logs = {"loss": tf.constant(0.5)}
    replicas = StrategyReplicas()
    assert num_replicas() == replicas.num_replicas() == 1
    assert cross_replica_sum(value) is value and replicas.sum(value) is value  # no replica context
    assert multi_worker_logs(logs) is logs and replicas.logs(logs) is logs  # not multi-worker
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])

    def step(x):
        return num_replicas(), cross_replica_sum(x * 2.0)

    with strategy.scope():
        assert num_replicas() == 1
    count, total = strategy.run(step, args=(value,))
    assert count == 1
    np.testing.assert_array_equal(total, [2.0, 4.0])  # a single replica's value, unchanged


def test_other_backends_get_the_identity(monkeypatch):
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    assert distribute._tf() is None
    value, logs = np.ones(3), {"loss": 0.5}
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():  # even inside a tf.distribute scope: no tf.distribute calls
        assert num_replicas() == 1
        assert cross_replica_sum(value) is value and multi_worker_logs(logs) is logs
