"""BERT's LayerNorm: one epsilon for every LayerNorm of the model, and the call that may take the
TensorFlow fast path."""

import keras

from kbert.layers import tf_fast

# google-research/bert modeling.layer_norm (and Hugging Face's layer_norm_eps for BERT).
LAYER_NORM_EPSILON = 1e-12


def make_layer_norm(name):
    """A Keras LayerNormalization over the last axis with BERT's epsilon."""
    return keras.layers.LayerNormalization(epsilon=LAYER_NORM_EPSILON, name=name)


def layer_norm(layer, x):
    """``layer`` (a built LayerNormalization over the last axis) applied to ``x``: Keras' own
    formulation, or TensorFlow's fused one where the seam has it (``tf_fast.layer_norm``)."""
    if tf_fast.layer_norm_available():
        return tf_fast.layer_norm(layer, x)
    return layer(x)
