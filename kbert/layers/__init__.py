"""Keras 3 layers of BERT, written with ``keras.ops``: they run on TensorFlow, JAX and torch.

Where TensorFlow has a faster formulation of the same numbers, a layer asks the one seam,
``kbert.layers.tf_fast``, and takes it there (``KBERT_FAST_PATHS=0`` runs the plain code on
TensorFlow too); tests/layers/test_tf_fast.py and tests/layers/test_backends.py hold both paths equal.
"""

from kbert.layers.activations import get_activation
from kbert.layers.attention import MultiHeadSelfAttention
from kbert.layers.embeddings import BertEmbeddings
from kbert.layers.transformer import TransformerBlock

__all__ = ["BertEmbeddings", "MultiHeadSelfAttention", "TransformerBlock", "get_activation"]
