"""The original BERT initializer: truncated normal with stddev ``initializer_range``."""

import keras


def truncated_normal(stddev=0.02):
    return keras.initializers.TruncatedNormal(stddev=stddev)
