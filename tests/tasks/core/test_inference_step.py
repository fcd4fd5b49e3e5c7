"""kbert.tasks.core.inference_step: one traced step per (model, function), kept while the model
lives and freed with it; a span-QA model answering six times (six evaluations of a fine-tuning run)
traces once and TensorFlow never warns of retracing."""

import gc
import weakref

import keras
import pytest
import tensorflow as tf

from kbert.tasks.core.inference_step import _STEPS, inference_step

from kbert.tasks import SpanQuestionAnswerer

CONTEXT = ("Die Stadt Zürich liegt am Zürichsee, nicht am Genfersee. 東京は日本の首都です. "
           "The Eiffel Tower stands in Paris, the capital of France, near the river Seine.")
QUESTIONS = ["Which lake is Zürich on?", "What is the capital of Japan?", "Which river flows near the tower?"]


@pytest.mark.slow
def test_repeated_predictions_do_not_retrace(tiny_model_dir):
    """Each evaluation of a fine-tuning run predicts again: the model's traced step is reused, so
    TensorFlow's "triggered tf.function retracing" warning never comes (it did after a few epochs).

    TensorFlow counts traces per Python function it wraps, across every ``tf.function`` made of it:
    other models that predicted earlier in the same process (other tests, or a user's notebook) must
    not count against this one, so the test first has a few other models trace their own steps."""
    import logging

    for _ in range(4):  # each a first trace of another model's step, as earlier tests leave behind
        SpanQuestionAnswerer.from_model_dir(tiny_model_dir, seq_length=32, doc_stride=8,
                                            max_query_length=12).answer(QUESTIONS[:1], [CONTEXT])

    class Records(logging.Handler):
        def __init__(self):
            super().__init__(logging.WARNING)
            self.messages = []

        def emit(self, record):
            self.messages.append(record.getMessage())

    records = Records()
    logger = logging.getLogger("tensorflow")  # TensorFlow's logger does not propagate to the root
    logger.addHandler(records)
    try:
        model = SpanQuestionAnswerer.from_model_dir(tiny_model_dir, seq_length=32, doc_stride=8, max_query_length=12)
        for _ in range(6):  # six "epochs" of evaluation (TensorFlow warns at 5 traces in its last 10 calls)
            model.answer(QUESTIONS, [CONTEXT] * 3)
    finally:
        logger.removeHandler(records)
    assert not [m for m in records.messages if "retracing" in m], records.messages
    # and, whatever TensorFlow chose to log, this model's step was traced once for all six calls
    from kbert.tasks.core.inference_step import inference_step
    from kbert.tasks.span_qa.model import _window_logits

    assert inference_step(model, _window_logits).experimental_get_tracing_count() == 1


def _double(model, x):
    return model(x) * 2


def _plus_one(model, x):
    return model(x) + 1


def test_one_step_per_model_and_function_traced_once_per_shape_family():
    model = keras.Sequential([keras.layers.Dense(3)])
    model.build((None, 4))
    step = inference_step(model, _double)
    assert inference_step(model, _double) is step and inference_step(model, _plus_one) is not step
    other = keras.Sequential([keras.layers.Dense(3)])
    other.build((None, 4))
    assert inference_step(other, _double) is not step  # each model its own step
    for rows in (1, 2, 5, 7):  # batch sizes: one trace with reduce_retracing's relaxed shape
        x = tf.random.normal([rows, 4])
        assert tf.reduce_all(step(x) == model(x) * 2)
    assert step.experimental_get_tracing_count() <= 2
    alive = weakref.ref(model)
    assert alive() in _STEPS
    del model, step
    gc.collect()
    assert alive() is None  # the steps hold the model weakly: freed with them
