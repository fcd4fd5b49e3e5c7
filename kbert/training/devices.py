"""Spreading training over the devices of a non-TensorFlow backend (JAX).

Under JAX the batch is split over every local device (GPUs, TPU cores, or XLA host devices) by
``keras.distribution.DataParallel``; several hosts (processes) join through JAX's own runtime,
``jax.distributed.initialize``: give the coordinator's address, the number of processes and this
process's id, or nothing on a Cloud TPU VM, where JAX finds them itself (``tpu=True``). Each process
feeds the same global batch pipeline and keeps its contiguous share of every batch
(``process_share``; TaskModel does the same for its host batches), so N processes train exactly
as one process holding all the devices would.

Under TensorFlow nothing here applies: kbert.training.distribute picks a tf.distribute strategy.
"""

from __future__ import annotations

import dataclasses

import keras

from kbert.errors import OptionsError


@dataclasses.dataclass(frozen=True)
class Devices:
    """Where a JAX run trains: ``count`` devices over ``processes`` processes (this one: ``process_id``)."""

    count: int = 1
    processes: int = 1
    process_id: int = 0


def _initialize_multi_host(coordinator_address, num_processes, process_id, tpu: bool):
    import jax

    if jax.distributed.is_initialized():
        return
    if coordinator_address is None and not tpu and num_processes in (None, 1):
        return  # one process: nothing to join
    if not tpu and (coordinator_address is None or num_processes is None or process_id is None):
        raise OptionsError("several JAX processes need --coordinator-address, --num-processes and --process-id "
                           f"(got {coordinator_address!r}, {num_processes!r}, {process_id!r}); on a Cloud TPU VM "
                           "give --tpu alone and JAX finds them")
    jax.distributed.initialize(coordinator_address=coordinator_address, num_processes=num_processes,
                               process_id=process_id)


def setup_devices(*, global_batch_size: int, coordinator_address: str | None = None,
                  num_processes: int | None = None, process_id: int | None = None, tpu=None) -> Devices:
    """Joins the other processes (if any) and sets Keras' distribution to data parallelism over
    every device of the run when there is more than one. The global batch must divide evenly."""
    backend = keras.backend.backend()
    if backend != "jax":
        raise OptionsError(f"keras backend {backend!r}: device placement here is for --backend jax")
    import jax

    _initialize_multi_host(coordinator_address, num_processes, process_id, bool(tpu))
    devices = keras.distribution.list_devices()
    result = Devices(count=len(devices), processes=jax.process_count(), process_id=jax.process_index())
    if global_batch_size % result.count:
        raise OptionsError(f"--batch-size {global_batch_size} is not divisible by the {result.count} devices "
                           f"({', '.join(sorted({d.split(':')[0] for d in devices}))}) it is spread over")
    if result.count > 1:
        # kbert's pipelines keep this process's share of each global batch themselves (TaskModel's host
        # batches vary in size, which Keras' own sharding cannot take): see process_share.
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices, auto_shard_dataset=False))
    else:
        keras.distribution.set_distribution(None)
    return result


def process_share(dataset):
    """This process's rows of every global batch of a tf.data ``dataset`` with a fixed batch size (the
    dataset itself when one process trains)."""
    distribution = keras.distribution.distribution()
    if distribution is None:
        return dataset
    import jax

    if jax.process_count() == 1:
        return dataset
    return distribution.distribute_tf_dataset(dataset)
