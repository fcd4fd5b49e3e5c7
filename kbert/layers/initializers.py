"""The original BERT initializer: truncated normal with stddev ``initializer_range``."""

import contextlib
import contextvars

import keras

_WEIGHTS_READ_NEXT = contextvars.ContextVar("kbert_weights_read_next", default=False)


def truncated_normal(stddev=0.02):
    # Made either way: an unseeded Keras initializer takes its seed from Python's ``random`` when it
    # is made, so skipping it would shift every draw after a load (a new head's weights under the
    # same --seed) against earlier kbert versions.
    drawn = keras.initializers.TruncatedNormal(stddev=stddev)
    return keras.initializers.Zeros() if _WEIGHTS_READ_NEXT.get() else drawn


@contextlib.contextmanager
def weights_read_next():
    """Layers built inside start their BERT-initialized weights at zero instead of drawing them:
    for a model whose every weight is read from a file right after (``kbert.model_dir.load_encoder``,
    which refuses a file that does not fill every variable). Drawing BERT-Base's 110M truncated
    normals was most of its build time before its weights were read (docs/bench/code-notes)."""
    token = _WEIGHTS_READ_NEXT.set(True)
    try:
        yield
    finally:
        _WEIGHTS_READ_NEXT.reset(token)
