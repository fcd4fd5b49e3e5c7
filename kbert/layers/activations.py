"""``hidden_act`` names -> functions (Google's ``bert_config.json`` semantics, see kbert.config)."""

import keras

from kbert.config import ConfigError


def gelu_tanh(x):
    """GELU, tanh approximation: google-research/bert ``modeling.gelu``."""
    return keras.activations.gelu(x, approximate=True)


def gelu_exact(x):
    """GELU with erf: the paper's definition, Hugging Face's ``"gelu"``."""
    return keras.activations.gelu(x, approximate=False)


_ACTIVATIONS = {
    "gelu": gelu_tanh,
    "gelu_exact": gelu_exact,
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
    "silu": keras.activations.silu,
    "linear": keras.activations.linear,
}


def get_activation(name: str):
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ConfigError(f"unknown activation {name!r}; expected one of {', '.join(_ACTIVATIONS)}",
                          field="hidden_act") from None
