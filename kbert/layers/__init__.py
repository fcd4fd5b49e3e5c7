"""Keras 3 layers of BERT, written with ``keras.ops`` so they stay backend-neutral."""

from kbert.layers.activations import get_activation
from kbert.layers.attention import MultiHeadSelfAttention
from kbert.layers.embeddings import BertEmbeddings
from kbert.layers.transformer import TransformerBlock

__all__ = ["BertEmbeddings", "MultiHeadSelfAttention", "TransformerBlock", "get_activation"]
