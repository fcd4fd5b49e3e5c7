"""SQuAD windows (doc stride) and answer post-processing, in numpy.

Follows google-research/bert run_squad.py (convert_examples_to_features, _check_is_max_context,
write_predictions) with one change of representation: each token carries the character span
(start, end) it covers in the original context, with -1 for tokens outside the context ([CLS],
question, [SEP], padding). The answer text is then context[start_char:end_char] of the chosen
tokens, so run_squad's get_final_text (which re-aligns normalised WordPiece text with the original
words) and _improve_answer_span (which searches for sub-word answer boundaries) are not needed.

Offsets are Python str (code point) positions, as kbert's tokenizers report them
(``tokenize_with_offsets(..., unit="UTF8_CHAR")``).
"""

from __future__ import annotations

import collections
import dataclasses
import math

import numpy as np

DocSpan = collections.namedtuple("DocSpan", ["start", "length"])


# ---------------------------------------------------------------- windows


def doc_spans(num_context_tokens: int, max_tokens_for_doc: int, doc_stride: int) -> list:
    """The sliding windows over the context tokens (run_squad.py's doc_spans loop)."""
    if max_tokens_for_doc <= 0:
        raise ValueError("max_seq_length leaves no room for context tokens")
    spans, start = [], 0
    while start < num_context_tokens:
        length = min(num_context_tokens - start, max_tokens_for_doc)
        spans.append(DocSpan(start, length))
        if start + length == num_context_tokens:
            break
        start += min(length, doc_stride)
    return spans


def _check_is_max_context(doc_spans, cur_span_index: int, position: int) -> bool:
    """Whether window cur_span_index is the one where context token `position` has the most
    context on both sides (min(left, right) + 0.01 * window length), as in run_squad.py."""
    best_score, best_span_index = None, None
    for span_index, doc_span in enumerate(doc_spans):
        end = doc_span.start + doc_span.length - 1
        if position < doc_span.start or position > end:
            continue
        num_left_context = position - doc_span.start
        num_right_context = end - position
        score = min(num_left_context, num_right_context) + 0.01 * doc_span.length
        if best_score is None or score > best_score:
            best_score, best_span_index = score, span_index
    return cur_span_index == best_span_index


@dataclasses.dataclass
class Window:
    """One model input over a slice of the context: [CLS] question [SEP] context slice [SEP].

    Attributes:
      tokens: the tokens (whatever the caller passed: strings or ids), padded if asked.
      segment_ids, input_mask: int32 [len(tokens)].
      offsets: int64 [len(tokens), 2], character span of each token in the context, -1 outside.
      is_max_context: bool [len(tokens)], True for context tokens whose best window is this one.
      doc_span: the context-token slice (start, length) in this window.
      context_start: position in `tokens` of the first context token.
      start_position, end_position: the answer's token positions in this window for training
        (cls_index when the answer is not inside this window or the question is unanswerable),
        None when no answer was given.
    """

    tokens: list
    segment_ids: np.ndarray
    input_mask: np.ndarray
    offsets: np.ndarray
    is_max_context: np.ndarray
    doc_span: DocSpan
    context_start: int
    start_position: int | None = None
    end_position: int | None = None


def _answer_tokens(context_offsets, answer_span):
    start_char, end_char = answer_span
    if not 0 <= start_char < end_char:
        raise ValueError(f"answer character span {answer_span} is empty or negative")
    overlap = (context_offsets[:, 0] < end_char) & (context_offsets[:, 1] > start_char)
    hits = np.flatnonzero(overlap)
    if not len(hits):
        raise ValueError(f"no context token overlaps the answer characters {answer_span}")
    return int(hits[0]), int(hits[-1])


def build_windows(query_tokens, context_tokens, context_offsets, *, max_seq_length: int = 384,
                  max_query_length: int = 64, doc_stride: int = 128, cls_token="[CLS]",
                  sep_token="[SEP]", pad_token=None, answer_span=None,
                  is_impossible: bool = False) -> list:
    """Splits a tokenized question + context into overlapping windows (run_squad.py layout).

    Args:
      query_tokens: question tokens (truncated to max_query_length).
      context_tokens: context tokens; context_offsets: their [n, 2] character spans (end
        exclusive) in the context string.
      max_seq_length, max_query_length, doc_stride: as in run_squad.py.
      cls_token, sep_token: what to put at the special positions (strings or ids).
      pad_token: if not None, pad every window to max_seq_length with it (offsets -1, mask 0).
      answer_span: (start_char, end_char) of the answer in the context, for training labels.
      is_impossible: SQuAD 2.0 unanswerable question (labels point at [CLS]).

    Returns:
      list of Window.
    """
    query_tokens = list(query_tokens)[:max_query_length]
    context_tokens = list(context_tokens)
    context_offsets = np.asarray(context_offsets, dtype=np.int64).reshape(-1, 2)
    if len(context_offsets) != len(context_tokens):
        raise ValueError(f"{len(context_tokens)} context tokens but {len(context_offsets)} offsets")
    max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
    spans = doc_spans(len(context_tokens), max_tokens_for_doc, doc_stride)
    answer_tokens = None
    if answer_span is not None and not is_impossible:
        answer_tokens = _answer_tokens(context_offsets, answer_span)

    windows = []
    for index, span in enumerate(spans):
        tokens = [cls_token, *query_tokens, sep_token]
        context_start = len(tokens)
        tokens += context_tokens[span.start:span.start + span.length] + [sep_token]
        n = len(tokens)
        total = max_seq_length if pad_token is not None else n
        offsets = np.full((total, 2), -1, dtype=np.int64)
        offsets[context_start:context_start + span.length] = context_offsets[
            span.start:span.start + span.length]
        is_max = np.zeros(total, dtype=bool)
        for i in range(span.length):
            is_max[context_start + i] = _check_is_max_context(spans, index, span.start + i)
        segment_ids = np.zeros(total, dtype=np.int32)
        segment_ids[context_start:n] = 1
        input_mask = np.zeros(total, dtype=np.int32)
        input_mask[:n] = 1
        tokens += [pad_token] * (total - n)
        window = Window(tokens, segment_ids, input_mask, offsets, is_max, span, context_start)
        if answer_span is not None or is_impossible:
            window.start_position = window.end_position = 0
            if answer_tokens is not None:
                first, last = answer_tokens
                if span.start <= first and last < span.start + span.length:
                    window.start_position = first - span.start + context_start
                    window.end_position = last - span.start + context_start
        windows.append(window)
    return windows


# ---------------------------------------------------------------- predictions


@dataclasses.dataclass
class NbestAnswer:
    text: str
    start_char: int  # -1 for the null answer
    end_char: int    # exclusive; -1 for the null answer
    start_logit: float
    end_logit: float
    probability: float = 0.0


@dataclasses.dataclass
class SquadPrediction:
    """The answer for one question.

    text/start_char/end_char/probability/start_logit/end_logit describe the final answer
    ("" and -1 when SQuAD 2.0 decides there is none). probability is its softmax share of the
    n-best total scores (start_logit + end_logit). null_score is the smallest [CLS] score over the
    windows and score_diff = null_score - best non-null score (SQuAD 2.0 only, else None);
    best_non_null is the best span answer even when the null answer won (for threshold search).
    """

    text: str
    start_char: int
    end_char: int
    probability: float
    start_logit: float
    end_logit: float
    nbest: list
    null_score: float | None = None
    score_diff: float | None = None
    best_non_null: NbestAnswer | None = None


def _get_best_indexes(logits, n_best_size: int) -> np.ndarray:
    """Indices of the n largest logits, ties to the lower index (as run_squad's stable sort)."""
    return np.argsort(-np.asarray(logits, dtype=np.float64), kind="stable")[:n_best_size]


def _compute_softmax(scores) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    if not len(scores):
        return scores
    exp = np.exp(scores - scores.max())
    return exp / exp.sum()


def _field(window, name):
    return window[name] if isinstance(window, dict) else getattr(window, name)


def postprocess_example(context: str, windows, start_logits, end_logits, *, n_best_size: int = 20,
                        max_answer_length: int = 30, version_2_with_negative: bool = False,
                        null_score_diff_threshold: float = 0.0,
                        cls_index: int = 0) -> SquadPrediction:
    """The n-best answers and the final answer for one question (run_squad.py write_predictions).

    Args:
      context: the original context string.
      windows: per window, an object or dict with `offsets` ([n, 2] character spans, -1 outside
        the context) and `is_max_context` ([n] bool); e.g. the Windows of build_windows.
      start_logits, end_logits: per window, the model's [>= n] logits (extra, e.g. padding,
        positions are ignored).
      n_best_size, max_answer_length (in tokens), version_2_with_negative,
      null_score_diff_threshold: as in run_squad.py.
      cls_index: position whose start+end logits score "no answer".
    """
    prelim = []  # (score, window index, start, end, start_logit, end_logit, is_null)
    score_null, null_start, null_end, null_window = math.inf, 0.0, 0.0, 0
    for w, window in enumerate(windows):
        offsets = np.asarray(_field(window, "offsets")).reshape(-1, 2)
        is_max = np.asarray(_field(window, "is_max_context"), dtype=bool)
        starts = np.asarray(start_logits[w], dtype=np.float64)
        ends = np.asarray(end_logits[w], dtype=np.float64)
        if version_2_with_negative:
            feature_null = starts[cls_index] + ends[cls_index]
            if feature_null < score_null:
                score_null, null_window = feature_null, w
                null_start, null_end = starts[cls_index], ends[cls_index]
        n = len(offsets)
        for s in _get_best_indexes(starts, n_best_size):
            for e in _get_best_indexes(ends, n_best_size):
                if s >= n or e >= n or offsets[s, 0] < 0 or offsets[e, 0] < 0:
                    continue
                if not is_max[s] or e < s or e - s + 1 > max_answer_length:
                    continue
                prelim.append((starts[s] + ends[e], w, int(s), int(e), starts[s], ends[e], False))
    if version_2_with_negative:
        prelim.append((null_start + null_end, null_window, cls_index, cls_index, null_start,
                       null_end, True))
    prelim.sort(key=lambda p: p[0], reverse=True)  # stable, as sorted(..., reverse=True)

    nbest, seen = [], set()
    for _, w, s, e, start_logit, end_logit, is_null in prelim:
        if len(nbest) >= n_best_size:
            break
        if is_null:
            text, start_char, end_char = "", -1, -1
        else:
            offsets = np.asarray(_field(windows[w], "offsets")).reshape(-1, 2)
            start_char, end_char = int(offsets[s, 0]), int(offsets[e, 1])
            text = context[start_char:end_char]
            if not text or text in seen:  # empty text would be mistaken for the null answer
                continue
        seen.add(text)
        nbest.append(NbestAnswer(text, start_char, end_char, float(start_logit), float(end_logit)))
    if version_2_with_negative and "" not in seen:
        nbest.append(NbestAnswer("", -1, -1, float(null_start), float(null_end)))
    if not nbest:
        # run_squad.py inserts a literal "empty" answer here; an empty answer at -1 is clearer.
        nbest.append(NbestAnswer("", -1, -1, 0.0, 0.0))
    probabilities = _compute_softmax([a.start_logit + a.end_logit for a in nbest])
    for answer, p in zip(nbest, probabilities):
        answer.probability = float(p)
    best_non_null = next((a for a in nbest if a.text), None)

    if not version_2_with_negative:
        final, null_score, score_diff = nbest[0], None, None
    else:
        null_score = float(score_null)
        if best_non_null is None:  # no valid span at all: the answer can only be null
            score_diff = math.inf
        else:
            score_diff = null_score - best_non_null.start_logit - best_non_null.end_logit
        if score_diff > null_score_diff_threshold:
            final = next(a for a in nbest if a.text == "" and a.start_char == -1)
        else:
            final = best_non_null
    return SquadPrediction(final.text, final.start_char, final.end_char, final.probability,
                           final.start_logit, final.end_logit, nbest, null_score, score_diff,
                           best_non_null)
