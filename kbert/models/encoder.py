"""BertEncoder: a functional Keras model with TF Hub BERT input and output names."""

import keras
from keras import ops

from kbert.config import BertConfig
from kbert.layers import BertEmbeddings, TransformerBlock
from kbert.layers.initializers import truncated_normal
from kbert.api_export import kbert_export

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


@kbert_export("kbert.BertEncoder")
class BertEncoder(keras.Model):
    """BERT encoder (Devlin et al. 2018), a functional Keras model with TF Hub's input and output names.

    Inputs (dict of int32 [batch, seq]): ``input_word_ids``, ``input_mask``, ``input_type_ids``.
    Outputs (dict): ``sequence_output`` [batch, seq, H], ``pooled_output`` [batch, H] (tanh dense
    on the first token), ``encoder_outputs`` (list of L [batch, seq, H], one per block).

    ``encoder(inputs, output_attentions=True)`` adds ``attention_probs``: a list of L float32
    [batch, heads, seq, seq], one per block, each row the softmax over the keys (padded keys 0).
    Without it the call is the functional graph itself, the same ops as ever.

    Args:
        config: a ``kbert.BertConfig`` (or its dict); default: BERT-Base.
        dtype: the layers' dtype policy (e.g. ``"mixed_bfloat16"``); default: Keras' global policy.
        attention_impl: "auto" (the default: the fastest faithful path on the device), "plain" (the
            reference) or "fused", the attention every block runs (``kbert.layers.accel``: cuDNN
            flash attention with the attention dropout on NVIDIA GPUs under JAX). A run-time choice
            like ``dtype``: the weights and ``bert_config.json`` are the same either way.
        **kwargs: passed to ``keras.Model`` (``name``).

    Examples:
        >>> import numpy as np
        >>> import kbert
        >>> encoder = kbert.BertEncoder(kbert.BertConfig.preset("tiny", vocab_size=100))
        >>> ids = np.array([[2, 17, 42, 3, 0]], dtype="int32")
        >>> outputs = encoder({"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
        ...                    "input_type_ids": np.zeros_like(ids)})
        >>> outputs["sequence_output"].shape, outputs["pooled_output"].shape, len(outputs["encoder_outputs"])
        (TensorShape([1, 5, 128]), TensorShape([1, 128]), 2)
    """

    def __init__(self, config: BertConfig | None = None, dtype=None, attention_impl="auto", **kwargs):
        config = config or BertConfig()
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        config.validate()
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}

        embeddings = BertEmbeddings(
            config.vocab_size,
            config.hidden_size,
            config.max_position_embeddings,
            config.type_vocab_size,
            dropout=config.hidden_dropout_prob,
            initializer_range=config.initializer_range,
            dtype=dtype,
            name="embeddings",
        )
        blocks = [
            TransformerBlock(
                config.hidden_size,
                config.num_attention_heads,
                config.intermediate_size,
                activation=config.hidden_act,
                dropout=config.hidden_dropout_prob,
                attention_dropout=config.attention_probs_dropout_prob,
                initializer_range=config.initializer_range,
                attention_impl=attention_impl,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(config.num_hidden_layers)
        ]
        pooler = keras.layers.Dense(
            config.hidden_size,
            activation="tanh",
            kernel_initializer=truncated_normal(config.initializer_range),
            dtype=dtype,
            name="pooler",
        )

        x = embeddings(inputs["input_word_ids"], inputs["input_type_ids"])
        mask = inputs["input_mask"]
        encoder_outputs = []
        for block in blocks:
            x = block(x, padding_mask=mask)
            encoder_outputs.append(x)
        pooled = pooler(ops.take(x, 0, axis=1))
        outputs = {
            "sequence_output": x,
            "pooled_output": pooled,
            "encoder_outputs": encoder_outputs,
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.config = config
        self.attention_impl = attention_impl
        self.embeddings = embeddings
        self.blocks = blocks
        self.pooler = pooler

    def call(self, inputs, training=None, mask=None, output_attentions=False):
        if not output_attentions:
            return super().call(inputs, training=training, mask=mask)
        x = self.embeddings(inputs["input_word_ids"], inputs["input_type_ids"], training=training)
        encoder_outputs, attention_probs = [], []
        for block in self.blocks:
            x, probabilities = block(x, padding_mask=inputs["input_mask"], training=training, return_attention=True)
            encoder_outputs.append(x)
            attention_probs.append(probabilities)
        return {
            "sequence_output": x,
            "pooled_output": self.pooler(ops.take(x, 0, axis=1)),
            "encoder_outputs": encoder_outputs,
            "attention_probs": attention_probs,
        }

    def attention_probs(self, inputs, training=None):
        """The attention probabilities alone: a list (one per block) of [batch, heads, seq, seq]."""
        return self(inputs, training=training, output_attentions=True)["attention_probs"]

    def outputs_at(self, inputs, positions, training=None):
        """The encoder's outputs needed only at ``positions`` [batch, P] (int) of each sequence.

        Returns ``{"sequence_output": [batch, P, H], "pooled_output": [batch, H]}``, the same
        numbers as ``sequence_output`` gathered at ``positions`` and ``pooled_output`` of a full
        call, but the last block runs its queries, FFN and LayerNorms only at ``positions`` and
        [CLS] (its keys and values still cover every position). Pre-training reads the last block
        at the ~15% masked positions only, so this saves about two thirds of one block's work,
        forward and backward (a pre-training step's saving: docs/bench/code-notes).
        """
        x = self.embeddings(inputs["input_word_ids"], inputs["input_type_ids"], training=training)
        mask = inputs["input_mask"]
        for block in self.blocks[:-1]:
            x = block(x, padding_mask=mask, training=training)
        positions = ops.cast(positions, "int32")
        rows = ops.concatenate([ops.zeros_like(positions[:, :1]), positions], axis=1)  # [CLS] first
        out = self.blocks[-1](x, padding_mask=mask, training=training, positions=rows)
        return {"sequence_output": out[:, 1:], "pooled_output": self.pooler(out[:, 0])}

    @property
    def word_embeddings(self):
        """The [vocab, H] table the MLM decoder is tied to."""
        return self.embeddings.word_embeddings.embeddings

    @property
    def _default_save_signature(self):
        """None: no default signature when a SavedModel holds the encoder.

        Keras' own (``keras/src/backend/tensorflow/layer.py``, the attribute ``tf.saved_model.save``
        takes a root's default signature from) is a property that makes a new tf.function of the
        call each time it is read, and the save reads every attribute of every object it walks: each
        kbert export traced the whole encoder once more and stored a function nothing calls. It could not serve as a signature either (its
        ``encoder_outputs`` is a list), so ``tf.saved_model.save(encoder)`` failed with it and works
        without it. kbert's exports name their signatures (kbert.export).
        """
        return None

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name, "attention_impl": self.attention_impl}

    @classmethod
    def from_config(cls, config):
        return cls(BertConfig.from_dict(config["config"]), name=config.get("name"),
                   attention_impl=config.get("attention_impl", "auto"))
