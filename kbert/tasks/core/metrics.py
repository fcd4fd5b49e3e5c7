"""Evaluation metrics on labels and scores, shared by the task families: classification and
correlation metrics are sklearn/scipy calls. The families' own metrics live with them (span QA's
exact match and F1 in kbert.tasks.span_qa.metrics, entity F1 in kbert.tasks.tagging.metrics).

Every function takes (predictions, labels) in that order, like compute_metrics.
"""

from __future__ import annotations

import numpy as np

from kbert.errors import OptionsError

# scipy.stats and sklearn.metrics are imported where used: their import is slow (docs/bench/code-notes),
# and the task plug-ins import this module, so `kbert finetune --help` would wait for them.

# ---------------------------------------------------------------- classification / regression


def _class_ids(predictions, labels):
    """Class ids from ids, or from scores/logits (argmax over the last axis)."""
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    if predictions.ndim == labels.ndim + 1:
        if predictions.shape[-1] == 1:  # argmax over one column would always say class 0
            raise OptionsError("predictions have a single score per example; threshold them into "
                               "class ids first")
        predictions = predictions.argmax(axis=-1)
    if predictions.shape != labels.shape:
        raise OptionsError(f"predictions of shape {predictions.shape} do not match labels of shape "
                           f"{labels.shape}")
    return predictions, labels


def accuracy(predictions, labels) -> float:
    """Fraction correct; for 2-D indicator labels (multi-label), the exact-set-match ratio."""
    import sklearn.metrics

    return float(sklearn.metrics.accuracy_score(*reversed(_class_ids(predictions, labels))))


def f1(predictions, labels, average: str = "binary", pos_label=1) -> float:
    """F1: average="binary" (class pos_label), "macro", "micro" or "weighted".

    Labels of shape [n, num_labels] (0/1 indicators) are multi-label: then use "micro"/"macro".
    """
    predictions, labels = _class_ids(predictions, labels)
    if labels.ndim == 2 and not np.isin(predictions, (0, 1)).all():
        raise OptionsError("multi-label predictions must be 0/1 indicators (threshold scores first)")
    import sklearn.metrics

    return float(sklearn.metrics.f1_score(labels, predictions, average=average, pos_label=pos_label,
                                          zero_division=0))


def matthews_corrcoef(predictions, labels) -> float:
    import sklearn.metrics

    return float(sklearn.metrics.matthews_corrcoef(*reversed(_class_ids(predictions, labels))))


def _scores(predictions, labels):
    predictions = np.asarray(predictions, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    if predictions.ndim == 2 and predictions.shape[-1] == 1:
        predictions = predictions[:, 0]
    if predictions.shape != labels.shape:
        raise OptionsError(f"predictions of shape {predictions.shape} do not match labels of shape "
                           f"{labels.shape}")
    return predictions, labels


def pearson(predictions, labels) -> float:
    import scipy.stats

    return float(scipy.stats.pearsonr(*_scores(predictions, labels))[0])


def spearman(predictions, labels) -> float:
    import scipy.stats

    return float(scipy.stats.spearmanr(*_scores(predictions, labels))[0])


# ---------------------------------------------------------------- by name

_CLASSIFICATION = {
    "accuracy": accuracy,
    "exact_match": accuracy,  # multi-label: the exact-set-match ratio (sklearn's subset accuracy)
    "f1": f1,
    "macro_f1": lambda p, t: f1(p, t, average="macro"),
    "micro_f1": lambda p, t: f1(p, t, average="micro"),
    "weighted_f1": lambda p, t: f1(p, t, average="weighted"),
    "matthews_corrcoef": matthews_corrcoef,
    "mcc": matthews_corrcoef,
    "pearson": pearson,
    "spearman": spearman,
}
METRIC_NAMES = tuple(_CLASSIFICATION)


def compute_metrics(task_metric_names, predictions, labels) -> dict:
    """Computes the named metrics (e.g. kbert.data.glue.TASKS[name].metrics).

    predictions/labels:
      accuracy, exact_match, f1, macro_f1, micro_f1, weighted_f1, matthews_corrcoef (mcc): class ids or
        logits/probabilities [n, classes] (argmax is taken) vs label ids; [n, labels] 0/1
        indicators for multi-label.
      pearson, spearman: scores [n] or [n, 1] vs float labels.
    """
    if isinstance(task_metric_names, str):
        task_metric_names = (task_metric_names,)
    results = {}
    for name in task_metric_names:
        if name not in _CLASSIFICATION:
            raise OptionsError(f"unknown metric {name!r}; expected one of {METRIC_NAMES}")
        results[name] = _CLASSIFICATION[name](predictions, labels)
    return results
