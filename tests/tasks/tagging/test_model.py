"""TokenTagger: the in-graph features against the numpy alignment (tests/fixtures/ner_alignment_reference.py)
on real CoNLL-2003 sentences, word-level round trips, training, raw-text entities, save/reload; MeCab
words (mecab-wordpiece) in and out against fugashi's."""

import unicodedata

import keras
import numpy as np
import pytest

from kbert.data.conll import read_conll
from kbert.tasks import TokenTagger, load_task_model
from kbert.tasks.tagging.ner_alignment import IGNORE_INDEX
from conftest import SHARED, require
from fixtures.ner_alignment_reference import align_labels, first_token_mask, token_word_ids, word_predictions
from fixtures.task_runs import reference_rows

TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")


@pytest.fixture(scope="module")
def sentences():
    return read_conll(SHARED / "conll2003" / "valid.txt").examples[:60]


@pytest.fixture(scope="module")
def tagger(tiny_model_dir):
    return TokenTagger.from_model_dir(tiny_model_dir, label_names=TAGS, seq_length=24)


def test_features_match_the_numpy_alignment(tagger, sentences):
    words = [s["words"] for s in sentences]
    labels = [s["labels"] for s in sentences]
    pieces = tagger.pieces(words=words)
    inputs, token_labels, word_ids = tagger.features(pieces, labels)
    truncated = 0
    for i, row in enumerate(pieces.to_list()):
        reference = token_word_ids(row, max_seq_length=24)
        np.testing.assert_array_equal(token_labels.numpy()[i], align_labels(labels[i], reference))
        np.testing.assert_array_equal(word_ids.numpy()[i], np.where(first_token_mask(reference), reference, -1))
        flat = [p for word in row for p in word][:22]
        np.testing.assert_array_equal(inputs["input_word_ids"].numpy()[i][1:1 + len(flat)], flat)
        truncated += sum(len(w) for w in row) > 22
    assert truncated > 0  # the check covered truncation too
    assert (token_labels.numpy()[word_ids.numpy() < 0] == IGNORE_INDEX).all()


def test_word_level_round_trip(tagger, sentences):
    """Token labels taken as predictions map back to exactly the word labels; words cut off by
    truncation get the fill tag."""
    words = [s["words"] for s in sentences]
    _, token_labels, word_ids = tagger.numpy_features(words, [s["labels"] for s in sentences])
    for i, s in enumerate(sentences):
        back = word_predictions(token_labels[i], word_ids[i], len(s["words"]), fill_value=-1)
        kept = back >= 0
        np.testing.assert_array_equal(back[kept], np.array(s["labels"])[kept])
        assert kept.sum() == len(set(word_ids[i][word_ids[i] >= 0]))
    # A word made of pieces that BERT splits further ("U.S." -> u . s .) stays one word.
    pieces = tagger.pieces(words=[["U.S.", "troops"]]).to_list()[0]
    assert len(pieces) == 2 and len(pieces[0]) == 4


@pytest.mark.slow
def test_training_lowers_the_loss_and_predictions_go_back_to_words(tiny_model_dir, sentences, tmp_path):
    model = TokenTagger.from_model_dir(tiny_model_dir, label_names=TAGS, seq_length=32)
    train = sentences[:16]
    ds = model.dataset([s["words"] for s in train], [s["labels"] for s in train], batch_size=8,
                       boundaries=[16, 24])
    keras.utils.set_random_seed(0)
    model.compile(keras.optimizers.Adam(1e-3))
    losses = model.fit(ds, epochs=25, verbose=0, shuffle=False).history["loss"]
    assert losses[-1] < 0.1 * losses[0], losses
    predicted = model.predict_words([s["words"] for s in train])
    assert [len(p) for p in predicted] == [len(s["words"]) for s in train]
    accuracy = np.mean([p == t for s, ps in zip(train, predicted) for p, t in zip(ps, s["tags"])])
    assert accuracy > 0.9, accuracy

    model.save_model_dir(tmp_path / "ner")
    reloaded = load_task_model(tmp_path / "ner")
    assert reloaded.label_names == list(TAGS)
    assert reloaded.predict_words([s["words"] for s in train]) == predicted

    text = "Peter Blackburn went to Zürich with the EU delegation ."
    result = model.predict_entities([text])[0]
    assert [w["text"] for w in result["words"]] == text.split()
    for word in result["words"]:
        assert text[word["start"]:word["end"]] == word["text"]
    for entity in result["entities"]:
        assert text[entity["start"]:entity["end"]] == entity["text"] and entity["type"] in ("PER", "ORG", "LOC", "MISC")


def test_token_accuracy_counts_only_labelled_positions():
    from kbert.tasks.tagging.model import TokenAccuracy

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 7, 4)).astype("float32")
    labels = rng.integers(0, 4, size=(3, 7))
    labels[rng.random((3, 7)) < 0.4] = IGNORE_INDEX
    metric = TokenAccuracy()
    metric.update_state(labels[:2], logits[:2])
    metric.update_state(labels[2:], logits[2:])
    labelled = labels != IGNORE_INDEX
    expected = (logits.argmax(-1) == labels)[labelled].mean()
    assert float(metric.result()) == pytest.approx(expected, abs=1e-6)


def test_tagger_uses_mecab_words(ja_mecab_dir):
    require("fugashi")
    require("unidic_lite")
    model = TokenTagger.from_model_dir(ja_mecab_dir, label_names=["O", "B-LOC", "I-LOC"], seq_length=64)
    tokenizer = model.tokenizer
    # Pre-split words: each through NFKC + MeCab on its own (ｶﾞｯﾂ is ガッツ), its pieces kept together.
    words = [["東京都", "に", "住ん", "で", "いる"], ["ｶﾞｯﾂ", "大阪府", "。"]]
    pieces = model.pieces(words=words).to_list()
    for row, sentence in zip(pieces, words):
        assert len(row) == len(sentence)
        for got, word in zip(row, sentence):
            assert got == tokenizer.tokenize_flat(tokenizer.pre_tokenize([word]), pre_tokenized=True).to_list()[0]
    assert pieces[1][0] == tokenizer.tokenize_flat(["ガッツ"]).to_list()[0]  # raw text: MeCab runs inside
    _, labels, _ = model.numpy_features(words, [[1, 0, 0, 0, 0], [0, 1, 0]])
    assert (labels >= 0).sum(axis=1).tolist() == [5, 3]  # one labelled piece per word
    assert [len(t) for t in model.predict_words(words)] == [5, 3]

    # Raw text: the words are MeCab's (fugashi + unidic-lite in the reference), offsets into the text.
    lines = [r for r in reference_rows("jsts_jcqa_train", 60) if unicodedata.normalize("NFKC", r["text"]) == r["text"]][:4]
    for line, result in zip(lines, model.predict_entities([r["text"] for r in lines])):
        assert [w["text"] for w in result["words"]] == line["mecab_words"]
        assert all(line["text"][w["start"]:w["end"]] == w["text"] for w in result["words"])
        assert all(line["text"][e["start"]:e["end"]] == e["text"] for e in result["entities"])
