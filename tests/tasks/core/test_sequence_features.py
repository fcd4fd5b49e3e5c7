"""kbert.tasks.core.sequence_features: the token-level models' BiLSTM (``bilstm``, Table 5's "+ BiLSTM")
and feature-based (``features``, §5.4 / Table 7) forms. The BiLSTM tagger's logits against the encoder's
output through a numpy BiLSTM and dense layer; bilstm=0 as the model always was (one dense layer);
saved models reloaded with their settings; the feature-based tagger's encoder frozen (unchanged by
training, no dropout) while its BiLSTMs learn; every combination of Table 7 built, run and recomputed
from the encoder's layers; the refusals one line naming the setting."""

import json

import keras
import numpy as np
import pytest

import kbert
from kbert.errors import OptionsError
from kbert.tasks.core.heads import RecurrentSequenceHead, SequenceHead
from fixtures.numpy_lstm import numpy_bilstm

TAGS = ["O", "B-LOC", "I-LOC"]
WORDS = [["he", "went", "to", "new", "york"], ["hi"], ["the", "quick", "brown", "fox", "jumps", "over", "it"]]
LABELS = [[0, 0, 0, 1, 2], [0], [0, 0, 0, 1, 0, 0, 0]]
HIDDEN = 32


@pytest.fixture(scope="module")
def four_blocks(tmp_path_factory):
    """A small random encoder with four blocks (every combination of Table 7 applies)."""
    return kbert.random_model_dir(tmp_path_factory.mktemp("four") / "model", num_hidden_layers=4,
                                  hidden_size=HIDDEN, num_attention_heads=2, intermediate_size=64, heads=False)


def _tagger(model_dir, **settings):
    keras.utils.set_random_seed(0)
    return kbert.TokenTagger.from_model_dir(model_dir, label_names=TAGS, seq_length=16, **settings)


def _inputs(model):
    inputs, _, _ = model.numpy_features(WORDS)
    return inputs


def _dense(head, x):
    return x @ head.dense.kernel.numpy() + head.dense.bias.numpy()


def test_bilstm_tagger_is_the_encoder_then_a_bilstm_then_the_dense_layer(four_blocks):
    model = _tagger(four_blocks, bilstm=6)
    inputs = _inputs(model)
    mask = inputs["input_mask"]
    assert len(set(mask.sum(axis=1))) == 3  # rows of three lengths: the padding is left out of the LSTMs
    sequence = model.encoder(inputs, training=False)["sequence_output"].numpy()
    expected = _dense(model.head, numpy_bilstm(sequence, mask, model.head.recurrent[0]))
    got = keras.ops.convert_to_numpy(model(inputs, training=False))
    real = mask.astype(bool)
    np.testing.assert_allclose(got[real], expected[real], rtol=1e-4, atol=1e-5)
    assert model.head.dense.kernel.shape == (2 * 6, len(TAGS)) and len(model.head.recurrent) == 1
    assert model.task_metadata()["bilstm"] == 6 and "features" not in model.task_metadata()


def test_bilstm_zero_is_the_model_as_it_always_was(four_blocks, tmp_path):
    """bilstm=0: one dense layer over the encoder's last layer (the same random draw of its weights), and
    a kbert.json without the new settings; the same for span QA."""
    plain, zero = _tagger(four_blocks), _tagger(four_blocks, bilstm=0)
    assert type(zero.head) is SequenceHead and len(zero.head.weights) == 2
    for a, b in zip(plain.head.weights, zero.head.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    inputs = _inputs(zero)
    sequence = zero.encoder(inputs, training=False)["sequence_output"].numpy()
    np.testing.assert_allclose(keras.ops.convert_to_numpy(zero(inputs, training=False)), _dense(zero.head, sequence),
                               rtol=1e-5, atol=1e-6)
    assert len(zero.trainable_weights) == len(zero.encoder.trainable_weights) + 2
    task = json.loads((zero.save_model_dir(tmp_path / "ner") / "kbert.json").read_text())["task"]
    assert not {"bilstm", "features"} & set(task)
    squad = kbert.SpanQuestionAnswerer.from_model_dir(four_blocks, seq_length=32, max_query_length=8, bilstm=0)
    assert type(squad.head) is SequenceHead and "bilstm" not in squad.task_metadata()


@pytest.mark.slow
def test_saved_bilstm_and_feature_models_reload_with_their_settings(four_blocks, tmp_path):
    made = {"bilstm": _tagger(four_blocks, bilstm=4),
            "features": _tagger(four_blocks, features="concat_last_four_hidden", bilstm=5),
            "squad": kbert.SpanQuestionAnswerer.from_model_dir(four_blocks, seq_length=32, max_query_length=8,
                                                               bilstm=3)}
    for name, model in made.items():
        path = model.save_model_dir(tmp_path / name)
        reloaded = kbert.load_task_model(path)
        assert (reloaded.bilstm, reloaded.combination) == (model.bilstm, model.combination), name
        assert isinstance(reloaded.head, RecurrentSequenceHead)
        if name == "squad":
            packed = model.window_arrays(model.windows(["where did he go ?"], ["he went to the store ."]))[0]
            before, after = model(packed, training=False), reloaded(packed, training=False)
            for key in ("start_logits", "end_logits"):
                np.testing.assert_array_equal(keras.ops.convert_to_numpy(before[key]),
                                              keras.ops.convert_to_numpy(after[key]))
            continue
        inputs = _inputs(model)
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(model(inputs, training=False)),
                                      keras.ops.convert_to_numpy(reloaded(inputs, training=False)))
        assert reloaded.predict_words(WORDS) == model.predict_words(WORDS)
    task = json.loads((tmp_path / "features" / "kbert.json").read_text())["task"]
    assert (task["bilstm"], task["features"]) == (5, "concat_last_four_hidden")
    assert kbert.load_task_model(tmp_path / "features").encoder.trainable is False


@pytest.mark.slow
def test_the_frozen_encoder_stays_the_inits_while_the_bilstms_learn(four_blocks):
    """A few training steps change the feature-based tagger's BiLSTMs and dense layer, not one weight
    of its encoder; and its encoder runs without dropout in training. The fine-tuned BiLSTM tagger's
    encoder, the control, does change and does drop out."""
    def train(model):
        encoder = [w.numpy().copy() for w in model.encoder.weights]
        head = [w.numpy().copy() for w in model.head.weights]
        model.compile(keras.optimizers.Adam(1e-2))
        model.fit(model.dataset(WORDS, LABELS, batch_size=3), epochs=3, verbose=0, shuffle=False)
        encoder_changed = [not np.array_equal(a, w.numpy()) for a, w in zip(encoder, model.encoder.weights)]
        head_changed = [not np.array_equal(a, w.numpy()) for a, w in zip(head, model.head.weights)]
        return encoder_changed, head_changed

    frozen = _tagger(four_blocks, features="sum_last_four_hidden", dropout=0.0)
    assert frozen.encoder.trainable_weights == [] and frozen.trainable_weights == frozen.head.trainable_weights
    inputs = _inputs(frozen)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(frozen(inputs, training=True)),
                                  keras.ops.convert_to_numpy(frozen(inputs, training=False)))
    encoder_changed, head_changed = train(frozen)
    assert not any(encoder_changed) and all(head_changed)
    tuned = _tagger(four_blocks, bilstm=8, dropout=0.0)
    assert not np.allclose(keras.ops.convert_to_numpy(tuned(inputs, training=True)),
                           keras.ops.convert_to_numpy(tuned(inputs, training=False)))
    encoder_changed, head_changed = train(tuned)
    assert sum(encoder_changed) > len(encoder_changed) // 2 and all(head_changed)


@pytest.mark.parametrize("name", list(kbert.features.COMBINATIONS))
def test_each_combination_builds_runs_and_reads_its_layers(four_blocks, name):
    model = _tagger(four_blocks, features=name)
    inputs = _inputs(model)
    encoder = model.encoder
    layers = [encoder.embeddings(inputs["input_word_ids"], inputs["input_type_ids"], training=False).numpy(),
              *(x.numpy() for x in encoder(inputs, training=False)["encoder_outputs"])]
    expected = {"embeddings": layers[0], "second_to_last_hidden": layers[3], "last_hidden": layers[4],
                "sum_last_four_hidden": sum(layers[1:]), "concat_last_four_hidden": np.concatenate(layers[1:], -1),
                "sum_all_layers": sum(layers)}[name]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(model.feature_model(inputs, training=False)), expected,
                               rtol=1e-4, atol=1e-4)
    width = 4 * HIDDEN if name == "concat_last_four_hidden" else HIDDEN
    assert model.head.hidden_size == width and model.head.recurrent[0].forward_layer.cell.kernel.shape[0] == width
    assert (model.head.units, model.head.num_layers) == (HIDDEN, 2)  # default: H units per direction, two layers
    logits = keras.ops.convert_to_numpy(model(inputs, training=False))
    assert logits.shape == (3, inputs["input_mask"].shape[1], len(TAGS)) and np.isfinite(logits).all()


@pytest.mark.slow
def test_refusals_name_the_setting(four_blocks, tiny_model_dir):
    cases = [(dict(features="mean"), "features (--features) 'mean': unknown combination 'mean'; expected one of "
                                     f"{list(kbert.features.COMBINATIONS)}"),
             (dict(bilstm=-1), "bilstm (--bilstm) must be a whole number of LSTM units per direction (0: none), got -1"),
             (dict(bilstm=True), "bilstm (--bilstm) must be a whole number of LSTM units per direction (0: none), "
                                 "got True")]
    for settings, message in cases:
        with pytest.raises(OptionsError) as info:
            _tagger(four_blocks, **settings)
        assert str(info.value) == message
    with pytest.raises(OptionsError) as info:  # BERT-Tiny has two blocks
        _tagger(tiny_model_dir, features="concat_last_four_hidden")
    assert str(info.value) == ("features (--features) 'concat_last_four_hidden': combination "
                               "'concat_last_four_hidden' needs 4 Transformer blocks; the encoder has 2")
    assert info.value.option == "features" and "\n" not in str(info.value)
