"""BertLMPretrainer: a causal encoder trained as a left-to-right language model.

The BERT paper's Table 5 row "LTR & No NSP": the same encoder and data, but each position
attends only to itself and the positions to its left (``BertEncoder(causal=True)``) and predicts
the next token; no masking and no next-sentence prediction. The decoder is the masked-LM head of
``BertPretrainer`` (its transform and LayerNorm, logits against the tied word embeddings), so the
model directory holds the same ``mlm`` head weights, names and shapes.

Inputs: the encoder's three; the targets come from them (the token after each position, where
that token is real), so a batch needs no labels. Loss: the mean next-token cross-entropy over
every real prediction of the batch, normalised over the global batch under tf.distribute as
``BertPretrainer``'s masked LM (``replicas``).
"""

import keras
from keras import ops

from kbert import compat
from kbert.errors import OptionsError
from kbert.layers import accel, tf_fast
from kbert.layers.heads import build_head
from kbert.models.encoder import INPUT_NAMES
from kbert.models.pretrainer import LossParts, SingleReplica
from kbert.api_export import kbert_export


def next_token_targets(inputs):
    """``(ids, weights)``, each [batch, seq - 1]: the token after each position and 1.0 where that
    token is real (``input_mask``), else 0.0."""
    ids = ops.cast(inputs["input_word_ids"], "int32")[:, 1:]
    weights = ops.cast(inputs["input_mask"], "float32")[:, 1:]
    return ids, weights


@kbert_export("kbert.BertLMPretrainer")
class BertLMPretrainer(accel.CompiledStepSettings, compat.LocalReplicaBuild, keras.Model):
    """A left-to-right language model: a causal encoder predicting each next token.

    ``fit`` it on batches of the encoder's three inputs alone (``kbert.data.pretraining`` without a
    masker; what ``kbert.pretrain`` does with ``objective="ltr"``). The logits at position t predict
    the token at t + 1, for every t whose next token is real; the loss is their mean cross-entropy.
    Metrics: ``lm_loss`` and ``lm_accuracy``, means per prediction.

    Args:
        encoder: a ``kbert.BertEncoder`` built with ``causal=True`` (a bidirectional one would see
            the token it predicts: refused).
        lm_head: the decoder (default: a new masked-LM head, ``build_head("mlm", config)``, its
            output tied to the word embeddings; a pre-trained ``mlm`` head fits).
        replicas: under ``tf.distribute``, ``kbert.training.distribute.StrategyReplicas()``;
            default: one replica.
        **kwargs: passed to ``keras.Model``.

    Examples:
        >>> import numpy as np
        >>> import kbert
        >>> encoder = kbert.BertEncoder(kbert.BertConfig.preset("tiny", vocab_size=100), causal=True)
        >>> model = kbert.BertLMPretrainer(encoder)
        >>> ids = np.array([[2, 17, 4, 3, 0]], dtype="int32")
        >>> logits = model({"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
        ...                 "input_type_ids": np.zeros_like(ids)})["lm_logits"]
        >>> logits.shape    # positions 0..3 predict tokens 1..4
        TensorShape([1, 4, 100])
    """

    def __init__(self, encoder, lm_head=None, replicas=None, **kwargs):
        super().__init__(**kwargs)
        if not getattr(encoder, "causal", False):
            raise OptionsError("a left-to-right language model needs a causal encoder "
                               "(kbert.BertEncoder(config, causal=True)): a bidirectional one sees the next token",
                               option="encoder")
        self.encoder = encoder
        self.replicas = replicas or SingleReplica()
        self.loss_parts = LossParts()
        self.lm_head = lm_head or build_head("mlm", encoder.config)
        self.lm_loss_tracker = keras.metrics.Mean(name="lm_loss")
        self.lm_accuracy = keras.metrics.Mean(name="lm_accuracy")

    @property
    def mlm_head(self):
        """The decoder, under the name ``BertPretrainer`` gives its own (the same layer type)."""
        return self.lm_head

    def call(self, inputs, training=None):
        encoder_inputs = {k: inputs[k] for k in INPUT_NAMES}
        sequence = self.encoder(encoder_inputs, training=training)["sequence_output"]
        # The last position predicts nothing: its next token is outside the row.
        return {"lm_logits": self.lm_head(sequence[:, :-1], None, self.encoder.word_embeddings)}

    # -- loss and metrics ---------------------------------------------------------------------
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        loss, parts = self._loss_and_parts(x, y_pred)
        if keras.backend.backend() == "tensorflow":
            self.loss_parts.update(**parts)
        return loss

    def _loss_and_parts(self, x, y_pred):
        ids, weights = next_token_targets(x)
        logits = ops.cast(y_pred["lm_logits"], "float32")
        if tf_fast.kernels_enabled(logits):
            ce, correct = tf_fast.sparse_softmax_cross_entropy(ids, logits, return_correct=True)
        else:
            ce = keras.losses.sparse_categorical_crossentropy(ids, logits, from_logits=True)
            correct = keras.metrics.sparse_categorical_accuracy(ids, logits)
        # As BertPretrainer's masked LM: the loss over the global batch's real predictions; the
        # metric a mean per prediction (each batch weighted by its count; keras-team/keras#23084).
        total, count = ops.sum(ce * weights), ops.sum(weights)
        loss = total / (self.replicas.sum(count) + 1e-5)
        return loss, {"lm_loss": total / (count + 1e-5), "lm_count": count, "lm_correct": correct}

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        _, weights = next_token_targets(x)
        if keras.backend.backend() != "tensorflow":
            self.loss_parts.update(**self._loss_and_parts(x, y_pred)[1])
        self.lm_loss_tracker.update_state(self.loss_parts["lm_loss"], sample_weight=self.loss_parts["lm_count"])
        self.lm_accuracy.update_state(ops.reshape(ops.cast(self.loss_parts["lm_correct"], "float32"), (-1,)),
                                      sample_weight=ops.reshape(weights, (-1,)))
        return self.replicas.logs(self.get_metrics_result())

    @property
    def metrics(self):
        tracker = compat.loss_tracker(self)
        return ([tracker] if tracker is not None else []) + [self.lm_loss_tracker, self.lm_accuracy]

    def heads(self):
        """``{"mlm": decoder}``: saved as the masked-LM head is (same weights, names and shapes)."""
        return {"mlm": self.lm_head}
