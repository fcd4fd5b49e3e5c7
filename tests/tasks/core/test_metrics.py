"""Label metrics (kbert.tasks.core.metrics) checked against independent numpy formulas, scipy/sklearn, and hand computations."""

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics
from hypothesis import given, settings, strategies as st

from kbert.tasks.core import metrics as m

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


def test_unknown_metric():
    with pytest.raises(ValueError, match="unknown metric 'bleu'"):
        m.compute_metrics(["bleu"], [0], [0])
