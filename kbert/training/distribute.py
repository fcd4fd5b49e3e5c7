"""Strategy resolution and the few cross-replica helpers the model's loss needs.

TensorFlow-only: this is the module whose job is distribution. Under other backends (no
tf.distribute) the helpers are the identity. The pre-training model gets them as
``BertPretrainer(..., replicas=StrategyReplicas())``; it never imports this module.
"""

from __future__ import annotations

import keras

from kbert.errors import Error
from kbert import compat


def _tf():
    if keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf

    return tf


def num_replicas() -> int:
    tf = _tf()
    return tf.distribute.get_strategy().num_replicas_in_sync if tf else 1


def cross_replica_sum(value):
    tf = _tf()
    if tf is None:
        return value
    ctx = tf.distribute.get_replica_context()
    if ctx is None or ctx.num_replicas_in_sync == 1:
        return value
    return ctx.all_reduce(tf.distribute.ReduceOp.SUM, value)


def multi_worker_logs(logs: dict) -> dict:
    """Work around Keras 3 under MultiWorkerMirroredStrategy (tensorflow/tensorflow#72388): its
    trainer reduces step logs with ``strategy.reduce("MEAN", v, axis=0)``, which fails on the
    scalar metric results. Give them a leading axis of 1 there; elsewhere logs are unchanged."""
    tf = _tf()
    if tf is None:
        return logs
    strategy = tf.distribute.get_strategy()
    if not (isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
            and compat.in_multi_worker_mode(strategy)):
        return logs
    return {k: tf.reshape(v, [1]) for k, v in logs.items()}


class StrategyReplicas:
    """``replicas`` for ``BertPretrainer`` under the current tf.distribute strategy (looked up when
    the loss is traced, inside the strategy's replica context)."""

    def num_replicas(self) -> int:
        return num_replicas()

    def sum(self, value):
        return cross_replica_sum(value)

    def logs(self, logs: dict) -> dict:
        return multi_worker_logs(logs)


STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker", "tpu")


class StrategyError(Error, RuntimeError):
    pass


def resolve_strategy(name: str = "auto", tpu: str | None = None):
    """``--strategy`` / ``--tpu`` -> a tf.distribute strategy.

    auto: TPU when ``--tpu`` is given, MultiWorkerMirrored when TF_CONFIG names several workers,
    Mirrored over several GPUs, else the default (one device) strategy.
    """
    import json
    import os

    import tensorflow as tf

    if name not in STRATEGIES:
        raise StrategyError(f"--strategy {name!r}; expected one of {', '.join(STRATEGIES)}")
    if tpu is not None or name == "tpu":
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        # OSError: off Google Cloud the resolver's look-up of a TPU name fails in urllib (URLError).
        except (ValueError, tf.errors.OpError, RuntimeError, OSError) as e:
            raise StrategyError(f"no TPU answered at --tpu={tpu!r}: {e}") from None
        return tf.distribute.TPUStrategy(resolver)
    if name == "multi_worker" or (name == "auto" and len(json.loads(os.environ.get("TF_CONFIG", "{}"))
                                                          .get("cluster", {}).get("worker", [])) > 1):
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "auto" and len(tf.config.list_logical_devices("GPU")) > 1:
        return tf.distribute.MirroredStrategy()
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    return tf.distribute.get_strategy()
