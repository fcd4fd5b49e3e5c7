"""SQuAD's exact match and F1, re-implementing the official evaluation scripts (evaluate-v1.1.py /
evaluate-v2.0.py), which are scripts, not importable packages; the character F1 that JGLUE's JSQuAD
uses. Every function takes (predictions, labels) in that order.
"""

from __future__ import annotations

import collections
import re
import string

from kbert.errors import OptionsError

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
        raise OptionsError(f"f1_unit must be one of {sorted(F1_UNITS)}, got {f1_unit!r}",
                           option="f1_unit", value=f1_unit)
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
