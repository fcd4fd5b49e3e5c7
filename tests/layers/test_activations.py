"""The GELU variants against their formulas; get_activation by name."""

import math

import numpy as np
import pytest

from kbert.config import ConfigError
from kbert.layers.activations import get_activation


def test_gelu_variants_match_their_formulas():
    x = np.linspace(-6, 6, 101).astype("float32")
    exact = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(get_activation("gelu_exact")(x), exact, atol=1e-6)
    np.testing.assert_allclose(get_activation("gelu")(x), tanh, atol=1e-6)
    assert np.abs(exact - tanh).max() > 1e-4  # the two really are different functions


def test_other_names_are_keras_functions_and_unknown_names_list_the_choices():
    x = np.linspace(-3, 3, 13).astype("float32")
    np.testing.assert_allclose(get_activation("relu")(x), np.maximum(x, 0))
    np.testing.assert_allclose(get_activation("tanh")(x), np.tanh(x), atol=1e-6)
    with pytest.raises(ConfigError, match="unknown activation 'swishy'; expected one of gelu, gelu_exact"):
        get_activation("swishy")
