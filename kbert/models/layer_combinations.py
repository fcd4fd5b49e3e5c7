"""The layer combinations of the paper's Table 7 (§5.4, the feature-based approach): which of an
encoder's layers, and how combined, make each token's feature vector.

"Layers" are the embedding output (word + position + type embeddings after LayerNorm: the input
of the first Transformer block) followed by the L block outputs (the encoder's ``encoder_outputs``);
L + 1 tensors, as Hugging Face's ``hidden_states``. Combinations (all [batch, seq, H] except the
concat, [batch, seq, 4H]):

  embeddings             layer 0, the embedding output
  second_to_last_hidden  block L-1
  last_hidden            block L (= sequence_output)
  sum_last_four_hidden   blocks L-3 .. L, summed
  concat_last_four_hidden  blocks L-3 .. L, concatenated on the feature axis (in that order)
  sum_all_layers         the embedding output and all L blocks, summed (the paper's "all 12
                         layers" of BERT-Base; here L + 1 tensors)

The paper's table says "weighted sum"; the weights are not given, so these are plain sums.
Written with ``keras.ops`` (and ``+``), so a combination applies to arrays, to tensors of any
backend and to a functional model's symbolic tensors: ``feature_model`` builds a Keras model of the
encoder that computes only the layers its combination reads. ``kbert.features`` (``kbert
features``, ``FeatureExtractor``) and the token tagger's feature-based mode
(``kbert.TokenTagger(features=...)``) both use this module.
"""

from __future__ import annotations

import keras

from kbert.api_export import kbert_export
from kbert.errors import OptionsError


def _sum(tensors):
    total = tensors[0]
    for t in tensors[1:]:
        total = total + t
    return total


COMBINATIONS = {
    "embeddings": lambda layers: layers[0],
    "second_to_last_hidden": lambda layers: layers[-2],
    "last_hidden": lambda layers: layers[-1],
    "sum_last_four_hidden": lambda layers: _sum(layers[-4:]),
    "concat_last_four_hidden": lambda layers: keras.ops.concatenate(layers[-4:], axis=-1),
    "sum_all_layers": lambda layers: _sum(layers),
}
kbert_export("kbert.features.COMBINATIONS")(COMBINATIONS)
_NEEDS_BLOCKS = {"second_to_last_hidden": 2, "sum_last_four_hidden": 4, "concat_last_four_hidden": 4}
# The width of each combination's vectors, in hidden sizes.
_WIDTH = {"concat_last_four_hidden": 4}


@kbert_export("kbert.features.check_combinations")
def check_combinations(names, num_blocks: int) -> tuple:
    """The names of ``combinations``, checked against ``COMBINATIONS`` and the encoder's depth.

    Args:
        names: combination names (``kbert.features.COMBINATIONS``: ``last_hidden``,
            ``sum_last_four_hidden``, ...).
        num_blocks: the encoder's number of Transformer blocks.

    Returns:
        ``names`` as a tuple.

    Raises:
        kbert.errors.OptionsError: an unknown name, or one that needs more blocks than there are
            (a ``ValueError``).

    Examples:
        >>> import kbert
        >>> kbert.features.check_combinations(["last_hidden"], num_blocks=2)
        ('last_hidden',)
        >>> kbert.features.check_combinations(["sum_last_four_hidden"], num_blocks=2)
        Traceback (most recent call last):
        ...
        kbert.errors.OptionsError: combination 'sum_last_four_hidden' needs 4 Transformer blocks; the encoder has 2
    """
    for name in names:
        if name not in COMBINATIONS:
            raise OptionsError(f"unknown combination {name!r}; expected one of {list(COMBINATIONS)}",
                               option="combinations", value=name)
        if num_blocks < _NEEDS_BLOCKS.get(name, 1):
            raise OptionsError(f"combination {name!r} needs {_NEEDS_BLOCKS[name]} Transformer blocks; "
                               f"the encoder has {num_blocks}", option="combinations", value=name)
    return tuple(names)


@kbert_export("kbert.features.combine_layers")
def combine_layers(layers, names=tuple(COMBINATIONS)) -> dict:
    """The named combinations of ``layers`` (the paper's Table 7).

    Args:
        layers: [embedding output, block 1, ..., block L], each [batch, seq, H].
        names: the combinations to compute (default: all of ``COMBINATIONS``).

    Returns:
        ``{name: array}``: [batch, seq, H] for each, [batch, seq, 4 H] for ``concat_last_four_hidden``.

    Examples:
        >>> import numpy as np
        >>> import kbert
        >>> layers = [np.full((1, 1, 2), float(i)) for i in range(3)]   # embeddings, block 1, block 2
        >>> combined = kbert.features.combine_layers(layers, ["last_hidden", "sum_all_layers"])
        >>> combined["last_hidden"].tolist(), combined["sum_all_layers"].tolist()
        ([[[2.0, 2.0]]], [[[3.0, 3.0]]])
    """
    check_combinations(names, len(layers) - 1)
    return {name: COMBINATIONS[name](list(layers)) for name in names}


def combination_width(name: str, hidden_size: int) -> int:
    """The width of combination ``name``'s vectors for an encoder of ``hidden_size`` (4 H for the concat)."""
    return _WIDTH.get(name, 1) * int(hidden_size)


def all_layers(encoder) -> list:
    """The symbolic outputs of ``encoder`` (a functional ``kbert.BertEncoder``): the embedding
    output, then each block's."""
    return [encoder.embeddings.output, *encoder.output["encoder_outputs"]]


def feature_model(encoder, name: str) -> keras.Model:
    """A Keras model from the encoder's packed inputs to combination ``name`` of its layers
    ([batch, seq, width]); it shares the encoder's layers and runs only those the combination reads
    (``embeddings`` runs no block). Raises an OptionsError as ``check_combinations``."""
    check_combinations((name,), encoder.config.num_hidden_layers)
    return keras.Model(encoder.inputs, COMBINATIONS[name](all_layers(encoder)), name=f"features_{name}")
