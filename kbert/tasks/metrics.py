"""Evaluation metrics for the fine-tuning tasks.

Classification and correlation metrics are sklearn/scipy calls; NER entity F1 is seqeval's
(conlleval conventions by default); SQuAD EM/F1 re-implements the official evaluation scripts
(evaluate-v1.1.py / evaluate-v2.0.py), which are scripts, not importable packages.

Every function takes (predictions, labels) in that order, like compute_metrics.
"""

from __future__ import annotations

import collections
import re
import string

import numpy as np

# scipy.stats and sklearn.metrics are imported where used: their import is slow (docs/bench/code-notes),
# and the task plug-ins import this module, so `kbert finetune --help` would wait for them.

# ---------------------------------------------------------------- classification / regression


def _class_ids(predictions, labels):
    """Class ids from ids, or from scores/logits (argmax over the last axis)."""
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    if predictions.ndim == labels.ndim + 1:
        if predictions.shape[-1] == 1:  # argmax over one column would always say class 0
            raise ValueError("predictions have a single score per example; threshold them into "
                             "class ids first")
        predictions = predictions.argmax(axis=-1)
    if predictions.shape != labels.shape:
        raise ValueError(f"predictions of shape {predictions.shape} do not match labels of shape "
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
        raise ValueError("multi-label predictions must be 0/1 indicators (threshold scores first)")
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
        raise ValueError(f"predictions of shape {predictions.shape} do not match labels of shape "
                         f"{labels.shape}")
    return predictions, labels


def pearson(predictions, labels) -> float:
    import scipy.stats

    return float(scipy.stats.pearsonr(*_scores(predictions, labels))[0])


def spearman(predictions, labels) -> float:
    import scipy.stats

    return float(scipy.stats.spearmanr(*_scores(predictions, labels))[0])


# ---------------------------------------------------------------- SQuAD

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """The official SQuAD normalisation: lower case, drop ASCII punctuation, drop a/an/the,
    collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def squad_exact(prediction: str, gold: str) -> int:
    return int(normalize_answer(prediction) == normalize_answer(gold))


def squad_token_f1(prediction: str, gold: str, version_2_with_negative: bool = False) -> float:
    return _bag_f1(normalize_answer(prediction).split(), normalize_answer(gold).split(), version_2_with_negative)


def squad_char_f1(prediction: str, gold: str, version_2_with_negative: bool = False) -> float:
    """F1 over characters, for Japanese and Chinese answers (no spaces between words).

    JSQuAD's evaluation (JGLUE's patch of transformers' SQuAD metric): the SQuAD F1 with each
    character of the normalized answer as a token (spaces dropped), so a partly right Japanese
    answer gets partial credit instead of 0 (whitespace tokens make F1 equal EM there).
    CMRC 2018's official script also scores characters (CJK characters one by one) but by their
    longest common substring, not the bag overlap used here: numbers from it can differ slightly.
    """
    return _bag_f1(list(normalize_answer(prediction).replace(" ", "")), list(normalize_answer(gold).replace(" ", "")),
                   version_2_with_negative)


def _bag_f1(pred_tokens: list, gold_tokens: list, version_2_with_negative: bool) -> float:
    """The official SQuAD F1 of two token lists (evaluate-v1.1.py / evaluate-v2.0.py ``f1_score``)."""
    if version_2_with_negative and (not pred_tokens or not gold_tokens):
        # evaluate-v2.0.py: a no-answer matches only a no-answer
        return float(pred_tokens == gold_tokens)
    common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


F1_UNITS = {"word": squad_token_f1, "char": squad_char_f1}


def _gold_answers(labels) -> dict:
    """{id: [answer texts]} from a dict of that shape or from read_squad examples."""
    if isinstance(labels, dict):
        return {k: list(v) for k, v in labels.items()}
    return {e["id"]: [a["text"] for a in e["answers"]] for e in labels}


def squad_metrics(predictions: dict, labels, version_2_with_negative: bool | None = None,
                  f1_unit: str = "word") -> dict:
    """SQuAD exact match and F1, in percent, as the official evaluation scripts compute them.

    Args:
      predictions: {question id: predicted answer text} ("" = no answer, SQuAD 2.0).
      labels: {question id: [gold answer texts]} ([] = unanswerable), or read_squad examples.
      version_2_with_negative: use evaluate-v2.0.py rules (gold answers that normalise to "" are
        dropped, an unanswerable question's gold is "", and an empty prediction scores F1 1 only
        against an empty gold). None: True if any question has no gold answer.
      f1_unit: "word" (SQuAD: whitespace tokens) or "char" (JSQuAD, CMRC 2018: characters, see
        ``squad_char_f1``); ``kbert.text.registry.f1_unit`` picks it from a model's tokenizer.

    Returns:
      {"exact_match", "f1", "total", "missing"} plus, for v2, "has_ans_exact_match",
      "has_ans_f1", "has_ans_total", "no_ans_exact_match", "no_ans_f1", "no_ans_total".
      Questions without a prediction score 0 (as in evaluate-v1.1.py) and are counted in missing.
    """
    if f1_unit not in F1_UNITS:
        raise ValueError(f"f1_unit must be one of {sorted(F1_UNITS)}, got {f1_unit!r}")
    f1_score = F1_UNITS[f1_unit]
    gold = _gold_answers(labels)
    if version_2_with_negative is None:
        version_2_with_negative = any(not answers for answers in gold.values())
    exact, f1s, has_answer = {}, {}, {}
    for qid, answers in gold.items():
        if version_2_with_negative:
            answers = [a for a in answers if normalize_answer(a)] or [""]
        elif not answers:
            raise ValueError(f"question {qid!r} has no gold answer; SQuAD 1.1 needs one")
        has_answer[qid] = answers != [""]
        if qid not in predictions:
            exact[qid] = f1s[qid] = 0.0
            continue
        pred = predictions[qid]
        exact[qid] = max(squad_exact(pred, a) for a in answers)
        f1s[qid] = max(f1_score(pred, a, version_2_with_negative) for a in answers)

    def summary(ids, prefix=""):
        n = len(ids)
        return {f"{prefix}exact_match": 100.0 * sum(exact[i] for i in ids) / n if n else 0.0,
                f"{prefix}f1": 100.0 * sum(f1s[i] for i in ids) / n if n else 0.0,
                f"{prefix}total": n}

    result = summary(list(gold))
    result["missing"] = sum(qid not in predictions for qid in gold)
    if version_2_with_negative:
        result.update(summary([q for q in gold if has_answer[q]], "has_ans_"))
        result.update(summary([q for q in gold if not has_answer[q]], "no_ans_"))
    return result


def squad_v2_best_threshold(best_non_null: dict, score_diffs: dict, labels,
                            metric: str = "f1") -> tuple:
    """The null_score_diff_threshold that maximises EM or F1 (evaluate-v2.0.py find_best_thresh).

    Args:
      best_non_null: {id: best non-empty answer text} (SquadPrediction.best_non_null_text).
      score_diffs: {id: null score minus best non-null score} (SquadPrediction.score_diff);
        an answer is predicted null when its score_diff > threshold.
      labels: as for squad_metrics.
      metric: "f1" or "exact_match".

    Returns:
      (best score in percent, threshold).
    """
    gold = _gold_answers(labels)
    per_question = {}
    for qid, answers in gold.items():
        answers = [a for a in answers if normalize_answer(a)] or [""]
        if qid in best_non_null:
            pred = best_non_null[qid]
            score = (max(squad_exact(pred, a) for a in answers) if metric == "exact_match"
                     else max(squad_token_f1(pred, a, True) for a in answers))
            per_question[qid] = (answers != [""], score, bool(pred))
    # Start with every question predicted null, then lower the bar one question at a time.
    current = best = sum(1 for has, _, _ in per_question.values() if not has)
    best_threshold = 0.0
    for qid in sorted(per_question, key=lambda q: score_diffs[q]):
        has, score, non_empty = per_question[qid]
        current += score if has else (-1 if non_empty else 0)
        if current > best:
            best, best_threshold = current, float(score_diffs[qid])
    return 100.0 * best / len(per_question), best_threshold


# ---------------------------------------------------------------- NER


def ner_metrics(predictions, labels, mode: str | None = None, scheme=None) -> dict:
    """Entity-level micro precision/recall/F1 over tag sequences (lists of lists of tag strings).

    seqeval's defaults follow conlleval (an I- tag after O or after another type starts an
    entity); mode="strict" with scheme=seqeval.scheme.IOB2 counts only well-formed entities.
    """
    from seqeval import metrics as seqeval_metrics

    predictions = [list(p) for p in predictions]
    labels = [list(t) for t in labels]
    if [len(p) for p in predictions] != [len(t) for t in labels]:
        raise ValueError("predicted and gold tag sequences differ in number or length")
    kwargs = {"mode": mode, "scheme": scheme, "zero_division": 0}
    return {
        "precision": float(seqeval_metrics.precision_score(labels, predictions, **kwargs)),
        "recall": float(seqeval_metrics.recall_score(labels, predictions, **kwargs)),
        "f1": float(seqeval_metrics.f1_score(labels, predictions, **kwargs)),
    }


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
METRIC_NAMES = tuple(_CLASSIFICATION) + (
    "squad_exact_match", "squad_f1", "ner_precision", "ner_recall", "ner_f1")


def compute_metrics(task_metric_names, predictions, labels) -> dict:
    """Computes the named metrics (e.g. kbert.data.glue.TASKS[name].metrics).

    predictions/labels by metric family:
      accuracy, exact_match, f1, macro_f1, micro_f1, weighted_f1, matthews_corrcoef (mcc): class ids or
        logits/probabilities [n, classes] (argmax is taken) vs label ids; [n, labels] 0/1
        indicators for multi-label.
      pearson, spearman: scores [n] or [n, 1] vs float labels.
      squad_exact_match, squad_f1: {id: text} vs {id: [gold texts]} or read_squad examples.
      ner_precision, ner_recall, ner_f1: tag-string sequences vs tag-string sequences.
    """
    if isinstance(task_metric_names, str):
        task_metric_names = (task_metric_names,)
    results, squad, ner = {}, None, None
    for name in task_metric_names:
        if name in _CLASSIFICATION:
            results[name] = _CLASSIFICATION[name](predictions, labels)
        elif name in ("squad_exact_match", "squad_f1"):
            squad = squad or squad_metrics(predictions, labels)
            results[name] = squad[name[len("squad_"):]]
        elif name in ("ner_precision", "ner_recall", "ner_f1"):
            ner = ner or ner_metrics(predictions, labels)
            results[name] = ner[name[len("ner_"):]]
        else:
            raise ValueError(f"unknown metric {name!r}; expected one of {METRIC_NAMES}")
    return results
