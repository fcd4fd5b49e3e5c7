"""Entity F1 (kbert.tasks.tagging.metrics) against hand counts, conlleval's and IOB2's conventions."""

import pytest

from kbert.tasks.tagging import metrics as m


def test_ner_metrics_by_hand():
    true = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "O"]]
    # gold {PER 0-1, LOC 3, ORG 0}, predicted {PER 0-1, ORG 3, ORG 0}: 2 of 3 both ways
    assert m.ner_metrics(pred, true) == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3})
    # conlleval convention: I-PER after O starts an entity (strict IOB2 mode drops it)
    assert m.ner_metrics([["O", "I-PER"]], [["O", "B-PER"]])["f1"] == 1.0
    from seqeval.scheme import IOB2
    assert m.ner_metrics([["O", "I-PER"]], [["O", "B-PER"]], mode="strict", scheme=IOB2)["f1"] == 0.0
    with pytest.raises(ValueError, match="length"):
        m.ner_metrics([["O"]], [["O", "O"]])
