"""kbert.export.hub_pair: the TF Hub pair a pre-training run publishes. Used as TF Hub's BERT pairs are
(the preprocessor's packed ids fed to the encoder), the reloaded pair gives the Keras encoder's
outputs for kbert's own preprocessing of the same texts; the layout, the markers naming the model
directory, and a refusal that writes neither half."""

import json

import numpy as np
import pytest
import tensorflow as tf

from kbert.export.hub_pair import export_hub_pair
from kbert.export.serving import EXPORT_MARKER
from kbert.model_dir import OutputExistsError
from kbert.random_model import random_model_dir

TEXTS = ["The quick brown fox jumps over the lazy dog.", "paris is the capital of france"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return random_model_dir(tmp_path_factory.mktemp("hub_pair") / "tiny", heads=False)


@pytest.mark.slow  # two SavedModels written and loaded: ~10 s on 2 cores
def test_the_pair_reloads_and_gives_the_keras_encoders_outputs(model_dir, tmp_path):
    from kbert.model_dir import load_encoder
    from kbert.text import BertPreprocessor
    from kbert.text.registry import load_tokenizer

    encoder_path, preprocessor_path = export_hub_pair(model_dir, "tiny", root=tmp_path / "saved_models")
    assert (encoder_path, preprocessor_path) == (tmp_path / "saved_models" / "tiny_encoder" / "1",
                                                 tmp_path / "saved_models" / "tiny_preprocessor" / "1")
    assert sorted(p.name for p in (tmp_path / "saved_models").iterdir()) == ["tiny_encoder", "tiny_preprocessor"]
    for path, kind in ((encoder_path, "encoder"), (preprocessor_path, "preprocessor")):
        marker = json.loads((path / "assets.extra" / EXPORT_MARKER).read_text(encoding="utf-8"))
        assert marker == {"kind": kind, "source": str(model_dir)}
    preprocessor, encoder = tf.saved_model.load(str(preprocessor_path)), tf.saved_model.load(str(encoder_path))
    packed = preprocessor(tf.constant(TEXTS))
    served = encoder(packed)
    # the reference: the Keras encoder of the directory on kbert's preprocessing, as training feeds it
    want_packed = BertPreprocessor(load_tokenizer(model_dir), seq_length=128)(tf.constant(TEXTS))
    for key in want_packed:
        np.testing.assert_array_equal(packed[key].numpy(), want_packed[key].numpy())
    want = load_encoder(model_dir)(want_packed, training=False)
    real = want_packed["input_mask"].numpy().astype(bool)
    assert np.abs(served["sequence_output"].numpy() - np.asarray(want["sequence_output"]))[real].max() < 1e-5
    np.testing.assert_allclose(served["pooled_output"].numpy(), np.asarray(want["pooled_output"]), atol=1e-5)
    assert packed["input_mask"].numpy().sum(1).tolist() == [12, 8]  # [CLS] + 9 words and "." + [SEP]; [CLS] + 6 + [SEP]


@pytest.mark.slow
def test_a_refused_encoder_writes_neither_half(model_dir, tmp_path):
    theirs = tmp_path / "saved_models" / "tiny_encoder" / "1"
    theirs.mkdir(parents=True)
    (theirs / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(OutputExistsError, match="already exists; pass --overwrite"):
        export_hub_pair(model_dir, "tiny", root=str(tmp_path / "saved_models"))
    assert [p.name for p in theirs.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in (tmp_path / "saved_models").iterdir()) == ["tiny_encoder"]
