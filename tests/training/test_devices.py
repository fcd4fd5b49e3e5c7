"""kbert.training.devices, in this TensorFlow-backend process: its refusals (backend, batch size, the
multi-host flags) with their messages, the one-device answer on this CPU, the data-parallel
distribution it sets over several devices, and process_share's pass-through. The real JAX runs
(several XLA host devices, two processes) are tests/training/test_backends.py's, in child processes."""

import keras
import pytest

from conftest import require
from kbert.errors import OptionsError
from kbert.training.devices import Devices, process_share, setup_devices

jax = require("jax")


@pytest.fixture
def as_jax(monkeypatch):
    """setup_devices' view of a JAX run: keras says "jax" (its device list and distributions are the
    same API under every backend); the distribution it sets is cleared afterwards."""
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    yield
    keras.distribution.set_distribution(None)


@pytest.fixture
def joins(monkeypatch):
    """The calls setup_devices makes to jax.distributed.initialize (none actually joins anything)."""
    calls = []
    monkeypatch.setattr(jax.distributed, "initialize", lambda **kwargs: calls.append(kwargs))
    return calls


def test_the_tensorflow_backend_is_refused():
    assert keras.backend.backend() == "tensorflow"
    with pytest.raises(OptionsError, match=r"^keras backend 'tensorflow': device placement here is for "
                                           r"--backend jax$"):
        setup_devices(global_batch_size=8)


def test_one_device_on_this_cpu(as_jax, joins):
    assert keras.distribution.list_devices() == ["cpu:0"]
    assert setup_devices(global_batch_size=7) == Devices(count=1, processes=1, process_id=0)
    assert keras.distribution.distribution() is None and joins == []


def test_several_devices_get_data_parallelism_over_all_of_them(as_jax, joins, monkeypatch):
    monkeypatch.setattr(keras.distribution, "list_devices", lambda: ["cpu:0", "cpu:1"])
    assert setup_devices(global_batch_size=8) == Devices(count=2, processes=1, process_id=0)
    distribution = keras.distribution.distribution()
    assert isinstance(distribution, keras.distribution.DataParallel)
    assert distribution.device_mesh.devices.tolist() == ["cpu:0", "cpu:1"]
    assert distribution.auto_shard_dataset is False  # the pipelines keep each process's share themselves
    assert setup_devices(global_batch_size=8) and keras.distribution.distribution() is not None
    monkeypatch.setattr(keras.distribution, "list_devices", lambda: ["cpu:0"])
    setup_devices(global_batch_size=8)  # back to one device: no distribution left from before
    assert keras.distribution.distribution() is None


def test_a_batch_the_devices_cannot_share_is_refused(as_jax, joins, monkeypatch):
    monkeypatch.setattr(keras.distribution, "list_devices", lambda: ["gpu:0", "gpu:1", "gpu:2"])
    with pytest.raises(OptionsError, match=r"^--batch-size 8 is not divisible by the 3 devices \(gpu\) it is "
                                           r"spread over$"):
        setup_devices(global_batch_size=8)
    assert keras.distribution.distribution() is None
    assert setup_devices(global_batch_size=9).count == 3


@pytest.mark.parametrize("given", [
    {"coordinator_address": "10.0.0.1:1234"},
    {"coordinator_address": "10.0.0.1:1234", "num_processes": 2},
    {"num_processes": 2, "process_id": 0},
])
def test_several_processes_need_all_three_flags(as_jax, joins, given):
    with pytest.raises(OptionsError, match="several JAX processes need --coordinator-address, --num-processes and "
                                           "--process-id .*on a Cloud TPU VM give --tpu alone"):
        setup_devices(global_batch_size=8, **given)
    assert joins == []


def test_the_processes_join_through_jax(as_jax, joins, monkeypatch):
    flags = {"coordinator_address": "10.0.0.1:1234", "num_processes": 2, "process_id": 1}
    setup_devices(global_batch_size=8, **flags)
    setup_devices(global_batch_size=8, tpu=True)  # a Cloud TPU VM: JAX finds the three itself
    setup_devices(global_batch_size=8, num_processes=1)  # one process: nothing to join
    assert joins == [flags, {"coordinator_address": None, "num_processes": None, "process_id": None}]
    monkeypatch.setattr(jax.distributed, "is_initialized", lambda: True)
    setup_devices(global_batch_size=8, **flags)  # joined already (an earlier run in this process)
    assert len(joins) == 2


def test_process_share_keeps_the_dataset_of_one_process(as_jax, monkeypatch):
    import tensorflow as tf

    dataset = tf.data.Dataset.range(8).batch(4)
    assert keras.distribution.distribution() is None and process_share(dataset) is dataset
    monkeypatch.setattr(keras.distribution, "list_devices", lambda: ["cpu:0", "cpu:1"])
    setup_devices(global_batch_size=4)
    assert jax.process_count() == 1 and process_share(dataset) is dataset

    class Recorder:  # several processes: the distribution's own split of the global batches
        def distribute_tf_dataset(self, d):
            return ("this process's share of", d)

    monkeypatch.setattr(keras.distribution, "distribution", lambda: Recorder())
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    assert process_share(dataset) == ("this process's share of", dataset)


def test_devices_defaults_to_one_device_one_process():
    assert Devices() == Devices(count=1, processes=1, process_id=0)
    with pytest.raises(AttributeError):
        Devices().count = 2  # frozen: a run's devices do not change under it
