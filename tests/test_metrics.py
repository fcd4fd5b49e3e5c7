"""Metrics checked against independent numpy formulas, scipy/sklearn, and hand computations."""

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics
from hypothesis import given, settings, strategies as st

from conftest import SHARED
from kbert.tasks import metrics as m

SETTINGS = settings(max_examples=40, deadline=None)


def _binary(draw_n):
    return st.integers(4, 60).flatmap(lambda n: st.tuples(
        st.lists(st.integers(0, 1), min_size=n, max_size=n),
        st.lists(st.integers(0, 1), min_size=n, max_size=n)))


@SETTINGS
@given(_binary(None))
def test_accuracy_f1_mcc_binary_against_counts(pair):
    pred, true = map(np.array, pair)
    tp = np.sum((pred == 1) & (true == 1))
    fp = np.sum((pred == 1) & (true == 0))
    fn = np.sum((pred == 0) & (true == 1))
    tn = np.sum((pred == 0) & (true == 0))
    assert m.accuracy(pred, true) == pytest.approx((tp + tn) / len(true))
    expected_f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    assert m.f1(pred, true) == pytest.approx(expected_f1)
    denom = np.sqrt(float((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))
    expected_mcc = (tp * tn - fp * fn) / denom if denom else 0.0
    assert m.matthews_corrcoef(pred, true) == pytest.approx(expected_mcc)


def test_logits_are_argmaxed_and_argument_order_matters():
    logits = np.array([[2.0, -1.0], [0.1, 0.3], [0.0, 5.0], [1.0, 0.0]])  # -> 0, 1, 1, 0
    labels = np.array([0, 0, 1, 1])
    assert m.accuracy(logits, labels) == 0.5
    out = m.compute_metrics(("accuracy", "f1"), logits, labels)
    assert out == {"accuracy": 0.5, "f1": 0.5}
    # weighted F1 is asymmetric: per-class F1 0.5, 0.4, 0 weighted by gold support 3, 1, 1
    # gives 0.38; swapped (support 1, 4, 0) it would be 0.42
    pred, true = np.array([0, 1, 1, 1, 1]), np.array([0, 0, 0, 1, 2])
    assert m.f1(pred, true, average="weighted") == pytest.approx(0.38)
    with pytest.raises(ValueError, match="shape"):
        m.accuracy([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="threshold"):
        m.accuracy([[0.9], [0.2]], [1, 0])


@SETTINGS
@given(st.integers(0, 2**31 - 1))
def test_multiclass_macro_micro_against_per_class_counts(seed):
    rng = np.random.default_rng(seed)
    k = rng.integers(3, 6)
    true = rng.integers(0, k, 50)
    pred = np.where(rng.random(50) < 0.5, true, rng.integers(0, k, 50))
    per_class = []
    for c in range(k):
        tp = np.sum((pred == c) & (true == c))
        fp = np.sum((pred == c) & (true != c))
        fn = np.sum((pred != c) & (true == c))
        if tp + fp + fn:  # sklearn averages over labels present in either array
            per_class.append(2 * tp / (2 * tp + fp + fn))
    assert m.compute_metrics(["macro_f1"], pred, true)["macro_f1"] == pytest.approx(np.mean(per_class))
    # single-label micro F1 equals accuracy
    assert m.f1(pred, true, average="micro") == pytest.approx(np.mean(pred == true))
    assert m.matthews_corrcoef(pred, true) == pytest.approx(sklearn.metrics.matthews_corrcoef(true, pred))


@SETTINGS
@given(st.integers(0, 2**31 - 1))
def test_multilabel_f1(seed):
    rng = np.random.default_rng(seed)
    true = rng.integers(0, 2, (30, 4))
    pred = rng.integers(0, 2, (30, 4))
    tp, fp, fn = [np.sum(x) for x in (pred & true, pred & ~true & 1, ~pred & 1 & true)]
    assert m.f1(pred, true, average="micro") == pytest.approx(2 * tp / (2 * tp + fp + fn))
    per_label = []
    for j in range(4):
        p, t = pred[:, j], true[:, j]
        a, b, c = np.sum(p & t), np.sum(p & (1 - t)), np.sum((1 - p) & t)
        per_label.append(2 * a / (2 * a + b + c) if a + b + c else 0.0)
    assert m.f1(pred, true, average="macro") == pytest.approx(np.mean(per_label))
    with pytest.raises(ValueError, match="indicators"):
        m.f1(pred * 0.7, true, average="micro")


@SETTINGS
@given(st.integers(0, 2**31 - 1))
def test_pearson_spearman(seed):
    rng = np.random.default_rng(seed)
    labels = rng.uniform(0, 5, 40).round(1)  # ties, as in STS-B
    preds = (labels + rng.normal(0, 1.5, 40))[:, None]  # regression head output [n, 1]
    assert m.pearson(preds, labels) == pytest.approx(np.corrcoef(preds[:, 0], labels)[0, 1])
    ranks = np.corrcoef(scipy.stats.rankdata(preds[:, 0]), scipy.stats.rankdata(labels))[0, 1]
    assert m.spearman(preds, labels) == pytest.approx(ranks)
    out = m.compute_metrics(("pearson", "spearman"), preds, labels)
    assert set(out) == {"pearson", "spearman"}


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
    del preds["q3"]
    result = m.compute_metrics(["squad_exact_match", "squad_f1"], {"q1": "the broncos", **preds}, gold)
    assert result == {"squad_exact_match": pytest.approx(100 / 3),
                      "squad_f1": pytest.approx(100 * (1 + 2 / 3) / 3)}


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


def test_ner_metrics_by_hand():
    true = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "O"]]
    # gold {PER 0-1, LOC 3, ORG 0}, predicted {PER 0-1, ORG 3, ORG 0}: 2 of 3 both ways
    out = m.compute_metrics(["ner_precision", "ner_recall", "ner_f1"], pred, true)
    assert out == pytest.approx({"ner_precision": 2 / 3, "ner_recall": 2 / 3, "ner_f1": 2 / 3})
    # conlleval convention: I-PER after O starts an entity (strict IOB2 mode drops it)
    assert m.ner_metrics([["O", "I-PER"]], [["O", "B-PER"]])["f1"] == 1.0
    from seqeval.scheme import IOB2
    assert m.ner_metrics([["O", "I-PER"]], [["O", "B-PER"]], mode="strict", scheme=IOB2)["f1"] == 0.0
    with pytest.raises(ValueError, match="length"):
        m.ner_metrics([["O"]], [["O", "O"]])


def test_unknown_metric():
    with pytest.raises(ValueError, match="unknown metric 'bleu'"):
        m.compute_metrics(["bleu"], [0], [0])
