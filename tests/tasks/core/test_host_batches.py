"""kbert.tasks.core.host_batches: ids packed on the host, checked under TensorFlow against the model's
own in-graph path. The packed batches carry the in-graph preprocessor's ids, trimmed to a multiple of
WIDTH_MULTIPLE positions and padded with rows of weight 0 to the row multiple; a ``network_runner``
gives what Keras' predict gives. (Under JAX the same code trains: tests/training/test_backends.py.)"""

import numpy as np
import pytest
import tensorflow as tf

from kbert.tasks import TextClassifier

TEXTS = ["a fine film", "nothing in it worked at all, not the plot and not the cast", "ünïcode and 字", "ok",
         "the best thing this year", "slow", "it was fine until the very end", "no", "yes and no", "a b c d e"]


@pytest.fixture(scope="module")
def classifier(tiny_model_dir):
    model = TextClassifier.from_model_dir(tiny_model_dir, num_classes=3, seq_length=48)
    rng = np.random.default_rng(0)
    for w in model.head.weights:  # a head that answers differently per text
        w.assign(rng.normal(0, 0.5, w.shape).astype("float32"))
    return model


def test_host_batches_hold_the_graphs_ids_trimmed_and_padded(classifier):
    labels = np.arange(len(TEXTS)) % 3
    batches = list(classifier.host_dataset(np.array(TEXTS), labels, batch_size=4))
    reference = classifier.preprocessor(tf.constant(TEXTS))
    assert [int(b[0]["input_word_ids"].shape[0]) for b in batches] == [8, 8, 8]  # ROW_MULTIPLE rows each
    for number, (ids, y, weights) in enumerate(batches):
        rows = TEXTS[number * 4:number * 4 + 4]
        width = int(ids["input_word_ids"].shape[1])
        longest = int(tf.reduce_max(tf.reduce_sum(reference["input_mask"][number * 4:number * 4 + 4], axis=1)))
        assert width % classifier.WIDTH_MULTIPLE == 0 and longest <= width < longest + classifier.WIDTH_MULTIPLE
        for key in ("input_word_ids", "input_mask", "input_type_ids"):
            np.testing.assert_array_equal(ids[key][:len(rows)], reference[key][number * 4:number * 4 + len(rows), :width])
            assert not np.any(ids[key][len(rows):])
        np.testing.assert_array_equal(weights, [1.0] * len(rows) + [0.0] * (8 - len(rows)))
        np.testing.assert_array_equal(y[:len(rows)], labels[number * 4:number * 4 + len(rows)])


@pytest.mark.slow
def test_a_network_runner_answers_as_keras_does(classifier, monkeypatch):
    expected = classifier.predict(np.array(TEXTS), batch_size=4, verbose=0)
    seen = []

    def runner(batch):  # the network computed elsewhere; here by Keras' own call on the packed ids
        seen.append({k: v.shape for k, v in batch.items()})
        return classifier.predict_on_batch(batch)

    monkeypatch.setattr(classifier, "network_runner", runner)
    assert classifier.packs_on_host
    got = classifier.predict(np.array(TEXTS), batch_size=4)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert [s["input_word_ids"][0] for s in seen] == [4, 4, 2]  # batches in order, real rows only
    widths = [s["input_word_ids"][1] for s in seen]
    assert widths[0] > widths[2]  # each cut to its longest row


def test_predict_ids_cuts_its_padding_back(classifier):
    ids = {k: v.numpy()[:3] for k, v in classifier.preprocessor(tf.constant(TEXTS[:3])).items()}
    width = int(ids["input_mask"].sum(axis=1).max())
    ids = {k: v[:, :width] for k, v in ids.items()}
    out = classifier.predict_ids(ids, per_position=False)
    assert out.shape == (3, 3)
    np.testing.assert_allclose(out, classifier.predict(np.array(TEXTS[:3]), verbose=0), atol=1e-5)
