"""TaskModel: encoder + task head + the preprocessing settings, saved as a model directory.

A fine-tuned task model is a model directory (see kbert.model_dir) whose ``kbert.json`` has a
``task`` object next to ``heads``::

    {"format": 1, "tokenizer": {"type": "wordpiece", ...}, "do_lower_case": true,
     "heads": {"classifier": {"weights": "classifier.weights.h5", "type": "text_classifier"}},
     "task": {"type": "text_classifier", "head": "classifier", "seq_length": 128, ...}}

``task`` holds everything needed to rebuild the model around the encoder: the task type (the
class, see kbert.tasks.core.registry), the head's name and size, label names and the preprocessing settings
(seq_length, truncator, number of text inputs, ...). ``load_task_model(dir)`` rebuilds any of
them; ``<Class>.from_model_dir(dir, ...)`` starts a new task from a pre-trained directory or
reloads a fine-tuned one of the same type.
"""

from __future__ import annotations

import pathlib

import keras
import numpy as np
import tensorflow as tf

from kbert import compat
from kbert import model_dir as model_dir_lib
from kbert.hub_models import resolve_model_dir
from kbert.layers import accel
from kbert.tasks.core.batching import trim_to_longest
from kbert.tasks.core.windows import WINDOW_DOCUMENT
from kbert.text import BertPreprocessor
from kbert.text.pre_tokenize import pre_tokenize_data, pre_tokenize_dataset
from kbert.text.registry import as_tokenizer, is_tokenizer, load_tokenizer
from kbert.api_export import kbert_export


def _processes() -> tuple:
    """(processes, this process's index) of a multi-process JAX run; (1, 0) otherwise."""
    if keras.backend.backend() != "jax" or keras.distribution.distribution() is None:
        return 1, 0
    import jax

    return jax.process_count(), jax.process_index()


def host_packing() -> bool:
    """True under backends whose models take ids packed on the host (all but TensorFlow)."""
    return keras.backend.backend() != "tensorflow"


@kbert_export("kbert.tasks.TaskModelError")
class TaskModelError(ValueError):
    """A task model directory or setting that does not fit: names the file, field and value.

    Examples:
        >>> import kbert
        >>> kbert.load_task_model(kbert.random_model_dir("runs/tiny"))
        Traceback (most recent call last):
        ...
        kbert.tasks.core.base.TaskModelError: runs/tiny/kbert.json has no 'task' object: runs/tiny is not a fine-tuned task model
    """


def _string_tensors(data):
    """Strings given as numpy arrays (unicode, bytes or object) or (nested) lists -> tf.string
    tensors: Keras' data adapters refuse numpy '<U' arrays and object arrays of rank > 1."""
    def is_text(x):
        if isinstance(x, np.ndarray):
            return x.dtype.kind in "USO" and x.size > 0 and all(isinstance(v, (str, bytes)) for v in x.flat)
        if isinstance(x, list) and x:
            flat = x if not isinstance(x[0], (list, tuple)) else [v for row in x for v in row]
            return all(isinstance(v, (str, bytes)) for v in flat)
        return False

    def convert(x):
        return tf.constant(x.tolist() if isinstance(x, np.ndarray) else x, tf.string) if is_text(x) else x

    if isinstance(data, dict):
        return {k: convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and data and not all(isinstance(v, (str, bytes)) for v in data):
        return tuple(convert(v) for v in data)
    return convert(data)


def _label_arrays(data):
    """Labels given as plain (nested) Python lists of numbers -> numpy arrays: Keras' data adapters
    accept a list of strings turned into a tensor only beside array-like labels, not a list."""
    def convert(y):
        if isinstance(y, list) and y:
            array = np.asarray(y)
            if array.dtype.kind in "biuf":
                return array
        return y

    if isinstance(data, dict):
        return {k: convert(v) for k, v in data.items()}
    return convert(data)


@kbert_export("kbert.TaskModel", "kbert.tasks.TaskModel")
class TaskModel(accel.CompiledStepSettings, keras.Model):
    """Base class of the task models: holds ``encoder``, ``head`` and ``preprocessor``; saves and reloads them.

    A task model takes raw strings (``{"text_a": [...], "text_b": [...]}``): its preprocessor
    tokenizes and packs them inside the graph, so ``fit``, ``evaluate``, ``predict`` and the
    exported SavedModel read text. ``save_model_dir`` writes a model directory;
    ``from_model_dir`` (or ``kbert.load_task_model``) reads it back, head included. Subclasses set
    ``task_type``, ``head_name`` and ``head_shape_keys`` (the settings that fix the head's weights'
    shapes, which a reload may not change) and implement ``call``, ``task_settings`` and
    ``default_loss``.

    Args:
        encoder: a ``kbert.BertEncoder``.
        tokenizer: a tokenizer object (``kbert.load_tokenizer``), or for WordPiece a ``vocab.txt``
            path or token list.
        lower_case: with a vocabulary only: True for uncased (default).
        seq_length: the longest packed input (128).
        truncator: "round_robin" or "waterfall" (``kbert.text.BertPacker``).
        dynamic_length: trim each batch to its longest row (False: always ``seq_length``).
        **kwargs: passed to ``keras.Model``.

    Examples:
        >>> import kbert
        >>> model = kbert.TextClassifier.from_model_dir(kbert.random_model_dir("runs/tiny"), num_classes=2)
        >>> isinstance(model, kbert.TaskModel), model.task_type, model.seq_length
        (True, 'text_classifier', 128)
    """

    task_type = ""
    head_name = "head"
    head_shape_keys: tuple = ()
    # Settings that a model directory written before they existed implies (its kbert.json ``task``
    # lacks them): the behaviour it was trained and exported with, whatever today's default is.
    implied_settings: dict = {}

    # Where prediction computes the network instead of Keras (None: Keras): a callable from a batch of
    # packed ids (numpy [rows, width], [rows, choices, width] for multiple choice) to what ``call``
    # returns for it, e.g. an ONNX Runtime session (kbert.export.onnx.runtime.attach). The model's own
    # host code (tokenizer, windows, answers) stays; its texts are packed on the host for it.
    network_runner = None

    def __init__(self, encoder, tokenizer, lower_case=None, seq_length=128, truncator="round_robin",
                 dynamic_length=True, **kwargs):
        super().__init__(**kwargs)
        # Inputs are strings (or dicts of them): Keras must not cast them to floats.
        compat.accept_raw_call_inputs(self)
        self.encoder = encoder
        # A tokenizer object (kbert.text.load_tokenizer) decides lower-casing itself; lower_case is
        # read only beside a vocabulary (which means WordPiece; None there means lower-cased).
        tokenizer = as_tokenizer(tokenizer, None if is_tokenizer(tokenizer) else lower_case, type(self).__name__)
        self.dynamic_length = bool(dynamic_length)
        max_positions = encoder.config.max_position_embeddings
        if int(seq_length) > max_positions:
            raise TaskModelError(f"seq_length {seq_length} exceeds the encoder's max_position_embeddings "
                                 f"{max_positions}")
        self.preprocessor = BertPreprocessor(tokenizer, seq_length=int(seq_length), truncator=truncator,
                                             name="preprocessor")
        self.saved_task_info: dict = {}

    # -- settings ---------------------------------------------------------------------------------
    @property
    def seq_length(self) -> int:
        return self.preprocessor.seq_length

    @property
    def tokenizer(self):
        return self.preprocessor.tokenizer

    @property
    def vocab(self) -> list:
        return self.tokenizer.get_vocabulary()

    @property
    def lower_case(self) -> bool:
        return self.tokenizer.lower_case

    def preprocessing_settings(self) -> dict:
        return {"seq_length": self.seq_length, "truncator": self.preprocessor.packer.truncator,
                "dynamic_length": self.dynamic_length}

    def task_settings(self) -> dict:
        """The constructor arguments (besides encoder/tokenizer) that rebuild this model."""
        return self.preprocessing_settings()

    def task_metadata(self) -> dict:
        """The ``task`` object of kbert.json."""
        return {"type": self.task_type, "head": self.head_name, **self.task_settings()}

    def _build_head(self):
        """Builds the head, which the subclass made last, and with it the model (the encoder and the
        preprocessor are built already). Keras' predict and predict_on_batch call a model that is not
        built on the batch first, outside their compiled function: under JAX each op of that call was
        compiled on its own, on every predict_on_batch call."""
        self.head.build()
        self.built = True

    # -- the encoder ------------------------------------------------------------------------------
    def encode(self, inputs: dict, training=None) -> dict:
        """Encoder outputs for packed int32 inputs, trimmed to the batch's longest sequence when
        dynamic_length is on."""
        if self.dynamic_length and not host_packing():  # host batches come trimmed
            inputs = trim_to_longest(inputs)
        outputs = self.encoder(inputs, training=training)
        return {**outputs, "input_mask": inputs["input_mask"]}

    # -- Keras ------------------------------------------------------------------------------------
    def default_loss(self):
        raise NotImplementedError

    def default_metrics(self):
        return None

    def compile(self, optimizer="adam", loss=None, metrics=None, **kwargs):
        """Keras compile; loss and metrics default to the task's (e.g. cross-entropy)."""
        loss = loss if loss is not None else self.default_loss()
        if host_packing():
            # Host batches are padded with rows of weight 0 (see _host_dataset): the mean over the
            # real rows (and labelled positions), as the unpadded batch would give.
            for each in (loss.values() if isinstance(loss, dict) else [loss]):
                if isinstance(each, keras.losses.Loss):
                    each.reduction = "mean_with_sample_weight"
        super().compile(optimizer=optimizer, loss=loss,
                        metrics=metrics if metrics is not None else self.default_metrics(), **kwargs)

    def fit(self, x=None, y=None, *args, **kwargs):
        # Keras (TF backend, no distribution strategy) defers creating the optimizer's slots to the
        # first train step; tf.function then traces the whole string-to-update graph twice (once
        # creating variables, once without). Building them here traces it once.
        if getattr(self, "optimizer", None) is not None and not self.optimizer.built:
            self.optimizer.build(self.trainable_variables)
        if host_packing():
            data = self._host_dataset(x, y, kwargs.pop("sample_weight", None), kwargs.pop("batch_size", None),
                                      shuffle=kwargs.pop("shuffle", True), seed=None)
            return super().fit(data, None, *args, shuffle=False, **kwargs)
        return super().fit(self._texts(x), _label_arrays(y), *args, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        if host_packing():
            data = self._host_dataset(x, y, kwargs.pop("sample_weight", None), kwargs.pop("batch_size", None))
            return super().evaluate(data, None, *args, **kwargs)
        return super().evaluate(self._texts(x), _label_arrays(y), *args, **kwargs)

    @property
    def packs_on_host(self) -> bool:
        """Whether prediction packs ids on the host and calls ``predict_ids`` (a backend other than
        TensorFlow, or a ``network_runner``)."""
        return host_packing() or self.network_runner is not None

    def predict(self, x, *args, **kwargs):
        if self.network_runner is not None:
            return self._runner_predict(x, kwargs.get("batch_size") or 32, kwargs.get("callbacks"))
        if host_packing():
            return self._host_predict(x, kwargs.pop("batch_size", None), *args, **kwargs)
        return super().predict(self._texts(x), *args, **kwargs)

    def _texts(self, x):
        """Texts as string tensors, through the tokenizer's Python step first if it has one (a
        tf.data.Dataset of raw texts gets that step mapped over it)."""
        if isinstance(x, tf.data.Dataset):
            return pre_tokenize_dataset(self.tokenizer, x)
        return _string_tensors(pre_tokenize_data(self.tokenizer, x))

    # -- other backends: ids packed on the host ----------------------------------------------------
    # Under a backend other than TensorFlow (JAX) a model cannot take strings. fit, evaluate and
    # predict run the same tokenizer and packer layers in tf.data on the host (``pack``) and feed
    # int32 ids (a dataset whose inputs are packed ids already, as the tagging and span-QA features
    # are, is taken as it is); batches are trimmed to their longest row rounded up to WIDTH_MULTIPLE positions,
    # and padded with rows of weight 0 to a multiple of ROW_MULTIPLE rows (and of the devices the
    # batch is split over), so that XLA compiles a few programs, not one per batch shape. In a
    # multi-process run every process packs the same global batch and keeps its contiguous share.
    WIDTH_MULTIPLE = 16
    ROW_MULTIPLE = 8

    def pack(self, inputs) -> dict:
        """Packed int32 ids (input_word_ids, input_mask, input_type_ids) for raw inputs, in TensorFlow."""
        raise NotImplementedError(f"{type(self).__name__} does not pack its inputs on the host")

    @staticmethod
    def takes_ids(inputs) -> bool:
        return isinstance(inputs, dict) and "input_word_ids" in inputs

    def _row_multiple(self) -> int:
        import math

        distribution = keras.distribution.distribution()
        devices = 1 if distribution is None else int(np.prod(distribution.device_mesh.shape))
        return math.lcm(self.ROW_MULTIPLE, devices)

    def _host_batch(self, multiple):
        width_multiple = self.WIDTH_MULTIPLE
        seq_length = self.seq_length
        processes, process_id = _processes()
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
        padded_rows = -(-max(rows, 1) // self._row_multiple()) * self._row_multiple()
        batch = {k: np.pad(v, [(0, padded_rows - rows), (0, padded_width - width)]) for k, v in batch.items()}
        outputs = self.predict_on_batch(batch)

        def cut(o):
            o = np.asarray(o)[:rows]
            return o[:, :width] if per_position else o

        return tf.nest.map_structure(cut, outputs)

    def _host_dataset(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False, seed=None):
        """Batches of (ids, labels, weights) (or ids alone without labels) packed in tf.data."""
        if isinstance(x, tf.data.Dataset):
            ds = x
        else:
            x = _string_tensors(x)
            elements = (x,) if y is None else (x, _label_arrays(y)) if sample_weight is None else \
                (x, _label_arrays(y), sample_weight)
            ds = tf.data.Dataset.from_tensor_slices(elements)
            if shuffle:
                ds = ds.shuffle(int(ds.cardinality()), seed=seed, reshuffle_each_iteration=True)
            ds = ds.batch(batch_size or 32)
        ds = pre_tokenize_dataset(self.tokenizer, ds)
        return ds.map(self._host_batch(self._row_multiple()), num_parallel_calls=tf.data.AUTOTUNE).prefetch(
            tf.data.AUTOTUNE)

    def _runner_predict(self, x, batch_size, callbacks=None):
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

    def _host_predict(self, x, batch_size=None, *args, **kwargs):
        if isinstance(x, tf.data.Dataset):
            raise TaskModelError(f"{type(self).__name__}.predict under the {keras.backend.backend()} backend takes "
                                 "texts (arrays, lists or a dict of them), not a tf.data.Dataset")
        rows = len(next(iter(x.values())) if isinstance(x, dict) else x[0] if isinstance(x, tuple) else x)
        batch_size = batch_size or 32
        outputs = super().predict(self._host_dataset(x, batch_size=batch_size), *args, **kwargs)
        # Each batch was padded to a multiple of the row multiple: keep the outputs of real rows.
        multiple, keep, start = self._row_multiple(), [], 0
        for first in range(0, rows, batch_size):
            real = min(batch_size, rows - first)
            keep.extend(range(start, start + real))
            start += -(-real // multiple) * multiple
        return tf.nest.map_structure(lambda o: o[np.asarray(keep, dtype=np.int64)], outputs)

    # -- model directories -----------------------------------------------------------------------
    def save_model_dir(self, model_dir, extra_info: dict | None = None) -> pathlib.Path:
        """Writes encoder, head and kbert.json (``task``; ``extra_info`` is stored in it under
        ``info``, e.g. the task name and dev metrics). Heads of an older model there are dropped."""
        model_dir = pathlib.Path(model_dir)
        info = {"type": self.task_type, "config": _head_config(self.head)}
        model_dir_lib.save_model_dir(model_dir, self.encoder, tokenizer=self.tokenizer,
                                     heads={self.head_name: (self.head, info)})
        metadata = model_dir_lib.read_metadata(model_dir)
        metadata["heads"] = {self.head_name: metadata["heads"][self.head_name]}
        task = self.task_metadata()
        if extra_info:
            task["info"] = extra_info
        metadata["task"] = task
        model_dir_lib.write_metadata(model_dir, metadata)
        return model_dir

    @classmethod
    def from_model_dir(cls, model_dir, *, load_head=None, encoder_overrides=None, attention="auto", **settings):
        """A task model on the encoder of ``model_dir``.

        If the directory holds a fine-tuned model of this task type (its kbert.json ``task``),
        its settings and head weights are restored (``load_head=None`` or True); ``settings``
        may then change preprocessing (e.g. seq_length) but not the head's size. Otherwise a new
        head is initialised from ``settings`` (e.g. ``num_classes=2``); ``load_head=False``
        forces that. ``encoder_overrides`` replace bert_config fields (e.g. dropout rates).
        ``model_dir`` may be ``hf://ORG/NAME`` (``kbert.resolve_model_dir``).
        ``attention``: the encoder's attention, "auto", "plain" or "fused" (kbert.layers.accel).
        """
        model_dir = pathlib.Path(resolve_model_dir(model_dir))
        metadata = model_dir_lib.read_metadata(model_dir)
        saved = metadata.get("task")
        where = model_dir / model_dir_lib.METADATA_FILE
        if saved is not None and not isinstance(saved, dict):
            raise TaskModelError(f"{where}: field 'task' must be an object, got {saved!r}")
        if saved is not None and saved.get("type") != cls.task_type:
            if load_head:
                raise TaskModelError(f"{where}: task type is {saved.get('type')!r}, not {cls.task_type!r}")
            saved = None
        if load_head is True and saved is None:
            raise TaskModelError(f"{where} holds no fine-tuned {cls.task_type!r} task (no 'task' object)")
        if load_head is False:
            saved = None
        kwargs = dict(settings)
        if saved is not None:
            restored = {**cls.implied_settings,
                        **{k: v for k, v in saved.items() if k not in ("type", "head", "info")}}
            for key in cls.head_shape_keys:
                if key in settings and settings[key] is not None and _differs(settings[key], restored.get(key)):
                    raise TaskModelError(
                        f"{where}: the saved head has {key}={restored.get(key)!r} but {key}={settings[key]!r} "
                        "was asked; pass load_head=False to start a new head")
            kwargs = {**restored, **{k: v for k, v in settings.items() if v is not None}}
        encoder = model_dir_lib.load_encoder(model_dir, attention=attention, **(encoder_overrides or {}))
        try:
            tokenizer = load_tokenizer(model_dir)
        except ValueError as e:  # the spec's errors name kbert.json and the field
            raise TaskModelError(str(e)) from None
        model = cls(encoder, tokenizer, **kwargs)
        if saved is not None:
            model._load_head(model_dir, metadata, saved)
            model.saved_task_info = dict(saved.get("info") or {})
        return model

    def _load_head(self, model_dir, metadata, saved):
        name = saved.get("head", self.head_name)
        where = model_dir / model_dir_lib.METADATA_FILE
        entry = metadata.get("heads", {}).get(name)
        if not isinstance(entry, dict) or "weights" not in entry:
            raise TaskModelError(f"{where}: 'task' names head {name!r} but 'heads' has no weights for it")
        path = model_dir_lib.resolve_file(model_dir, entry["weights"])
        if not path.exists():
            raise TaskModelError(f"{where} lists head {name!r} but {path} is missing")
        if not self.head.built:
            self.head.build()
        # The encoder's checked path: a damaged file or one of another shape (e.g. another number
        # of classes) is an error naming the file and listing what differs, not an h5py traceback.
        try:
            model_dir_lib.load_weights_checked(self.head, path, f"the {self.task_type} head that {where} describes",
                                               expected_from=f"the 'task' settings of {where.name}")
        except model_dir_lib.ModelDirError as e:
            raise TaskModelError(str(e)) from None


def _head_config(head) -> dict:
    config = head.get_config()
    return {k: config[k] for k in ("num_outputs", "dropout", "hidden_size") if k in config}


def _differs(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) != list(b)
    return a != b


@kbert_export("kbert.load_task_model", "kbert.tasks.load_task_model")
def load_task_model(model_dir, **settings) -> TaskModel:
    """Rebuilds whichever task model ``model_dir`` holds (its kbert.json ``task.type``), head included.

    Args:
        model_dir: a fine-tuned model directory (``kbert.finetune``'s output, or
            ``TaskModel.save_model_dir``).
        **settings: preprocessing settings to change (e.g. ``seq_length``); the head's size stays.

    Returns:
        The ``kbert.TaskModel`` subclass the directory names (``TextClassifier``, ``TokenTagger``, ...).

    Raises:
        kbert.tasks.TaskModelError: a directory without a fine-tuned task, or one that does not fit.

    Examples:
        >>> import kbert
        >>> model = kbert.TextClassifier.from_model_dir(kbert.random_model_dir("runs/tiny"),
        ...                                             label_names=["negative", "positive"])
        >>> saved = model.save_model_dir("runs/tiny-classifier")
        >>> reloaded = kbert.load_task_model(saved)
        >>> type(reloaded).__name__, reloaded.label_names
        ('TextClassifier', ['negative', 'positive'])
    """
    from kbert.tasks.core.registry import UnknownTaskError, model_types, task_type_for_model

    model_dir = pathlib.Path(resolve_model_dir(model_dir))
    task = model_dir_lib.read_metadata(model_dir).get("task")
    where = model_dir / model_dir_lib.METADATA_FILE
    if not isinstance(task, dict) or "type" not in task:
        raise TaskModelError(f"{where} has no 'task' object: {model_dir} is not a fine-tuned task model")
    try:
        task_type = task_type_for_model(task["type"])
    except UnknownTaskError:
        raise TaskModelError(f"{where}: field 'task.type' is {task['type']!r}; "
                             f"expected one of {model_types()}") from None
    return task_type.model_class(task["type"]).from_model_dir(model_dir, load_head=True, **settings)
