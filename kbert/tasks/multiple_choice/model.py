"""Multiple choice (SWAG): each (context, choice) pair is scored from its [CLS], softmax over the
choices (the paper's §4.4: a vector whose dot product with the pooled output is the choice's
score).

Inputs are raw strings: ``{"text_a": [batch], "choices": [batch, num_choices]}``; every choice is
packed as the pair ``[CLS] text_a [SEP] choice [SEP]`` in the graph, the batch of
batch * num_choices pairs goes through the encoder, and ``call`` returns [batch, num_choices]
logits. For SWAG, text_a is the first sentence and each choice the second sentence's start
followed by one ending. Under backends other than TensorFlow (JAX) the same packing runs in tf.data
on the host (``pack``: ids [batch, num_choices, seq]) and ``call`` takes those ids.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from kbert.errors import OptionsError, TaskModelError
from kbert.tasks.core.base import TaskModel
from kbert.tasks.core.host_batches import host_packing
from kbert.tasks.core.batching import in_input_order, length_order, progress_callbacks
from kbert.tasks.core.heads import PooledHead
from kbert.tasks.core.text_inputs import take_rows
from kbert.api_export import kbert_export

INPUT_KEYS = ("text_a", "choices")


@kbert_export("kbert.MultipleChoiceModel", "kbert.tasks.MultipleChoiceModel")
class MultipleChoiceModel(TaskModel):
    """Scores continuations of a text and picks one (SWAG).

    Args:
        encoder: a ``kbert.BertEncoder``.
        tokenizer: a tokenizer object (``kbert.load_tokenizer``), or a WordPiece vocabulary.
        lower_case: with a vocabulary only.
        num_choices: the choices per example (None: any number).
        dropout: before the scoring layer.
        **kwargs: as ``kbert.TaskModel`` (``seq_length``, ...).

    Examples:
        >>> import kbert
        >>> model = kbert.MultipleChoiceModel.from_model_dir(kbert.random_model_dir("runs/tiny"), seq_length=16)
        >>> model.predict({"text_a": ["he went to the store ."],
        ...                "choices": [["he bought milk .", "the fox jumps ."]]}, verbose=0).shape
        (1, 2)
    """

    task_type = "multiple_choice"
    head_name = "choice"

    def __init__(self, encoder, tokenizer, lower_case=None, *, num_choices=None, dropout=0.1, **kwargs):
        super().__init__(encoder, tokenizer, lower_case, **kwargs)
        if num_choices is not None and int(num_choices) < 2:
            raise TaskModelError(f"num_choices must be >= 2 (or None for any), got {num_choices}")
        self.num_choices = None if num_choices is None else int(num_choices)
        config = encoder.config
        self.head = PooledHead(config.hidden_size, 1, dropout=dropout, initializer_range=config.initializer_range,
                               name=self.head_name)
        self._build_head()

    def task_settings(self):
        return {**super().task_settings(), "num_choices": self.num_choices, "dropout": self.head.dropout_rate}

    def _texts_and_choices(self, inputs):
        """(text_a [batch], choices [batch, num_choices]) string tensors, checked."""
        if not isinstance(inputs, dict) or sorted(inputs) != sorted(INPUT_KEYS):
            got = sorted(inputs) if isinstance(inputs, dict) else type(inputs).__name__
            raise OptionsError(f"MultipleChoiceModel takes a dict with keys {list(INPUT_KEYS)}, got {got}")
        text_a = tf.convert_to_tensor(inputs["text_a"])
        choices = tf.convert_to_tensor(inputs["choices"])
        if text_a.shape.rank == 2 and text_a.shape[1] == 1:
            text_a = tf.squeeze(text_a, 1)
        if choices.shape.rank != 2:
            raise OptionsError(f"choices must be [batch, num_choices] strings, got shape {choices.shape}")
        if self.num_choices is not None and choices.shape[1] not in (None, self.num_choices):
            raise OptionsError(f"this model scores {self.num_choices} choices, got {choices.shape[1]}")
        return text_a, choices

    def pack(self, inputs) -> dict:
        """Packed ids [batch, num_choices, seq_length] of the pairs (text_a, choice), in TensorFlow, of
        texts as ``call`` takes them: ``tokenizer.pre_tokenize()``'s strings (``TaskModel._texts``)."""
        text_a, choices = self._texts_and_choices(inputs)
        num_choices = tf.shape(choices)[1]
        packed = self.preprocessor([tf.repeat(text_a, num_choices), tf.reshape(choices, [-1])],
                                   pre_tokenized=True)
        return {k: tf.reshape(v, [-1, num_choices, tf.shape(v)[1]]) for k, v in packed.items()}

    def call(self, inputs, training=None):
        """[batch, num_choices] logits for texts (TensorFlow) or for packed ids [batch, num_choices,
        seq] (``pack``; any backend)."""
        if self.takes_ids(inputs):
            shape = keras.ops.shape(inputs["input_word_ids"])
            flat = {k: keras.ops.reshape(v, (-1, shape[-1])) for k, v in inputs.items()}
            scores = self.head(self.encode(flat, training=training)["pooled_output"], training=training)
            return keras.ops.reshape(scores, (-1, shape[1]))
        if host_packing():
            raise TaskModelError(f"MultipleChoiceModel under the {keras.backend.backend()} backend takes packed ids "
                                 "(model.pack(inputs) in TensorFlow); fit, evaluate and predict pack texts themselves")
        text_a, choices = self._texts_and_choices(inputs)
        num_choices = tf.shape(choices)[1]
        packed = self.preprocessor([tf.repeat(text_a, num_choices), tf.reshape(choices, [-1])],
                                   pre_tokenized=True)
        pooled = self.encode(packed, training=training)["pooled_output"]
        scores = self.head(pooled, training=training)
        return tf.reshape(scores, [-1, num_choices])

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def serve(self, inputs):
        logits = self(inputs, training=False)
        return {"logits": logits, "probabilities": tf.nn.softmax(logits),
                "choice_ids": tf.argmax(logits, axis=-1, output_type=tf.int32)}

    def predict_logits(self, inputs, batch_size=32, progress=None) -> np.ndarray:
        """[n, num_choices] logits, batched in order of length (``progress(rows)`` after each batch)."""
        inputs = {"text_a": np.asarray(inputs["text_a"], dtype=object),
                  "choices": np.asarray(inputs["choices"], dtype=object)}
        lengths = np.array([len(a) + max(len(c) for c in cs) for a, cs in zip(inputs["text_a"], inputs["choices"])])
        order = length_order(lengths)
        callbacks = progress_callbacks(progress, len(order), batch_size)
        return in_input_order(self.predict(take_rows(inputs, order), batch_size=batch_size, verbose=0,
                                           callbacks=callbacks), order)

    def predict_choices(self, inputs, batch_size=32) -> np.ndarray:
        return self.predict_logits(inputs, batch_size).argmax(axis=-1)
