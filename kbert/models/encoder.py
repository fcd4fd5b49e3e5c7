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
    on the first token; on the last real token when ``causal``), ``encoder_outputs`` (list of L
    [batch, seq, H], one per block).

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
        causal: left-only attention (a left-to-right language model, ``kbert.BertLMPretrainer``):
            each position attends only to itself and the positions to its left (always the plain
            attention). ``pooled_output`` then reads the last real token of each row (position
            ``sum(input_mask) - 1``), the only one that has seen the whole text (as GPT reads its
            last token), not [CLS], which sees only itself. Recorded in ``kbert.json`` (not in
            ``bert_config.json``), so every loader of the model directory builds it causal.
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

    def __init__(self, config: BertConfig | None = None, dtype=None, attention_impl="auto", causal=False, **kwargs):
        causal = bool(causal)
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
                causal=causal,
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
        pooled = pooler(pooled_token(x, mask, causal))
        outputs = {
            "sequence_output": x,
            "pooled_output": pooled,
            "encoder_outputs": encoder_outputs,
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.config = config
        self.attention_impl = attention_impl
        self.causal = causal
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
            "pooled_output": self.pooler(pooled_token(x, inputs["input_mask"], self.causal)),
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
        the pooled token ([CLS], or the last real token of a causal encoder; its keys and values
        still cover every position). Pre-training reads the last block
        at the ~15% masked positions only, so this saves about two thirds of one block's work,
        forward and backward (a pre-training step's saving: docs/bench/code-notes).
        """
        x = self.embeddings(inputs["input_word_ids"], inputs["input_type_ids"], training=training)
        mask = inputs["input_mask"]
        for block in self.blocks[:-1]:
            x = block(x, padding_mask=mask, training=training)
        positions = ops.cast(positions, "int32")
        if self.causal:
            pooled = ops.expand_dims(last_positions(mask, ops.shape(x)[0], ops.shape(x)[1]), 1)
        else:
            pooled = ops.zeros_like(positions[:, :1])  # [CLS]
        rows = ops.concatenate([pooled, positions], axis=1)  # the pooled token first
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
        return {"config": self.config.to_dict(), "name": self.name, "attention_impl": self.attention_impl,
                "causal": self.causal}

    @classmethod
    def from_config(cls, config):
        return cls(BertConfig.from_dict(config["config"]), name=config.get("name"),
                   attention_impl=config.get("attention_impl", "auto"), causal=config.get("causal", False))


def pooled_token(x, mask, causal: bool):
    """[batch, seq, H] -> the [batch, H] rows ``pooled_output`` reads: [CLS] (position 0), or for a
    causal encoder the last real token of each row (``last_positions``)."""
    if not causal:
        return ops.take(x, 0, axis=1)
    positions = last_positions(mask, ops.shape(x)[0], ops.shape(x)[1])
    index = ops.expand_dims(ops.expand_dims(positions, -1), -1)
    return ops.squeeze(ops.take_along_axis(x, index, axis=1), 1)


def last_positions(mask, batch, seq):
    """int32 [batch]: each row's last real token, ``sum(mask) - 1`` (0 for a row of padding alone),
    or ``seq - 1`` where ``mask`` is None (full rows)."""
    if mask is None:
        return ops.full((batch,), seq - 1, dtype="int32")
    return ops.maximum(ops.sum(ops.cast(mask, "int32"), axis=1) - 1, 0)
