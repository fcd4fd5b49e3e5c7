"""One traced prediction step per model, kept across calls.

A ``tf.function`` made anew for every evaluation traces again each time, and TensorFlow counts the
traces of the same Python code together: after a few evaluations (each epoch of fine-tuning) it
logs "N out of the last M calls ... triggered tf.function retracing". Keeping the function per
model traces it once per input shape family (``reduce_retracing``) for the model's lifetime.
"""

from __future__ import annotations

import weakref

import tensorflow as tf

# model -> {fn: its tf.function}; the functions hold the model weakly, so a model that is no longer
# used is freed with its steps.
_STEPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def inference_step(model, fn):
    """``tf.function`` of ``fn(model, x)`` over ``x`` with ``reduce_retracing``, made on the first
    call for ``(model, fn)`` and reused after; ``fn`` is a module-level function."""
    steps = _STEPS.setdefault(model, {})
    if fn not in steps:
        ref = weakref.ref(model)
        steps[fn] = tf.function(lambda x: fn(ref(), x), reduce_retracing=True)
    return steps[fn]
