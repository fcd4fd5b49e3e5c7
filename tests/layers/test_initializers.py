"""BERT's initializer: a truncated normal of the given stddev, zeros while weights are read next."""

import numpy as np

from kbert.layers.initializers import truncated_normal, weights_read_next


def test_truncated_normal_and_zeros_inside_weights_read_next():
    values = np.asarray(truncated_normal(0.02)((200, 100)))
    assert np.abs(values).max() <= 2 * 0.02 + 1e-7  # truncated at two standard deviations
    # a normal truncated at +-2 sigma has std 0.8796 sigma
    assert abs(values.std() - 0.8796 * 0.02) < 0.0005 and abs(values.mean()) < 0.0005
    with weights_read_next():
        assert not np.asarray(truncated_normal(0.02)((4, 3))).any()
        with weights_read_next():
            pass
        assert not np.asarray(truncated_normal(0.02)((4, 3))).any()  # nested exit keeps the outer state
    assert np.asarray(truncated_normal(0.02)((4, 3))).any()
