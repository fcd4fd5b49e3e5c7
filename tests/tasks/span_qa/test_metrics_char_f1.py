"""Character F1 for Japanese/Chinese span QA, against an independent restatement of JGLUE's definition."""

import collections
import json
import random

import pytest

from conftest import CHINESE_VOCAB, REPO, SHARED, UNCASED_VOCAB
from kbert.tasks.span_qa.metrics import squad_char_f1, squad_metrics


def jglue_char_f1(gold: str, pred: str) -> float:
    """JSQuAD's F1 as JGLUE's transformers patch computes it, written out independently: the
    characters of each string are the tokens (transformers' compute_f1 on character lists)."""
    gold_toks, pred_toks = list(gold), list(pred)
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    num_same = sum((collections.Counter(gold_toks) & collections.Counter(pred_toks)).values())
    if num_same == 0:
        return 0
    precision, recall = num_same / len(pred_toks), num_same / len(gold_toks)
    return 2 * precision * recall / (precision + recall)


@pytest.fixture(scope="module")
def jsquad_dev():
    data = json.loads((SHARED / "jglue" / "jsquad" / "dev.json").read_text(encoding="utf-8"))
    return [(qa["id"], [a["text"] for a in qa["answers"]], p["context"])
            for article in data["data"] for p in article["paragraphs"] for qa in p["qas"]]


def _perturbed_predictions(dev, seed=0):
    """Spans near each gold answer in its context: exact, shifted, cut, widened, unrelated."""
    rng = random.Random(seed)
    out = {}
    for qid, answers, context in dev:
        gold = answers[0]
        start = max(context.find(gold), 0)
        a = max(0, start + rng.randint(-4, 4))
        b = max(a + 1, start + len(gold) + rng.randint(-4, 4))
        out[qid] = rng.choice([gold, context[a:b], context[a:b], gold[: max(1, len(gold) // 2)],
                               context[rng.randrange(len(context)):][:5]])
    return out


def test_char_f1_equals_jglue_definition_on_jsquad_dev(jsquad_dev):
    predictions = _perturbed_predictions(jsquad_dev)
    # Compared where SQuAD's normalization (lower case, ASCII punctuation, articles, spaces) has
    # nothing to do, which is almost every JSQuAD answer.
    plain = [(q, a) for q, a, _ in jsquad_dev
             if all(x == x.lower() and not any(c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ " for c in x)
                    for x in [predictions[q], *a])]
    assert len(plain) > 300
    for qid, answers in plain:
        ours = max(squad_char_f1(predictions[qid], g) for g in answers)
        theirs = max(jglue_char_f1(g, predictions[qid]) for g in answers)
        assert ours == pytest.approx(theirs, abs=1e-12), (qid, predictions[qid], answers)
    result = squad_metrics(predictions, {q: a for q, a, _ in jsquad_dev}, f1_unit="char")
    word = squad_metrics(predictions, {q: a for q, a, _ in jsquad_dev})
    # Whitespace tokens give no partial credit in Japanese: word F1 ~ EM, char F1 well above it.
    assert word["f1"] - word["exact_match"] < 2.0
    assert result["f1"] > result["exact_match"] + 10.0
    assert result["exact_match"] == word["exact_match"]


def test_char_f1_examples_and_normalization():
    assert squad_char_f1("東京都", "東京都") == 1.0
    assert squad_char_f1("東京", "東京都") == pytest.approx(2 * 1.0 * (2 / 3) / (1 + 2 / 3))
    assert squad_char_f1("大阪", "東京都") == 0.0
    assert squad_char_f1("The Tokyo", "tokyo") == 1.0  # SQuAD's normalization first, then characters
    assert squad_char_f1("", "東京") == 0.0
    assert squad_char_f1("", "", version_2_with_negative=True) == 1.0
    with pytest.raises(ValueError, match="f1_unit"):
        squad_metrics({"a": "x"}, {"a": ["x"]}, f1_unit="bytes")


def test_unit_is_chosen_from_the_tokenizer():
    from kbert.text import BertTokenizer
    from kbert.text.mecab import MecabCharacterTokenizer, MecabWordpieceTokenizer
    from kbert.text.registry import f1_unit
    from kbert.text.sentencepiece import SentencePieceTokenizer

    assert f1_unit(BertTokenizer(str(UNCASED_VOCAB))) == "word"
    assert f1_unit(BertTokenizer(str(CHINESE_VOCAB))) == "char"
    assert f1_unit(SentencePieceTokenizer(str(SHARED / "vocab" / "ja-sentencepiece" / "spm.model"))) == "char"
    assert f1_unit(MecabWordpieceTokenizer(str(SHARED / "vocab" / "ja-mecab-wordpiece" / "vocab.txt"))) == "char"
    assert f1_unit(MecabCharacterTokenizer(str(SHARED / "vocab" / "ja-char" / "vocab.txt"))) == "char"
    assert f1_unit(object()) == "word"  # a registered type without f1_unit()


def test_a_sentencepiece_model_of_english_counts_words(tmp_path):
    """The unit is the language's, not the tokenizer type's: SentencePiece is not only Japanese."""
    from kbert.text.registry import f1_unit
    from kbert.text.sentencepiece import SentencePieceTokenizer
    from kbert.text.vocab_learning_ja import learn_sentencepiece

    novel = (REPO / "kbert" / "resources" / "corpus" / "northangerabbey.txt").read_text(encoding="utf-8")
    (tmp_path / "english.txt").write_text(novel[:200_000], encoding="utf-8")
    english = learn_sentencepiece([str(tmp_path / "english.txt")], 800, tmp_path / "spm.model")
    assert f1_unit(SentencePieceTokenizer(english)) == "word"
