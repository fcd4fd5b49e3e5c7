"""Entity-level F1 of tag sequences: seqeval's (conlleval conventions by default)."""

from __future__ import annotations


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
