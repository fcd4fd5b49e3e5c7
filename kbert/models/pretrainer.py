"""BertPretrainer: the encoder with the original pre-training heads and loss.

Loss = mean MLM cross-entropy over real (weight 1) masked positions + NSP cross-entropy,
as google-research/bert ``run_pretraining.py``; ``use_nsp=False`` trains MLM alone (the paper's
"No NSP" ablation).

Inputs: the encoder's three inputs plus ``masked_lm_positions`` [batch, P].
Targets (``y``): ``masked_lm_ids`` [batch, P], ``masked_lm_weights`` [batch, P] (1.0 real, 0.0 pad)
and, with NSP, ``next_sentence_labels`` [batch] (0 IsNext, 1 NotNext).

Under tf.distribute the MLM loss is normalised by the real predictions of the *global* batch;
the model does not know the strategy: the training code passes ``replicas`` (an object with
``num_replicas()``, ``sum(value)`` across replicas and ``logs(logs)``, e.g.
``kbert.training.distribute.StrategyReplicas()``). The default is one replica.
"""

import keras
from keras import ops

from kbert import compat
from kbert.layers import accel, tf_fast
from kbert.layers.heads import build_head
from kbert.models.encoder import INPUT_NAMES
from kbert.api_export import kbert_export


class SingleReplica:
    """``replicas`` for training on one device: sums are the values themselves."""

    def num_replicas(self) -> int:
        return 1

    def sum(self, value):
        return value

    def logs(self, logs: dict) -> dict:
        return logs


class LossParts:
    """The parts of the loss that ``compute_loss`` found (``mlm_loss``, ``mlm_correct``, ``nsp_loss``),
    read back by ``compute_metrics`` in the same step: Keras passes only the total between them."""

    def __init__(self):
        self.values = {}

    def update(self, **parts):
        self.values = parts

    def __getitem__(self, name):
        return self.values[name]


@kbert_export("kbert.BertPretrainer")
class BertPretrainer(accel.CompiledStepSettings, compat.LocalReplicaBuild, keras.Model):
    """The pre-training model: an encoder with the masked-LM and next-sentence heads and their loss.

    ``fit`` it on the batches of ``kbert.data.pretraining`` (what ``kbert.pretrain`` does): inputs
    are the encoder's three plus ``masked_lm_positions``; targets ``masked_lm_ids``,
    ``masked_lm_weights`` and ``next_sentence_labels``. The loss is the mean masked-LM cross-entropy
    over real predictions plus the NSP cross-entropy, as google-research/bert's ``run_pretraining.py``.

    Args:
        encoder: the ``kbert.BertEncoder`` to train.
        mlm_head: the masked-LM head (default: a new one, its decoder tied to the word embeddings).
        nsp_head: the next-sentence head (default: a new one).
        use_nsp: False trains the masked LM alone (RoBERTa's choice).
        replicas: under ``tf.distribute``, ``kbert.training.distribute.StrategyReplicas()`` (the
            loss is normalised over the global batch); default: one replica.
        full_rows: every row of every batch is full (``input_mask`` all 1s): the attention runs
            without a padding mask (under JAX on a GPU, cuDNN's kernel without one, which takes
            dropout's gradient). The caller guarantees it; a padded row would attend to its padding.
        **kwargs: passed to ``keras.Model``.

    Examples:
        >>> import numpy as np
        >>> import kbert
        >>> encoder = kbert.BertEncoder(kbert.BertConfig.preset("tiny", vocab_size=100))
        >>> pretrainer = kbert.BertPretrainer(encoder)
        >>> ids = np.array([[2, 17, 4, 3]], dtype="int32")
        >>> logits = pretrainer({"input_word_ids": ids, "input_mask": np.ones_like(ids),
        ...                      "input_type_ids": np.zeros_like(ids),
        ...                      "masked_lm_positions": np.array([[2]], dtype="int32")})
        >>> logits["mlm_logits"].shape, logits["nsp_logits"].shape
        (TensorShape([1, 1, 100]), TensorShape([1, 2]))
    """
    def __init__(self, encoder, mlm_head=None, nsp_head=None, use_nsp=True, replicas=None, full_rows=False, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.full_rows = bool(full_rows)
        self.use_nsp = use_nsp
        self.replicas = replicas or SingleReplica()
        self.loss_parts = LossParts()
        self.mlm_head = mlm_head or build_head("mlm", encoder.config)
        self.nsp_head = (nsp_head or build_head("nsp", encoder.config)) if use_nsp else None
        self.mlm_loss_tracker = keras.metrics.Mean(name="mlm_loss")
        # A weighted mean of per-prediction hits, which compute_loss finds with the loss.
        self.mlm_accuracy = keras.metrics.Mean(name="mlm_accuracy")
        if use_nsp:
            self.nsp_loss_tracker = keras.metrics.Mean(name="nsp_loss")
            self.nsp_accuracy = keras.metrics.SparseCategoricalAccuracy(name="nsp_accuracy")

    def call(self, inputs, training=None):
        # The last block only at the masked positions and [CLS]: the heads read nothing else.
        encoder_inputs = {k: inputs[k] for k in INPUT_NAMES}
        if self.full_rows:
            encoder_inputs["input_mask"] = None
        outputs = self.encoder.outputs_at(encoder_inputs, inputs["masked_lm_positions"], training=training)
        result = {"mlm_logits": self.mlm_head(outputs["sequence_output"], None, self.encoder.word_embeddings)}
        if self.use_nsp:
            result["nsp_logits"] = self.nsp_head(outputs["pooled_output"])
        return result

    # -- loss and metrics ---------------------------------------------------------------------
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        loss, parts = self._loss_and_parts(y, y_pred)
        if keras.backend.backend() == "tensorflow":
            self.loss_parts.update(**parts)
        return loss

    def _loss_and_parts(self, y, y_pred):
        replicas = self.replicas.num_replicas()
        weights = ops.cast(y["masked_lm_weights"], "float32")
        mlm_logits = ops.cast(y_pred["mlm_logits"], "float32")
        if tf_fast.kernels_enabled(mlm_logits):  # the vocabulary softmax (and accuracy) as one compiled kernel
            mlm_ce, mlm_correct = tf_fast.sparse_softmax_cross_entropy(
                y["masked_lm_ids"], mlm_logits, return_correct=True
            )
        else:
            mlm_ce = keras.losses.sparse_categorical_crossentropy(
                y["masked_lm_ids"], mlm_logits, from_logits=True
            )
            mlm_correct = keras.metrics.sparse_categorical_accuracy(y["masked_lm_ids"], mlm_logits)
        # Normalise by the number of real predictions in the *global* batch, so that the sum over
        # replicas is exactly the single-device loss (Keras sums replica losses' gradients).
        mlm_sum, mlm_count = ops.sum(mlm_ce * weights), ops.sum(weights)
        loss = mlm_sum / (self.replicas.sum(mlm_count) + 1e-5)
        # The metrics are means per prediction and per pair, as google-research/bert's evaluation
        # reports them: each batch's mean weighted by its count. A batch with no rows then counts
        # for nothing, where a plain mean of batch means counted it as a zero: graph-mode
        # ``evaluate`` runs one such empty step when a dataset of unknown length runs out
        # (keras-team/keras#23084), which made the held-out losses n/(n+1) of the truth.
        parts = {"mlm_loss": mlm_sum / (mlm_count + 1e-5), "mlm_count": mlm_count, "mlm_correct": mlm_correct}
        if self.use_nsp:
            nsp_ce = keras.losses.sparse_categorical_crossentropy(
                y["next_sentence_labels"], ops.cast(y_pred["nsp_logits"], "float32"), from_logits=True
            )
            pairs = ops.cast(ops.shape(nsp_ce)[0], "float32")
            loss = loss + ops.mean(nsp_ce) / replicas
            parts["nsp_loss"] = ops.sum(nsp_ce) / ops.maximum(pairs, 1.0)
            parts["nsp_pairs"] = pairs
        return loss, parts

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        weights = ops.cast(y["masked_lm_weights"], "float32")
        if keras.backend.backend() != "tensorflow":
            # JAX finds the loss inside its gradient transformation, whose values cannot be kept
            # for later: the parts are found again here (the heads' outputs are small).
            self.loss_parts.update(**self._loss_and_parts(y, y_pred)[1])
        self.mlm_loss_tracker.update_state(self.loss_parts["mlm_loss"], sample_weight=self.loss_parts["mlm_count"])
        self.mlm_accuracy.update_state(self.loss_parts["mlm_correct"], sample_weight=weights)
        if self.use_nsp:
            self.nsp_loss_tracker.update_state(self.loss_parts["nsp_loss"], sample_weight=self.loss_parts["nsp_pairs"])
            self.nsp_accuracy.update_state(y["next_sentence_labels"], y_pred["nsp_logits"])
        return self.replicas.logs(self.get_metrics_result())

    @property
    def metrics(self):
        tracker = compat.loss_tracker(self)
        metrics = [tracker] if tracker is not None else []
        metrics += [self.mlm_loss_tracker, self.mlm_accuracy]
        if self.use_nsp:
            metrics += [self.nsp_loss_tracker, self.nsp_accuracy]
        return metrics

    def heads(self):
        heads = {"mlm": self.mlm_head}
        if self.use_nsp:
            heads["nsp"] = self.nsp_head
        return heads
