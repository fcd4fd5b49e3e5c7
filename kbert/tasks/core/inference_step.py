"""One traced prediction step per model, kept across calls.

A ``tf.function`` made anew for every evaluation traces again each time, and TensorFlow counts the
traces of the same Python code together: after a few evaluations (each epoch of fine-tuning) it
logs "N out of the last M calls ... triggered tf.function retracing". Keeping the function per
model traces it once per input shape family (``reduce_retracing``) for the model's lifetime.

TensorFlow keys that count by the wrapped function's ``__code__``, which every closure made here
would share: the first traces of other models (earlier evaluations, other models in a notebook)
would count against this one and trigger the warning. The step therefore wraps a callable object
(no ``__code__``), so each model's step is counted on its own.
"""

from __future__ import annotations

import weakref

import tensorflow as tf

# model -> {fn: its tf.function}; the functions hold the model weakly, so a model that is no longer
# used is freed with its steps.
_STEPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Step:
    """``fn(model, x)`` for one model, held weakly; its own key in TensorFlow's retrace count."""

    def __init__(self, model, fn):
        self._model = weakref.ref(model)
        self._fn = fn
        self.__name__ = f"{getattr(fn, '__name__', 'step')}_step"  # what TensorFlow's logs call it

    def __call__(self, x):
        return self._fn(self._model(), x)


def inference_step(model, fn):
    """``tf.function`` of ``fn(model, x)`` over ``x`` with ``reduce_retracing``, made on the first
    call for ``(model, fn)`` and reused after; ``fn`` is a module-level function."""
    steps = _STEPS.setdefault(model, {})
    if fn not in steps:
        steps[fn] = tf.function(_Step(model, fn), reduce_retracing=True)
    return steps[fn]
