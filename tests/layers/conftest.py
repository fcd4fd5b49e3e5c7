"""Fixtures of the layers' tests."""

import pytest

from kbert.layers import tf_fast


@pytest.fixture(params=["fast", "plain"])
def tf_path(request):
    """The test runs on TensorFlow's fast paths (kbert.layers.tf_fast) and again on the plain Keras ones."""
    if request.param == "fast":
        yield request.param
        return
    with tf_fast.disabled():
        yield request.param
