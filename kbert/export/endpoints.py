"""The ``serve`` / ``serving_default`` endpoints that Keras' ``TFSMLayer`` calls.

``keras.layers.TFSMLayer(path, call_endpoint=NAME)`` calls ``getattr(saved_model, NAME)(inputs)``
with one positional argument, and falls back to ``signatures[NAME]`` (keyword arguments only,
which fails with "too many positional arguments"). So each export carries both names as
attributes: tf.functions that take the signature's inputs as one positional argument, a dict of
named tensors — and, where the signature has a single string input (``text``), also the bare
[batch] string tensor, as TF Hub's preprocessors take it. ``signatures["serving_default"]`` (TF
Serving) is unchanged.
"""

from __future__ import annotations

import tensorflow as tf

KERAS_ENDPOINTS = ("serve", "serving_default")


def add_keras_endpoints(module, fn, input_spec: dict, bare_key: str | None = None):
    """Sets ``module.serve`` and ``module.serving_default`` to ``fn`` (which takes the dict
    ``input_spec`` positionally); with ``bare_key``, a bare tensor of that key's spec works too."""

    @tf.function(autograph=False)
    def endpoint(inputs):
        if not isinstance(inputs, dict):
            inputs = {bare_key: inputs}
        return fn(inputs)

    endpoint.get_concrete_function(dict(input_spec))
    if bare_key is not None:
        endpoint.get_concrete_function(input_spec[bare_key])
    for name in KERAS_ENDPOINTS:
        setattr(module, name, endpoint)
    return endpoint
