"""TextClassifier, TextRegressor, MultiLabelClassifier on BERT-Tiny: raw strings in, training,
save/reload, and the in-graph path checked against the preprocessor + encoder + head by hand."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.tasks import (MultiLabelClassifier, TaskModelError, TextClassifier, TextRegressor,
                         load_task_model)
from kbert.tasks.core.metrics import f1

TEXTS = ["a great and moving film", "dull , lifeless and far too long", "i loved every minute",
         "the worst script of the year", "brilliant acting", "a tedious mess",
         "funny , warm and wise", "nothing works here"]
LABELS = np.array([1, 0, 1, 0, 1, 0, 1, 0])


def _fit_losses(model, x, y, epochs=12, lr=2e-3):
    keras.utils.set_random_seed(1)
    model.compile(keras.optimizers.Adam(lr))
    return model.fit(x, y, epochs=epochs, batch_size=8, verbose=0, shuffle=False).history["loss"]


@pytest.mark.slow
def test_classifier_learns_tiny_data_and_reloads(tiny_model_dir, tmp_path):
    model = TextClassifier.from_model_dir(tiny_model_dir, label_names=["negative", "positive"], seq_length=16)
    losses = _fit_losses(model, TEXTS, LABELS)  # a plain list of str works as Keras input
    assert losses[-1] < 0.5 * losses[0], losses
    assert model.predict_labels(TEXTS) == [["negative", "positive"][i] for i in LABELS]

    model.save_model_dir(tmp_path / "clf", extra_info={"task_name": "toy"})
    meta = json.loads((tmp_path / "clf" / "kbert.json").read_text())
    assert meta["task"]["type"] == "text_classifier"
    assert meta["task"]["label_names"] == ["negative", "positive"]
    assert meta["task"]["seq_length"] == 16 and meta["task"]["num_segments"] == 1
    assert meta["heads"]["classifier"]["weights"] == "classifier.weights.h5"

    reloaded = load_task_model(tmp_path / "clf")
    assert isinstance(reloaded, TextClassifier) and reloaded.saved_task_info == {"task_name": "toy"}
    np.testing.assert_array_equal(reloaded.predict_logits(TEXTS), model.predict_logits(TEXTS))
    served = reloaded.serve(tf.constant(TEXTS[:3]))
    assert [s.decode() for s in served["labels"].numpy()] == ["positive", "negative", "positive"]
    np.testing.assert_allclose(served["probabilities"].numpy().sum(axis=1), 1.0, rtol=1e-6)


@pytest.mark.slow
def test_fit_and_evaluate_take_plain_python_lists(tiny_model_dir):
    """model.fit(list_of_str, list_of_int): the README's first example. Keras refuses a string
    tensor beside a plain list of labels; the task model turns the labels into an array."""
    model = TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, seq_length=16)
    model.compile(keras.optimizers.Adam(1e-3))
    history = model.fit(TEXTS, LABELS.tolist(), epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    loss, accuracy = model.evaluate(TEXTS, LABELS.tolist(), batch_size=4, verbose=0)
    assert np.isfinite(loss) and 0.0 <= accuracy <= 1.0


@pytest.mark.slow
def test_fit_traces_the_train_step_once(tiny_model_dir):
    """No variable is created inside model.fit's traced step (the optimizer's slots are built
    before): a step that creates variables makes tf.function trace the whole graph twice."""
    model = TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, seq_length=16)
    model.compile(keras.optimizers.AdamW(1e-3))
    created = []

    def creator(next_creator, **kwargs):
        if tf.inside_function():  # created while tracing the train step
            created.append(kwargs.get("name"))
        return next_creator(**kwargs)

    with tf.variable_creator_scope(creator):
        model.fit(TEXTS, LABELS, epochs=1, batch_size=4, verbose=0)
    assert created == []
    assert model.optimizer.built and model.optimizer.iterations.numpy() == -(-len(TEXTS) // 4)


def test_pair_inputs_match_preprocessor_encoder_and_head(tiny_model_dir):
    """The model's in-graph path (pack a pair, trim the batch to its longest row) gives the logits
    of packing to the full seq_length by hand and running encoder and head on that."""
    model = TextClassifier.from_model_dir(tiny_model_dir, num_classes=3, num_segments=2, seq_length=64)
    a = np.array(["the cat sat on the mat", "short"], dtype=object)
    b = np.array(["a cat was sitting on a mat", "a much longer second sentence of the pair"], dtype=object)
    by_dict = model({"text_a": a, "text_b": b}).numpy()
    by_tuple = model((tf.constant(a), tf.constant(b))).numpy()
    packed = model.preprocessor([tf.constant(a), tf.constant(b)])
    assert packed["input_word_ids"].shape == (2, 64)
    by_hand = model.head(model.encoder(packed, training=False)["pooled_output"]).numpy()
    np.testing.assert_allclose(by_dict, by_hand, atol=2e-5)
    np.testing.assert_array_equal(by_dict, by_tuple)
    # Swapping the texts of a pair changes the input (segment ids), so the output changes.
    assert not np.allclose(model({"text_a": b, "text_b": a}).numpy(), by_dict)
    with pytest.raises(ValueError, match="built for 2 text input"):
        model(tf.constant(a))


def test_reload_refuses_another_head_size(tiny_model_dir, tmp_path):
    model = TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, seq_length=16)
    model.save_model_dir(tmp_path / "m")
    with pytest.raises(TaskModelError, match="num_classes=2 but num_classes=5"):
        TextClassifier.from_model_dir(tmp_path / "m", num_classes=5)
    fresh = TextClassifier.from_model_dir(tmp_path / "m", num_classes=5, load_head=False)
    assert fresh.num_classes == 5
    with pytest.raises(TaskModelError, match="no 'task' object"):
        load_task_model(tiny_model_dir)


@pytest.mark.slow
def test_regressor_learns_scores(tiny_model_dir, tmp_path):
    model = TextRegressor.from_model_dir(tiny_model_dir, num_segments=2, seq_length=24)
    x = {"text_a": np.array(TEXTS, dtype=object), "text_b": np.array(TEXTS[::-1], dtype=object)}
    y = (LABELS * 4.0 + 0.5).astype("float32")  # 4.5 for the positive texts, 0.5 for the others
    losses = _fit_losses(model, x, y, epochs=60, lr=1e-3)  # (it first learns the mean, then the texts)
    assert losses[-1] < 0.15 * losses[0], losses
    scores = model.serve(x)["scores"].numpy()
    assert scores.shape == (len(TEXTS),)
    model.save_model_dir(tmp_path / "reg")
    np.testing.assert_array_equal(load_task_model(tmp_path / "reg").predict_logits(x), model.predict_logits(x))


@pytest.mark.slow
def test_multi_label_sigmoid_per_label(tiny_model_dir):
    names = ["funny", "sad", "long"]
    y = np.array([[1, 0, 0], [0, 1, 1], [1, 0, 0], [0, 1, 0], [0, 0, 0], [0, 1, 1], [1, 0, 0], [0, 1, 0]])
    # Without dropout: memorising 8 texts is only the means here, and with the encoder's dropout 30
    # epochs did it for 1 of 5 random heads (5 of 5 without).
    model = MultiLabelClassifier.from_model_dir(tiny_model_dir, label_names=names, seq_length=16, encoder_overrides=dict(
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    losses = _fit_losses(model, TEXTS, y.astype("float32"), epochs=30, lr=3e-3)
    assert losses[-1] < 0.3 * losses[0], losses
    predicted = model.predict_indicators(TEXTS)
    assert predicted.shape == y.shape
    assert f1(predicted, y, average="micro") == 1.0 and f1(predicted, y, average="macro") == 1.0
    assert model.predict_labels(TEXTS)[1] == ["sad", "long"]
    probabilities = model.serve(tf.constant(TEXTS))["probabilities"].numpy()
    # Independent sigmoids: rows need not sum to 1 (row 4 has no label at all).
    assert probabilities[4].max() < 0.5 and probabilities[1].sum() > 1.0


@pytest.mark.parametrize("name, kwargs", [("TextClassifier", {"num_classes": 2}), ("TextRegressor", {}),
                                          ("MultiLabelClassifier", {"num_labels": 3}), ("TokenTagger", {"label_names": ["O", "B-X", "I-X"]}),
                                          ("SpanQuestionAnswerer", {"max_query_length": 6, "doc_stride": 4}), ("MultipleChoiceModel", {"num_choices": 2})])
def test_a_new_task_model_is_built(tiny_model_dir, name, kwargs):
    """Keras' predict and predict_on_batch call a model that is not built on the batch first, outside
    their compiled function (under JAX op by op, each op compiled, on every predict_on_batch call):
    every task model is built when made, its own flag included."""
    import kbert.tasks

    model = getattr(kbert.tasks, name).from_model_dir(tiny_model_dir, seq_length=16, **kwargs)
    assert [layer.name for layer in model._flatten_layers() if not layer.built] == []


@pytest.mark.slow
def test_bilstm_classifier_reads_each_directions_end_and_reloads(tiny_model_dir, tmp_path):
    """--bilstm (Table 5's "+ BiLSTM"): the encoder's tokens through a BiLSTM (numpy by hand), the forward
    output at each row's last real token and the backward one at [CLS] into the dense layer; the same
    logits from the texts, from the ids signature of an export, and after a reload."""
    import types

    from fixtures.numpy_lstm import numpy_bilstm
    from kbert.errors import OptionsError
    from kbert.tasks.core.heads import PooledHead, RecurrentPooledHead
    from kbert.tasks.core.registry import get_task

    keras.utils.set_random_seed(0)
    model = TextClassifier.from_model_dir(tiny_model_dir, num_classes=3, seq_length=16, bilstm=5)
    assert isinstance(model.head, RecurrentPooledHead) and model.head.dense.kernel.shape == (10, 3)
    texts = np.array(["short", "a much longer text than the first one is"], dtype=object)
    packed = {k: v.numpy() for k, v in model.pack(tf.constant(texts)).items()}
    mask = packed["input_mask"]
    out = numpy_bilstm(model.encoder(packed, training=False)["sequence_output"].numpy(), mask,
                       model.head.recurrent[0])
    last = mask.sum(axis=1) - 1
    pooled = np.concatenate([out[np.arange(2), last, :5], out[:, 0, 5:]], axis=-1)
    expected = pooled @ model.head.dense.kernel.numpy() + model.head.dense.bias.numpy()
    np.testing.assert_allclose(model(tf.constant(texts)).numpy(), expected, rtol=1e-4, atol=1e-5)
    _, serve_ids = get_task("glue/sst2").task_type.signatures(types.SimpleNamespace(model=model))
    ids = serve_ids({k: tf.constant(v, tf.int32) for k, v in packed.items()})
    np.testing.assert_allclose(ids["logits"].numpy(), expected, rtol=1e-4, atol=1e-5)
    reloaded = load_task_model(model.save_model_dir(tmp_path / "m"))
    assert reloaded.bilstm == 5 and json.loads((tmp_path / "m" / "kbert.json").read_text())["task"]["bilstm"] == 5
    np.testing.assert_array_equal(reloaded(tf.constant(texts)).numpy(), model(tf.constant(texts)).numpy())
    plain = TextClassifier.from_model_dir(tiny_model_dir, num_classes=3, seq_length=16, bilstm=0)
    assert type(plain.head) is PooledHead and "bilstm" not in plain.task_metadata()
    with pytest.raises(OptionsError, match=r"^bilstm \(--bilstm\) 5: window_pooling 'attention' reads"):
        TextClassifier.from_model_dir(tiny_model_dir, num_classes=3, long_documents="windows",
                                      window_pooling="attention", bilstm=5)


def test_bilstm_models_evaluate_their_own_loss_with_their_metrics(tiny_model_dir):
    """With --bilstm the logits carry no Keras mask into compile()'s loss and metrics: a pair
    classifier's evaluate (loss and accuracy, through Keras' compiled metrics) equals the sparse
    cross-entropy and accuracy of its own logits, computed here in numpy."""
    keras.utils.set_random_seed(1)
    model = TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, num_segments=2, seq_length=16, bilstm=4)
    model.compile(optimizer="adam", metrics=["accuracy"])
    pairs = {"text_a": np.array(["a short one", "the cat sat", "x"], dtype=object),
             "text_b": np.array(["and its pair", "on a very long mat indeed", "y"], dtype=object)}
    labels = np.array([0, 1, 1])
    logits = model.predict(pairs, verbose=0)
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    expected_loss = -np.log(probabilities[np.arange(3), labels]).mean()
    result = model.evaluate(pairs, labels, batch_size=3, return_dict=True, verbose=0)
    np.testing.assert_allclose(result["loss"], expected_loss, rtol=1e-5)
    assert result["accuracy"] == pytest.approx((logits.argmax(-1) == labels).mean())
