"""SQuAD's exact match and F1 (kbert.tasks.span_qa.metrics) against hand computations of the
official scripts' rules, and on the real dev file."""

import pytest

from conftest import SHARED
from kbert.tasks.span_qa import metrics as m


@pytest.mark.parametrize("text,normal", [
    ("The Denver Broncos!", "denver broncos"),
    ("  an apple   a day ", "apple day"),
    ("Anthem (the song)", "anthem song"),
    ("Super-Bowl 50.", "superbowl 50"),
    ("Théâtre – “Les Misérables”", "théâtre – “les misérables”"),  # only ASCII punctuation goes
])
def test_normalize_answer(text, normal):
    assert m.normalize_answer(text) == normal


def test_squad_by_hand():
    gold = {"q1": ["Denver Broncos", "the Broncos"], "q2": ["Santa Clara, California"],
            "q3": ["February 7, 2016"]}
    preds = {"q1": "Broncos", "q2": "in Santa Clara", "q3": "7 February 2016"}
    # q1: EM 1 ("the Broncos" normalises to "broncos"); F1 vs "denver broncos" = 2*(1*.5)/1.5 = 2/3, vs "broncos" = 1 -> max 1
    # q2: EM 0; pred [in, santa, clara], gold [santa, clara, california]: p = r = 2/3 -> 2/3
    # q3: EM 0; tokens {7, february, 2016} both -> F1 1
    result = m.squad_metrics(preds, gold)
    assert result["exact_match"] == pytest.approx(100 / 3)
    assert result["f1"] == pytest.approx(100 * (1 + 2 / 3 + 1) / 3)
    assert result["total"] == 3 and result["missing"] == 0
    del preds["q3"]  # a question without a prediction scores 0
    result = m.squad_metrics({"q1": "the broncos", **preds}, gold)
    assert result["exact_match"] == pytest.approx(100 / 3) and result["f1"] == pytest.approx(100 * (1 + 2 / 3) / 3)
    assert result["missing"] == 1


def test_squad_v2_no_answers():
    gold = {"a": ["Denver"], "b": [], "c": [], "d": ["the"]}  # "the" normalises to "" -> no answer
    preds = {"a": "", "b": "", "c": "Denver", "d": ""}
    result = m.squad_metrics(preds, gold)
    # a: 0 (empty vs answer), b: 1, c: 0, d: 1 (gold becomes "")
    assert result["exact_match"] == 50.0 and result["f1"] == 50.0
    assert result["has_ans_total"] == 1 and result["no_ans_total"] == 3
    assert result["no_ans_exact_match"] == pytest.approx(200 / 3)
    # v1.1 rules: an empty prediction never scores F1 (num_same == 0)
    assert m.squad_token_f1("", "") == 0.0 and m.squad_token_f1("", "", True) == 1.0


def test_squad_v2_best_threshold_by_hand():
    gold = {"a": ["Denver"], "b": [], "c": ["Paris"]}
    best = {"a": "Denver", "b": "Rome", "c": "London"}
    diffs = {"a": -3.0, "b": 1.0, "c": -1.0}  # null if diff > threshold
    # all null: b right -> 1/3. Answer a (t=-3): 2/3. Answer c too (t=-1): still 2/3.
    # Answer b too (t=1): 1/3. Best 2/3 at threshold -3.
    score, threshold = m.squad_v2_best_threshold(best, diffs, gold)
    assert score == pytest.approx(200 / 3) and threshold == -3.0
    preds = {q: ("" if diffs[q] > threshold else best[q]) for q in gold}
    assert m.squad_metrics(preds, gold)["f1"] == pytest.approx(score)


def test_squad_on_real_dev_with_gold_predictions():
    from kbert.data.squad import read_squad

    examples = read_squad(SHARED / "squad" / "dev-v1.1.json").examples[:500]
    perfect = {e["id"]: e["answers"][-1]["text"] for e in examples}
    assert m.squad_metrics(perfect, examples)["exact_match"] == 100.0
    assert m.squad_metrics({}, examples) == {"exact_match": 0.0, "f1": 0.0, "total": 500, "missing": 500}
