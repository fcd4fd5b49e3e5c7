"""Word + position + token-type embeddings, summed, then LayerNorm and dropout."""

import keras
from keras import ops

from kbert.errors import OptionsError
from kbert.layers import tf_fast
from kbert.layers.dropout import Dropout
from kbert.layers.initializers import truncated_normal
from kbert.layers.normalization import layer_norm, make_layer_norm


class BertEmbeddings(keras.layers.Layer):
    def __init__(
        self,
        vocab_size,
        hidden_size,
        max_position_embeddings=512,
        type_vocab_size=2,
        dropout=0.1,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.dropout_rate = dropout
        self.initializer_range = initializer_range
        init = truncated_normal(initializer_range)
        self.word_embeddings = keras.layers.Embedding(
            vocab_size, hidden_size, embeddings_initializer=init, name="word_embeddings"
        )
        self.token_type_embeddings = keras.layers.Embedding(
            type_vocab_size, hidden_size, embeddings_initializer=init, name="token_type_embeddings"
        )
        self.layer_norm = make_layer_norm("layer_norm")
        self.dropout = Dropout(dropout)

    def build(self, input_shape=None):
        self.word_embeddings.build((None, None))
        self.token_type_embeddings.build((None, None))
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_position_embeddings, self.hidden_size),
            initializer=truncated_normal(self.initializer_range),
        )
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, word_ids, type_ids, training=None):
        seq_length = ops.shape(word_ids)[1]
        _check_length(seq_length, self.max_position_embeddings)
        x = self.word_embeddings(word_ids) + self.token_type_embeddings(type_ids)
        x = x + ops.expand_dims(self.position_embeddings[:seq_length], 0)
        x = layer_norm(self.layer_norm, x)
        return self.dropout(x, training=training)

    def compute_output_shape(self, word_ids_shape, type_ids_shape=None):
        # Declared rather than traced: JAX's symbolic trace cannot prove that the position slice
        # [:seq] (min(max_positions, seq) rows) broadcasts against seq rows.
        return (*word_ids_shape, self.hidden_size)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            dropout=self.dropout_rate,
            initializer_range=self.initializer_range,
        )
        return config


def _check_length(seq_length, max_length):
    """A sequence longer than the position table is an error, not a silent broadcast failure."""
    message = f"sequence length exceeds max_position_embeddings ({max_length})"
    if isinstance(seq_length, int):
        if seq_length > max_length:
            raise OptionsError(f"sequence length {seq_length} exceeds max_position_embeddings ({max_length})",
                               option="seq_length", value=seq_length)
        return
    # Dynamic length (a traced TensorFlow graph with an unknown sequence dimension): check at run
    # time. (JAX and torch trace with concrete lengths: the check above ran.)
    if keras.backend.backend() == "tensorflow":
        tf_fast.assert_length(seq_length, max_length, message)
