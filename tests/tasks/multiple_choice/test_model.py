"""MultipleChoiceModel: [batch, choices] logits from each choice's [CLS], training, reload."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.tasks import MultipleChoiceModel, load_task_model

CONTEXTS = ["She opened the fridge.", "He put on his running shoes.", "The kettle whistled.",
            "They boarded the plane."]
CHOICES = [["She took out the milk.", "She flew to Mars.", "She painted the sky.", "She ate the door."],
           ["He went for a jog.", "He sang to the moon.", "He drank the shoes.", "He mailed a river."],
           ["She poured the tea.", "She buried the kettle.", "The kettle ran away.", "He read the kettle."],
           ["The plane took off.", "They ate the plane.", "The plane sang.", "They knitted a cloud."]]
LABELS = np.array([0, 0, 0, 0])


def inputs(rows=slice(None)):
    return {"text_a": np.array(CONTEXTS, dtype=object)[rows], "choices": np.array(CHOICES, dtype=object)[rows]}


@pytest.mark.slow
def test_scores_each_choice_from_its_own_pair(tiny_model_dir):
    model = MultipleChoiceModel.from_model_dir(tiny_model_dir, seq_length=32)
    logits = model(inputs()).numpy()
    assert logits.shape == (4, 4)
    # Score of (context i, choice j) = head(pooled output of that pair alone).
    packed = model.preprocessor([tf.constant([CONTEXTS[1]]), tf.constant([CHOICES[1][2]])])
    alone = model.head(model.encoder(packed, training=False)["pooled_output"]).numpy()[0, 0]
    np.testing.assert_allclose(logits[1, 2], alone, atol=2e-5)
    three = model({"text_a": inputs()["text_a"], "choices": inputs()["choices"][:, :3]}).numpy()
    assert three.shape == (4, 3)  # any number of choices when num_choices is None
    np.testing.assert_allclose(three, logits[:, :3], atol=2e-5)
    with pytest.raises(ValueError, match="text_a"):
        model({"context": inputs()["text_a"], "choices": inputs()["choices"]})


@pytest.mark.slow
def test_trains_and_reloads(tiny_model_dir, tmp_path):
    model = MultipleChoiceModel.from_model_dir(tiny_model_dir, seq_length=32, num_choices=4)
    # Put the right answer in a different slot for each example.
    order = [np.roll(np.arange(4), k) for k in range(4)]
    x = {"text_a": inputs()["text_a"], "choices": np.array([np.array(CHOICES[i])[o] for i, o in enumerate(order)],
                                                           dtype=object)}
    y = np.array([int(np.flatnonzero(o == 0)[0]) for o in order])
    keras.utils.set_random_seed(0)
    model.compile(keras.optimizers.Adam(3e-3))
    losses = model.fit(x, y, epochs=20, batch_size=4, verbose=0).history["loss"]
    assert losses[-1] < 0.3 * losses[0], losses
    np.testing.assert_array_equal(model.predict_choices(x), y)
    model.save_model_dir(tmp_path / "mc")
    reloaded = load_task_model(tmp_path / "mc")
    assert reloaded.num_choices == 4
    np.testing.assert_array_equal(reloaded.predict_logits(x), model.predict_logits(x))
