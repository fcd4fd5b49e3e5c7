"""kbert.tasks.core.base.TaskModel: strings in through every form Keras users pass them (numpy unicode
and object arrays, lists, tensors, a dict of text inputs), the task's loss and metrics by default, and
a seq_length the encoder cannot take refused by name. (Saving and reloading: test_task_dir.py; ids
packed on the host: test_host_batches.py.)"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.errors import TaskModelError
from kbert.tasks import TextClassifier

TEXTS = ["a fine film", "nothing worked", "ünïcode and 字", "ok then"]


@pytest.fixture(scope="module")
def classifier(tiny_model_dir):
    return TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, seq_length=16)


@pytest.mark.slow
def test_every_form_of_strings_gives_the_same_answers(classifier):
    expected = classifier(tf.constant(TEXTS)).numpy()  # the graph call on a string tensor
    for form in (np.array(TEXTS), np.array(TEXTS, dtype=object), TEXTS, tf.constant(TEXTS), {"text_a": TEXTS}):
        np.testing.assert_allclose(classifier.predict(form, verbose=0), expected, atol=1e-5,
                                   err_msg=type(form).__name__)


@pytest.mark.slow
def test_fit_takes_lists_and_compiles_with_the_tasks_loss(tiny_model_dir):
    model = TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, seq_length=16)
    model.compile(keras.optimizers.Adam(1e-3))
    assert isinstance(model.loss, keras.losses.SparseCategoricalCrossentropy)
    before = [w.numpy().copy() for w in model.head.weights]
    history = model.fit(TEXTS, [0, 1, 1, 0], batch_size=2, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert any(not np.allclose(b, w.numpy()) for b, w in zip(before, model.head.weights))


def test_a_seq_length_beyond_the_encoders_positions_is_refused(tiny_model_dir):
    with pytest.raises(TaskModelError, match="seq_length 129 exceeds the encoder's max_position_embeddings 128"):
        TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, seq_length=129)
