"""TaskModel: encoder + task head + the preprocessing settings; takes raw strings.

The class reads in three parts, each in its own module: this one (construction, settings, the
encoder call and Keras' compile / fit / evaluate / predict, which take strings), ``host_batches``
(``HostBatches``: ids packed on the host, under JAX or for a ``network_runner`` such as ONNX
Runtime) and ``task_dir`` (``TaskModelDirectory``: ``save_model_dir`` / ``from_model_dir``, and
``load_task_model``, which rebuilds whichever task a model directory holds).
"""

from __future__ import annotations

import keras
import tensorflow as tf

from kbert import compat
from kbert.api_export import kbert_export
from kbert.errors import TaskModelError
from kbert.layers import accel
from kbert.tasks.core.batching import trim_to_longest
from kbert.tasks.core.host_batches import HostBatches, host_packing
from kbert.tasks.core.task_dir import TaskModelDirectory
from kbert.tasks.core.text_inputs import label_arrays, string_tensors
from kbert.text import BertPreprocessor
from kbert.text.pre_tokenize import pre_tokenize_data, pre_tokenize_dataset
from kbert.text.registry import as_tokenizer, is_tokenizer


@kbert_export("kbert.TaskModel", "kbert.tasks.TaskModel")
class TaskModel(accel.CompiledStepSettings, HostBatches, TaskModelDirectory, keras.Model):
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
            # Host batches are padded with rows of weight 0 (see HostBatches.host_dataset): the mean over the
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
            data = self.host_dataset(x, y, kwargs.pop("sample_weight", None), kwargs.pop("batch_size", None),
                                      shuffle=kwargs.pop("shuffle", True), seed=None)
            return super().fit(data, None, *args, shuffle=False, **kwargs)
        return super().fit(self._texts(x), label_arrays(y), *args, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        if host_packing():
            data = self.host_dataset(x, y, kwargs.pop("sample_weight", None), kwargs.pop("batch_size", None))
            return super().evaluate(data, None, *args, **kwargs)
        return super().evaluate(self._texts(x), label_arrays(y), *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        if self.network_runner is not None:
            return self.runner_predict(x, kwargs.get("batch_size") or 32, kwargs.get("callbacks"))
        if host_packing():
            return self.host_predict(x, kwargs.pop("batch_size", None), *args, **kwargs)
        return super().predict(self._texts(x), *args, **kwargs)

    def _texts(self, x):
        """Texts as string tensors, through the tokenizer's Python step first if it has one (a
        tf.data.Dataset of raw texts gets that step mapped over it)."""
        if isinstance(x, tf.data.Dataset):
            return pre_tokenize_dataset(self.tokenizer, x)
        return string_tensors(pre_tokenize_data(self.tokenizer, x))

