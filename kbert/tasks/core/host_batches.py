"""Task models under a backend other than TensorFlow, or with another runtime computing the network:
ids packed on the host.

Under JAX (or torch) a model cannot take strings. ``HostBatches`` (a mix-in of ``kbert.TaskModel``)
runs the same tokenizer and packer layers in tf.data on the host (``pack``) and feeds int32 ids to
fit, evaluate and predict (a dataset whose inputs are packed ids already, as the tagging and span-QA
features are, is taken as it is). Batches are trimmed to their longest row rounded up to
``WIDTH_MULTIPLE`` positions and padded with rows of weight 0 to a multiple of ``ROW_MULTIPLE`` rows
(and of the devices the batch is split over), so that XLA compiles a few programs, not one per batch
shape. In a multi-process run every process packs the same global batch and keeps its contiguous share.

The same packing serves a ``network_runner``: a callable that computes the network for a batch of
packed ids instead of Keras (e.g. an ONNX Runtime session, kbert.export.onnx.runtime.attach), while
the model's own host code (tokenizer, windows, answers) stays.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from kbert.errors import TaskModelError
from kbert.tasks.core.text_inputs import label_arrays, string_tensors
from kbert.tasks.core.windows import WINDOW_DOCUMENT
from kbert.text.pre_tokenize import pre_tokenize_dataset


def host_packing() -> bool:
    """True under backends whose models take ids packed on the host (all but TensorFlow)."""
    return keras.backend.backend() != "tensorflow"


def jax_processes() -> tuple:
    """(processes, this process's index) of a multi-process JAX run; (1, 0) otherwise."""
    if keras.backend.backend() != "jax" or keras.distribution.distribution() is None:
        return 1, 0
    import jax

    return jax.process_count(), jax.process_index()


class HostBatches:
    """The host side of a task model (a mix-in of ``kbert.TaskModel``, which supplies the tokenizer,
    ``seq_length``, ``dynamic_length`` and Keras' own ``predict`` / ``predict_on_batch``)."""

    WIDTH_MULTIPLE = 16
    ROW_MULTIPLE = 8
    # Where prediction computes the network instead of Keras (None: Keras): a callable from a batch of
    # packed ids (numpy [rows, width], [rows, choices, width] for multiple choice) to what ``call``
    # returns for it, e.g. an ONNX Runtime session (kbert.export.onnx.runtime.attach).
    network_runner = None

    @property
    def packs_on_host(self) -> bool:
        """Whether prediction packs ids on the host and calls ``predict_ids`` (a backend other than
        TensorFlow, or a ``network_runner``)."""
        return host_packing() or self.network_runner is not None

    def pack(self, inputs) -> dict:
        """Packed int32 ids (input_word_ids, input_mask, input_type_ids) for raw inputs, in TensorFlow."""
        raise NotImplementedError(f"{type(self).__name__} does not pack its inputs on the host")

    @staticmethod
    def takes_ids(inputs) -> bool:
        return isinstance(inputs, dict) and "input_word_ids" in inputs

    def row_multiple(self) -> int:
        import math

        distribution = keras.distribution.distribution()
        devices = 1 if distribution is None else int(np.prod(distribution.device_mesh.shape))
        return math.lcm(self.ROW_MULTIPLE, devices)

    def host_batch(self, multiple):
        width_multiple = self.WIDTH_MULTIPLE
        seq_length = self.seq_length
        processes, process_id = jax_processes()
        dynamic = self.dynamic_length

        def convert(*element):
            x, rest = element[0], element[1:]
            if self.takes_ids(x) and WINDOW_DOCUMENT in x:
                return element  # documents' windows, padded for the host already (document_batches)
            ids = {k: tf.cast(v, tf.int32) for k, v in (x if self.takes_ids(x) else self.pack(x)).items()}
            if dynamic:  # the last axis is the sequence ([rows, seq], or [rows, choices, seq])
                longest = tf.reduce_max(tf.reduce_sum(ids["input_mask"], axis=-1))
                width = tf.minimum((tf.maximum(longest, 1) + width_multiple - 1) // width_multiple * width_multiple,
                                   seq_length)
                ids = {k: v[..., :width] for k, v in ids.items()}
            rows = tf.shape(ids["input_word_ids"])[0]
            pad = (rows + multiple - 1) // multiple * multiple - rows

            def pad_rows(t):
                t = tf.convert_to_tensor(t)
                return tf.pad(t, [[0, pad]] + [[0, 0]] * (t.shape.rank - 1))

            def share(t):  # this process's contiguous rows of the global batch
                if processes == 1:
                    return t
                size = tf.shape(t)[0] // processes
                return t[process_id * size:(process_id + 1) * size]

            ids = {k: share(pad_rows(v)) for k, v in ids.items()}
            if not rest:
                return ids
            weights = tf.cast(rest[1], tf.float32) if len(rest) > 1 else tf.ones([rows], tf.float32)
            labels, weights = self.host_labels(rest[0], weights, tf.shape(ids["input_word_ids"])[-1])
            return ids, tf.nest.map_structure(lambda t: share(pad_rows(t)), labels), share(pad_rows(weights))

        return convert

    def host_labels(self, labels, weights, width):
        """(labels, weights) of a host batch whose ids are ``width`` positions wide; ``weights`` is
        one per row. Models with a label per position (tagging) cut their labels alike and give
        each position its row's weight; labels per row stay as they are."""
        return labels, weights

    def predict_ids(self, batch: dict, per_position: bool = True):
        """The model's outputs (numpy) for one batch of packed ids ([rows, width] arrays) from its
        ``network_runner``, or under a host-packing backend through ``predict_on_batch`` (a jitted
        call): rows are padded to the
        row multiple and the width to WIDTH_MULTIPLE positions, so that XLA compiles a few
        programs, and both are cut back (the width only of ``per_position`` outputs)."""
        batch = {k: np.asarray(v, dtype=np.int32) for k, v in batch.items()}
        if self.network_runner is not None:
            return self.network_runner(batch)
        rows, width = batch["input_word_ids"].shape[:2]
        padded_width = width
        if self.dynamic_length:
            padded_width = max(width, min(-(-width // self.WIDTH_MULTIPLE) * self.WIDTH_MULTIPLE, self.seq_length))
        padded_rows = -(-max(rows, 1) // self.row_multiple()) * self.row_multiple()
        batch = {k: np.pad(v, [(0, padded_rows - rows), (0, padded_width - width)]) for k, v in batch.items()}
        outputs = self.predict_on_batch(batch)

        def cut(o):
            o = np.asarray(o)[:rows]
            return o[:, :width] if per_position else o

        return tf.nest.map_structure(cut, outputs)

    def host_dataset(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False, seed=None):
        """Batches of (ids, labels, weights) (or ids alone without labels) packed in tf.data."""
        if isinstance(x, tf.data.Dataset):
            ds = x
        else:
            x = string_tensors(x)
            elements = (x,) if y is None else (x, label_arrays(y)) if sample_weight is None else \
                (x, label_arrays(y), sample_weight)
            ds = tf.data.Dataset.from_tensor_slices(elements)
            if shuffle:
                ds = ds.shuffle(int(ds.cardinality()), seed=seed, reshuffle_each_iteration=True)
            ds = ds.batch(batch_size or 32)
        ds = pre_tokenize_dataset(self.tokenizer, ds)
        return ds.map(self.host_batch(self.row_multiple()), num_parallel_calls=tf.data.AUTOTUNE).prefetch(
            tf.data.AUTOTUNE)

    def runner_predict(self, x, batch_size, callbacks=None):
        """``predict`` through ``network_runner``: texts packed here (or packed ids as given), batches
        of ``batch_size`` rows in order, each cut to its longest row (with dynamic_length)."""
        packed = x if self.takes_ids(x) else self.pack(self._texts(x))
        packed = {k: np.asarray(v) for k, v in packed.items()}
        outputs = []
        for number, start in enumerate(range(0, len(packed["input_word_ids"]), batch_size)):
            batch = {k: v[start:start + batch_size] for k, v in packed.items()}
            if self.dynamic_length:
                width = max(int(batch["input_mask"].sum(axis=-1).max(initial=0)), 1)
                batch = {k: v[..., :width] for k, v in batch.items()}
            outputs.append(self.network_runner(batch))
            for callback in callbacks or ():
                callback.on_predict_batch_end(number)
        return tf.nest.map_structure(lambda *parts: np.concatenate(parts), *outputs)

    def host_predict(self, x, batch_size=None, *args, **kwargs):
        if isinstance(x, tf.data.Dataset):
            raise TaskModelError(f"{type(self).__name__}.predict under the {keras.backend.backend()} backend takes "
                                 "texts (arrays, lists or a dict of them), not a tf.data.Dataset")
        rows = len(next(iter(x.values())) if isinstance(x, dict) else x[0] if isinstance(x, tuple) else x)
        batch_size = batch_size or 32
        outputs = super().predict(self.host_dataset(x, batch_size=batch_size), *args, **kwargs)
        # Each batch was padded to a multiple of the row multiple: keep the outputs of real rows.
        multiple, keep, start = self.row_multiple(), [], 0
        for first in range(0, rows, batch_size):
            real = min(batch_size, rows - first)
            keep.extend(range(start, start + real))
            start += -(-real // multiple) * multiple
        return tf.nest.map_structure(lambda o: o[np.asarray(keep, dtype=np.int64)], outputs)
