"""What a token-level task model's head reads (span QA, tagging), and that head.

Three forms, chosen by two settings that the model directory records (kbert.json ``task``):

  (default)          the encoder's sequence output -> dropout + dense (``SequenceHead``): Figure 3 (c), (d)
  bilstm=UNITS       the sequence output -> a randomly initialised BiLSTM (UNITS per direction), trained
                     with the rest -> dropout + dense: the paper's Table 5 "+ BiLSTM"
  features=NAME      the feature-based approach of §5.4 (Table 7): the encoder is frozen (not trainable,
                     run without dropout), combination NAME of its layers
                     (``kbert.models.layer_combinations.COMBINATIONS``) -> a two-layer BiLSTM (``bilstm``
                     units per direction; default the encoder's hidden size) -> dropout + dense

The paper's §5.4 feeds the features "to a randomly initialized two-layer 768-dimensional BiLSTM
before the classification layer" for BERT-Base (H = 768); it does not say whether 768 is per
direction: here it is (the default units are H per direction, 2 H wide after each layer).
"""

from __future__ import annotations

from kbert.errors import OptionsError
from kbert.models.layer_combinations import combination_width, feature_model
from kbert.tasks.core.heads import RecurrentSequenceHead, SequenceHead
from kbert.tasks.core.options import check_bilstm

# The BiLSTM layers of the feature-based approach (§5.4: "two-layer"); "+ BiLSTM" has one.
FEATURE_LAYERS = 2


class SequenceFeatures:
    """Mix-in of the ``kbert.TaskModel`` subclasses whose head reads every position: builds the head
    (``sequence_head``), runs encoder and head (``sequence_logits``) and names the settings to save
    (``sequence_settings``). Supplies ``bilstm`` (units per direction, 0: none) and ``combination``
    (the ``features`` setting: a combination name, or None; the tagger's ``features`` is a method)."""

    bilstm = 0
    combination = None

    def sequence_head(self, num_outputs: int, *, dropout: float, bilstm=0, features=None):
        """The head (``self.head_name``) over the encoder; with ``features`` the encoder is frozen here."""
        encoder = self.encoder
        config = encoder.config
        bilstm = check_bilstm(bilstm)
        if features is not None:
            try:
                self.feature_model = feature_model(encoder, features)
            except OptionsError as e:
                raise OptionsError(f"features (--features) {features!r}: {e}", option="features",
                                   value=features) from None
            encoder.trainable = False  # its weights stay the init's; sequence_logits runs it without dropout
            bilstm = bilstm or config.hidden_size
        self.bilstm, self.combination = bilstm, features
        common = dict(dropout=dropout, initializer_range=config.initializer_range, name=self.head_name)
        if not bilstm:
            return SequenceHead(config.hidden_size, num_outputs, **common)
        width = combination_width(features, config.hidden_size) if features else config.hidden_size
        return RecurrentSequenceHead(width, num_outputs, bilstm, FEATURE_LAYERS if features else 1, **common)

    def sequence_logits(self, inputs: dict, training=None):
        """The head's output [batch, seq, num_outputs] for packed ``inputs``."""
        if self.combination is not None:
            vectors = self.feature_model(inputs, training=False)  # frozen: no dropout, ever
        else:
            vectors = self.encoder(inputs, training=training)["sequence_output"]
        if not self.bilstm:
            return self.head(vectors, training=training)
        return self.head(vectors, mask=inputs["input_mask"], training=training)

    def sequence_settings(self) -> dict:
        """``bilstm`` and ``features`` for kbert.json, where set (a model without them saves what it did before)."""
        return {**({"bilstm": self.bilstm} if self.bilstm else {}),
                **({"features": self.combination} if self.combination is not None else {})}
