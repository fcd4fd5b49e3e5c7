"""SQuAD windows and n-best post-processing on hand-checked examples and real dev questions."""

import math
import re

import numpy as np
import pytest

from conftest import SHARED
from kbert.tasks.span_qa.postprocess import (
    DocSpan, _check_is_max_context, build_windows, doc_spans, postprocess_example)


def tokenize(text):
    """Words and single punctuation marks with character offsets (a stand-in tokenizer)."""
    matches = list(re.finditer(r"\w+|[^\w\s]", text))
    return [m.group() for m in matches], [(m.start(), m.end()) for m in matches]


def logits_for(window, values, fill=0.0):
    """A logits vector for the window: `values` maps position -> logit, others `fill`."""
    out = np.full(len(window.tokens), float(fill))
    for position, value in values.items():
        out[position] = value
    return out


CAT = "The cat sat on the mat."


def _cat_window(**kwargs):
    tokens, offsets = tokenize(CAT)
    (window,) = build_windows(["where"], tokens, offsets, max_seq_length=32, **kwargs)
    return window


def test_single_window_nbest_by_hand():
    window = _cat_window()
    assert window.tokens == ["[CLS]", "where", "[SEP]", "The", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]
    assert window.context_start == 3 and list(window.segment_ids) == [0] * 3 + [1] * 8
    assert window.offsets[7].tolist() == [15, 18] and window.offsets[0].tolist() == [-1, -1]
    start = logits_for(window, {7: 3.0, 8: 1.0})  # "the", "mat"
    end = logits_for(window, {8: 4.0, 9: 2.0})    # "mat", "."
    # top-3 starts: 7, 8, 0 (first of the zeros); ends: 8, 9, 0. Valid pairs by score:
    # (7,8) "the mat" 7.0, (7,9) "the mat." 5.0, (8,8) "mat" 5.0 (stable order), (8,9) 3.0.
    pred = postprocess_example(CAT, [window], [start], [end], n_best_size=3)
    assert [a.text for a in pred.nbest] == ["the mat", "the mat.", "mat"]
    assert (pred.text, pred.start_char, pred.end_char) == ("the mat", 15, 22)
    assert CAT[pred.start_char:pred.end_char] == pred.text
    assert pred.probability == pytest.approx(1 / (1 + 2 * math.exp(-2)))
    assert sum(a.probability for a in pred.nbest) == pytest.approx(1.0)
    assert (pred.start_logit, pred.end_logit) == (3.0, 4.0)
    assert pred.null_score is None and pred.score_diff is None


def test_max_answer_length_and_duplicates():
    window = _cat_window()
    start = logits_for(window, {7: 3.0, 8: 1.0})
    end = logits_for(window, {8: 4.0, 9: 2.0})
    pred = postprocess_example(CAT, [window], [start], [end], n_best_size=3, max_answer_length=1)
    assert [a.text for a in pred.nbest] == ["mat"] and pred.probability == 1.0
    # "the" occurs twice ("The" at 0 is a different string): same text at two places counts once
    context = "the cat and the dog"
    tokens, offsets = tokenize(context)
    (w,) = build_windows(["q"], tokens, offsets, max_seq_length=16)
    start = logits_for(w, {3: 5.0, 6: 4.0})
    end = logits_for(w, {3: 5.0, 6: 4.0})
    pred = postprocess_example(context, [w], [start], [end], n_best_size=2)
    assert [(a.text, a.start_char) for a in pred.nbest] == [("the", 0), ("the cat and the", 0)]


def test_doc_spans_and_max_context_by_hand():
    assert doc_spans(10, 6, 2) == [DocSpan(0, 6), DocSpan(2, 6), DocSpan(4, 6)]
    assert doc_spans(10, 6, 100) == [DocSpan(0, 6), DocSpan(6, 4)]
    assert doc_spans(3, 6, 2) == [DocSpan(0, 3)]
    spans = doc_spans(10, 6, 2)
    # score = min(left, right) + 0.01 * length; e.g. token 4: span0 1.06, span1 2.06, span2 0.06
    best = [next(i for i in range(3) if _check_is_max_context(spans, i, p)) for p in range(10)]
    assert best == [0, 0, 0, 0, 1, 1, 2, 2, 2, 2]
    with pytest.raises(ValueError, match="no room"):
        doc_spans(10, 0, 2)


def _ten_word_windows(**kwargs):
    context = " ".join(f"w{i}" for i in range(10))
    tokens, offsets = tokenize(context)
    # 1 query token: max_tokens_for_doc = 10 - 1 - 3 = 6; stride 2 -> spans (0,6) (2,6) (4,6)
    return context, build_windows(["q"], tokens, offsets, max_seq_length=10, doc_stride=2, **kwargs)


def test_answer_across_windows_uses_max_context():
    context, windows = _ten_word_windows(answer_span=(12, 23))  # "w4 w5 w6 w7"
    assert [w.doc_span for w in windows] == [(0, 6), (2, 6), (4, 6)]
    assert [w.context_start for w in windows] == [3, 3, 3]
    assert [w.is_max_context[3:9].tolist() for w in windows] == [
        [True] * 4 + [False] * 2, [False] * 2 + [True] * 2 + [False] * 2, [False] * 2 + [True] * 4]
    # training labels: w4..w7 is not inside window 0 -> [CLS]
    assert [(w.start_position, w.end_position) for w in windows] == [(0, 0), (5, 8), (3, 6)]
    assert windows[1].tokens[5:9] == ["w4", "w5", "w6", "w7"]
    # window 0 scores "w4 w5" highest, but w4 has more context in window 1, so window 0's span is
    # dropped, and so is window 2's "w4 w5"; window 1's "w4 .. w7" (3 + 3) beats window 2's
    # "w6 .. w9" (2 + 2.5). Other positions get -10, so pairs using them score below 0.
    start = [logits_for(windows[0], {7: 10.0}, -10), logits_for(windows[1], {5: 3.0}, -10),
             logits_for(windows[2], {3: 9.0, 5: 2.0}, -10)]
    end = [logits_for(windows[0], {8: 10.0}, -10), logits_for(windows[1], {8: 3.0}, -10),
           logits_for(windows[2], {4: 9.0, 8: 2.5}, -10)]
    pred = postprocess_example(context, windows, start, end, n_best_size=5)
    assert (pred.text, pred.start_char, pred.end_char) == ("w4 w5 w6 w7", 12, 23)
    assert [a.text for a in pred.nbest][:2] == ["w4 w5 w6 w7", "w6 w7 w8 w9"]
    assert pred.nbest[1].start_logit == 2.0 and pred.nbest[1].end_logit == 2.5


def test_null_answer_squad2():
    context, windows = _ten_word_windows(is_impossible=True)
    assert all((w.start_position, w.end_position) == (0, 0) for w in windows)
    start = [logits_for(windows[0], {0: 1.0, 4: 0.5}), logits_for(windows[1], {0: 0.5}),
             logits_for(windows[2], {0: 2.0})]
    end = [logits_for(windows[0], {0: 1.0, 4: 1.0}), logits_for(windows[1], {0: 0.5}),
           logits_for(windows[2], {0: 2.0})]
    # null score = min over windows of CLS start+end = 1.0 (window 1); best span "w1" = 1.5
    pred = postprocess_example(context, windows, start, end, version_2_with_negative=True,
                               n_best_size=3)
    assert pred.null_score == 1.0 and pred.score_diff == pytest.approx(-0.5)
    assert pred.text == "w1" and pred.best_non_null.text == "w1"
    null = [a for a in pred.nbest if a.text == ""]
    assert len(null) == 1 and (null[0].start_logit, null[0].end_logit) == (0.5, 0.5)
    strict = postprocess_example(context, windows, start, end, version_2_with_negative=True,
                                 n_best_size=3, null_score_diff_threshold=-1.0)
    assert (strict.text, strict.start_char, strict.end_char) == ("", -1, -1)
    assert strict.best_non_null.text == "w1"
    # nothing valid at all: v2 answers null, v1 answers an empty string
    zeros = [np.zeros(len(w.tokens)) for w in windows]
    for w in windows:
        w.is_max_context[:] = False
    none = postprocess_example(context, windows, zeros, zeros, version_2_with_negative=True)
    assert none.text == "" and none.score_diff == math.inf
    assert postprocess_example(context, windows, zeros, zeros).text == ""


def test_multibyte_offsets():
    context = "Café ☕ in Zürich, 東京."
    # Code point offsets (what kbert's tokenizers report), of the tokens below.
    chars = np.array([[0, 4], [5, 6], [7, 9], [10, 16], [16, 17], [18, 19], [19, 20], [20, 21]])
    tokens = ["cafe", "☕", "in", "zurich", ",", "東", "京", "."]
    (w,) = build_windows(["where"], tokens, chars, max_seq_length=16, pad_token="[PAD]",
                         answer_span=(18, 20))
    assert len(w.tokens) == 16 and w.input_mask.sum() == 12 and w.offsets[15].tolist() == [-1, -1]
    assert (w.start_position, w.end_position) == (8, 9)
    pred = postprocess_example(context, [w], [logits_for(w, {6: 4.0, 8: 3.0})],
                               [logits_for(w, {6: 4.0, 9: 3.5})])
    assert (pred.text, pred.start_char, pred.end_char) == ("Zürich", 10, 16)
    # (6,6) 8.0 "Zürich", (6,9) 7.5 "Zürich, 東京", (8,9) 6.5 "東京"
    assert [a.text for a in pred.nbest[:3]] == ["Zürich", "Zürich, 東京", "東京"]


def test_real_dev_questions_round_trip():
    """Logits peaked at the labelled answer tokens give back the gold answer text."""
    from kbert.data.squad import read_squad

    examples = read_squad(SHARED / "squad" / "dev-v1.1.json").examples[:300]
    per_question, checked = {}, []  # question id: its windows, start logits, end logits
    for ex in examples:
        answer = ex["answers"][0]
        span = (answer["answer_start"], answer["answer_start"] + len(answer["text"]))
        tokens, offsets = tokenize(ex["context"])
        starts = {s for s, _ in offsets}
        ends = {e for _, e in offsets}
        if span[0] in starts and span[1] in ends:  # answer boundaries on token boundaries
            checked.append(ex["id"])
        query, _ = tokenize(ex["question"])
        windows = build_windows(query, tokens, offsets, max_seq_length=64, max_query_length=16,
                                doc_stride=24, answer_span=span)
        assert len(windows) > 1 or len(tokens) <= 64 - len(query[:16]) - 3
        for w in windows:
            start, end = np.zeros(len(w.tokens)), np.zeros(len(w.tokens))
            if w.start_position:
                start[w.start_position], end[w.end_position] = 10.0, 10.0
            for parts, value in zip(per_question.setdefault(ex["id"], ([], [], [])), (w, start, end)):
                parts.append(value)
    contexts = {e["id"]: e["context"] for e in examples}
    predictions = {q: postprocess_example(contexts[q], *parts, max_answer_length=64)
                   for q, parts in per_question.items()}
    gold = {e["id"]: e["answers"][0]["text"] for e in examples}
    assert len(checked) > 250
    assert all(predictions[q].text == gold[q] for q in checked)
