"""Entity spans (kbert.tasks.tagging.ner_alignment) against seqeval; and the numpy word <-> WordPiece
alignment the tagger's tests hold its graph to (tests/fixtures/ner_alignment_reference.py), by hand and in
round trips."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from seqeval.metrics import f1_score as seqeval_f1
from seqeval.metrics.sequence_labeling import get_entities

from fixtures.ner_alignment_reference import (align_labels, first_token_mask, token_word_ids, truncated_words,
                                              word_predictions)
from kbert.tasks.tagging.ner_alignment import IGNORE_INDEX, entity_spans

X = IGNORE_INDEX


def test_alignment_by_hand():
    # "Johanson lives in Zürich": Johan ##son / lives / in / zu ##ric ##h
    pieces = [["johan", "##son"], ["lives"], ["in"], ["zu", "##ric", "##h"]]
    labels = [1, 0, 0, 5]
    ids = token_word_ids(pieces)
    assert ids.tolist() == [-1, 0, 0, 1, 2, 3, 3, 3, -1]
    assert align_labels(labels, ids).tolist() == [X, 1, X, 0, 0, 5, X, X, X]
    assert first_token_mask(ids).tolist() == [0, 1, 0, 1, 1, 1, 0, 0, 0]
    padded = token_word_ids([2, 1, 1, 3], max_seq_length=12)
    assert padded.tolist() == [-1, 0, 0, 1, 2, 3, 3, 3, -1, -1, -1, -1]
    assert align_labels(labels, padded, ignore_index=-1).tolist() == [-1, 1, -1, 0, 0, 5] + [-1] * 6


def test_truncation_by_hand():
    # room for 4 pieces: word 2 keeps its first piece only, word 3 is cut entirely
    ids = token_word_ids([2, 1, 2, 1], max_seq_length=6)
    assert ids.tolist() == [-1, 0, 0, 1, 2, -1]
    assert align_labels([3, 4, 5, 6], ids).tolist() == [X, 3, X, 4, 5, X]
    assert truncated_words(ids, 4).tolist() == [3]
    logits = np.zeros((6, 7))
    logits[[1, 2, 3, 4], [3, 6, 4, 5]] = 1.0  # position 2 (a continuation piece) is ignored
    assert word_predictions(logits, ids, 4, fill_value=0).tolist() == [3, 4, 5, 0]
    # a word that produced no pieces (e.g. only control characters) is like a truncated one
    ids = token_word_ids([1, 0, 1])
    assert align_labels([7, 8, 9], ids).tolist() == [X, 7, 9, X]
    assert word_predictions([0, 7, 9, 0], ids, 3, fill_value=-1).tolist() == [7, -1, 9]
    with pytest.raises(ValueError, match="shorter"):
        token_word_ids([1], max_seq_length=1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 8)), min_size=1, max_size=20),
       st.one_of(st.none(), st.integers(2, 30)), st.integers(0, 2**31 - 1))
def test_round_trip(words, max_seq_length, seed):
    counts = [c for c, _ in words]
    labels = np.array([label for _, label in words])
    ids = token_word_ids(counts, max_seq_length=max_seq_length)
    token_labels = align_labels(labels, ids)
    # every word whose first piece survived is labelled exactly once, with its own label
    kept = np.setdiff1d(np.arange(len(words)), truncated_words(ids, len(words)))
    assert sorted(ids[token_labels != X].tolist()) == kept.tolist()
    # a "model" that predicts the gold label at labelled positions and junk elsewhere
    rng = np.random.default_rng(seed)
    preds = np.where(token_labels == X, rng.integers(0, 9, len(ids)), token_labels)
    back = word_predictions(preds, ids, len(words), fill_value=-7)
    expected = labels.copy()
    expected[truncated_words(ids, len(words))] = -7
    assert back.tolist() == expected.tolist()
    if max_seq_length is None:
        assert len(kept) == sum(c > 0 for c in counts)


TAGS = st.lists(st.sampled_from(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]), max_size=25)


@settings(max_examples=200, deadline=None)
@given(TAGS)
def test_entity_spans_match_seqeval(tags):
    assert entity_spans(tags) == get_entities(tags)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(TAGS, TAGS), min_size=1, max_size=5))
def test_span_f1_matches_seqeval(pairs):
    true = [t for t, p in pairs]
    pred = [(p + ["O"] * len(t))[:len(t)] for t, p in pairs]
    gold_spans = {(i, s) for i, t in enumerate(true) for s in entity_spans(t)}
    pred_spans = {(i, s) for i, p in enumerate(pred) for s in entity_spans(p)}
    correct = len(gold_spans & pred_spans)
    expected = 2 * correct / (len(gold_spans) + len(pred_spans)) if correct else 0.0
    assert seqeval_f1(true, pred, zero_division=0) == pytest.approx(expected)


def test_entity_spans_by_hand():
    tags = ["B-PER", "I-PER", "O", "I-LOC", "I-LOC", "B-LOC", "B-LOC", "I-ORG"]
    assert entity_spans(tags) == [("PER", 0, 1), ("LOC", 3, 4), ("LOC", 5, 5), ("LOC", 6, 6),
                                  ("ORG", 7, 7)]
    with pytest.raises(ValueError, match="'E-PER' at position 1"):
        entity_spans(["O", "E-PER"])


def test_entity_counts_on_conll_valid():
    """CoNLL-2003 dev has 1,837 LOC, 922 MISC, 1,341 ORG and 1,842 PER entities (Tjong Kim Sang
    and De Meulder 2003, table 2)."""
    from collections import Counter

    from conftest import SHARED
    from kbert.data.conll import read_conll

    sentences = read_conll(SHARED / "conll2003" / "valid.txt").examples
    counts = Counter(kind for s in sentences for kind, _, _ in entity_spans(s["tags"]))
    assert counts == {"LOC": 1837, "MISC": 922, "ORG": 1341, "PER": 1842}
