"""A tokenizer type registered outside kbert flows through every consumer with no other change:
the preprocessor, task models (fit/predict, save, reload), feature extraction and exports.

Two test types: ``test-wordpiece`` (WordPiece under another name: in the graph, so it exports) and
``test-reversed-words`` (a Python ``pre_tokenize`` step, as MeCab's: reverses the word order, so
its results must equal plain WordPiece's on the reversed texts).
"""

import json
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from conftest import UNCASED_VOCAB
from kbert.tasks.core.words_inputs import words_request
from kbert.model_dir import read_tokenizer_spec, record_tokenizer_spec
from kbert.text import BertPreprocessor, BertTokenizer, TokenizerSpec, load_tokenizer, register_tokenizer
from kbert.text.pre_tokenize import pre_tokenize_tensor
from kbert.text.tokenizer_layer import TokenizerInputError

TEXTS = ["the quick brown fox", "Hello World , unaffable CAFÉ", "a", "jumps over the lazy dog again"]


def _reverse(text):
    return " ".join(reversed(text.split()))


@register_tokenizer("test-wordpiece")
class OtherWordPiece(BertTokenizer):
    pass


@register_tokenizer("test-reversed-words")
class ReversedWords(BertTokenizer):
    in_graph = False

    def pre_tokenize(self, texts):
        return [_reverse(t.decode("utf-8") if isinstance(t, bytes) else t) for t in texts]


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory, tiny_model_dir):
    """The tiny model directory once per test type (only kbert.json's tokenizer type differs)."""
    root = tmp_path_factory.mktemp("plugin")
    dirs = {}
    for name in ("test-wordpiece", "test-reversed-words"):
        dirs[name] = root / name
        shutil.copytree(tiny_model_dir, dirs[name])
        record_tokenizer_spec(dirs[name], TokenizerSpec(type=name, lower_case=True))
    return dirs


def _same_head(model, reference):
    rng = np.random.default_rng(1)
    for w in model.head.weights:
        w.assign(rng.normal(0, 0.5, w.shape).astype("float32"))
    reference.head.set_weights(model.head.get_weights())


@pytest.mark.slow
def test_in_graph_type_through_preprocessor_task_model_and_export(tmp_path, model_dirs):
    from kbert.export.task import export_task
    from kbert.tasks import TextClassifier, load_task_model

    model_dir = model_dirs["test-wordpiece"]
    tokenizer = load_tokenizer(model_dir)
    assert type(tokenizer) is OtherWordPiece and tokenizer.spec.type == "test-wordpiece"
    reference = BertPreprocessor.from_vocab(UNCASED_VOCAB, lower_case=True, seq_length=32)
    packed = BertPreprocessor(tokenizer, seq_length=32)(tf.constant(TEXTS))
    expected = reference(tf.constant(TEXTS))
    for key in expected:
        np.testing.assert_array_equal(packed[key].numpy(), expected[key].numpy())

    keras.utils.set_random_seed(0)
    model = TextClassifier.from_model_dir(model_dir, num_classes=2, seq_length=32)
    assert type(model.tokenizer) is OtherWordPiece
    for w in model.head.weights:
        w.assign(np.random.default_rng(1).normal(0, 0.5, w.shape).astype("float32"))
    model.save_model_dir(tmp_path / "fine-tuned")
    assert read_tokenizer_spec(tmp_path / "fine-tuned").type == "test-wordpiece"
    assert json.loads((tmp_path / "fine-tuned" / "kbert.json").read_text())["do_lower_case"] is True
    reloaded = load_task_model(tmp_path / "fine-tuned")
    assert type(reloaded.tokenizer) is OtherWordPiece
    probabilities = tf.nn.softmax(model.predict(TEXTS, verbose=0)).numpy()  # predict gives logits

    out = export_task(tmp_path / "fine-tuned", tmp_path / "saved_models" / "plugin" / "1", warmup=False)
    loaded = tf.saved_model.load(str(out))
    served = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
    np.testing.assert_allclose(served["probabilities"].numpy(), probabilities, atol=1e-5)
    # TF Hub's tokenizer fields, as for WordPiece: the vocab.txt asset and do_lower_case.
    with open(loaded.vocab_file.asset_path.numpy(), "rb") as f:
        assert f.read() == UNCASED_VOCAB.read_bytes()
    assert loaded.do_lower_case.numpy()


def test_python_step_type_called_on_raw_texts_runs_its_step_eagerly_and_refuses_in_a_graph(model_dirs):
    """Its step is not idempotent (reversing twice is the identity): raw texts go through it once,
    ``pre_tokenized=True`` strings never."""
    tokenizer = load_tokenizer(model_dirs["test-reversed-words"])
    reversed_texts = [_reverse(t) for t in TEXTS]
    want = BertTokenizer(UNCASED_VOCAB).tokenize(reversed_texts).to_list()
    assert tokenizer(TEXTS).to_list() == want
    assert tokenizer.tokenize(np.array(TEXTS)).to_list() == want
    assert tokenizer.tokenize_flat(TEXTS).to_list() == [sum(row, []) for row in want]
    assert tokenizer.tokenize(reversed_texts, pre_tokenized=True).to_list() == want
    graph_part = tf.function(lambda s: tokenizer(s, pre_tokenized=True), autograph=False)
    assert graph_part(tf.constant(reversed_texts)).to_list() == want
    with pytest.raises(TokenizerInputError, match="'test-reversed-words' tokenizer"):
        tf.function(lambda s: tokenizer(s))(tf.constant(TEXTS))


@pytest.mark.slow
def test_python_step_type_runs_pre_tokenize_in_fit_predict_and_features(tmp_path, model_dirs, tiny_model_dir):
    from kbert.export.task import export_task
    from kbert.features import FeatureExtractor
    from kbert.tasks import TextClassifier

    model_dir = model_dirs["test-reversed-words"]
    keras.utils.set_random_seed(0)
    model = TextClassifier.from_model_dir(model_dir, num_classes=2, seq_length=32)
    plain = TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, seq_length=32)
    assert type(model.tokenizer) is ReversedWords and type(plain.tokenizer) is BertTokenizer
    _same_head(model, plain)
    reversed_texts = [_reverse(t) for t in TEXTS]
    # Independent reference: plain WordPiece on the texts the Python step makes.
    np.testing.assert_allclose(model.predict(TEXTS, verbose=0), plain.predict(reversed_texts, verbose=0), atol=1e-6)
    np.testing.assert_allclose(model.predict(np.array(TEXTS), verbose=0),
                               plain.predict(reversed_texts, verbose=0), atol=1e-6)
    model.compile(optimizer="sgd")
    plain.compile(optimizer="sgd")
    loss = model.evaluate(TEXTS, np.array([0, 1, 0, 1]), verbose=0)
    assert loss == pytest.approx(plain.evaluate(reversed_texts, np.array([0, 1, 0, 1]), verbose=0), abs=1e-5)

    settings = {"seq_length": 32, "combinations": ("last_hidden",)}
    features = FeatureExtractor.from_model_dir(model_dir, **settings).extract(TEXTS)
    expected = FeatureExtractor.from_model_dir(tiny_model_dir, **settings).extract(reversed_texts)
    np.testing.assert_allclose(features["last_hidden"], expected["last_hidden"], atol=1e-5)

    # In tf.data (pre-training input): the same step as a numpy_function.
    ds = tf.data.Dataset.from_tensor_slices(TEXTS).batch(3).map(lambda s: pre_tokenize_tensor(model.tokenizer, s))
    assert [t.decode() for batch in ds for t in batch.numpy()] == reversed_texts

    # A SavedModel cannot hold the Python step: its signature takes the step's words as "words",
    # string [batch, words] padded with "" (kbert.tasks.core.words_inputs.words_request makes them).
    model.save_model_dir(tmp_path / "fine-tuned")
    out = export_task(tmp_path / "fine-tuned", tmp_path / "out" / "1", warmup=False)
    serve = tf.saved_model.load(str(out)).signatures["serving_default"]
    assert list(serve.structured_input_signature[1]) == ["words"]
    words = words_request(model.tokenizer, {"text": TEXTS})["words"]
    assert words == [t.split()[::-1] + [""] * (6 - len(t.split())) for t in TEXTS]
    np.testing.assert_allclose(serve(words=tf.constant(words))["probabilities"].numpy(),
                               tf.nn.softmax(plain.predict(reversed_texts, verbose=0)).numpy(), atol=1e-5)


def test_task_and_feature_models_load_a_directory_written_before_the_spec(tmp_path, tiny_model_dir):
    """kbert.json with only do_lower_case: WordPiece with that case, as before."""
    from kbert.features import FeatureExtractor
    from kbert.tasks import TextClassifier

    legacy = tmp_path / "legacy"
    shutil.copytree(tiny_model_dir, legacy)
    metadata = json.loads((legacy / "kbert.json").read_text())
    metadata.pop("tokenizer")
    metadata["do_lower_case"] = False
    (legacy / "kbert.json").write_text(json.dumps(metadata))
    model = TextClassifier.from_model_dir(legacy, num_classes=2, seq_length=32)
    assert type(model.tokenizer) is BertTokenizer and model.lower_case is False
    cased = BertTokenizer(UNCASED_VOCAB, lower_case=False)
    assert model.tokenizer.tokenize(TEXTS).to_list() == cased.tokenize(TEXTS).to_list()
    extractor = FeatureExtractor.from_model_dir(legacy, seq_length=32, combinations=("last_hidden",))
    assert extractor.tokenizer.lower_case is False
    model.save_model_dir(tmp_path / "saved")  # and it is written back with the spec
    assert json.loads((tmp_path / "saved" / "kbert.json").read_text())["tokenizer"] == {
        "type": "wordpiece", "lower_case": False, "vocab_file": "vocab.txt"}
