"""The conventions of word-level NER tags on WordPiece-level labels, and entity spans from IOB2 tags.

The label of a word goes on its first WordPiece; its other pieces, [CLS]/[SEP] and padding get
IGNORE_INDEX (-100, the value Keras' SparseCategoricalCrossentropy(ignore_class=-100) and most BERT
NER code skip) so that they are out of the loss and the metrics. Words whose first piece was cut by
truncation (or that produced no piece at all) carry no label in the sequence; when predictions are
mapped back to words they get a fill value.

Alignment is described by word_ids: for each token position, the index of the word it came from,
or -1 for special tokens and padding (the convention of Hugging Face's BatchEncoding.word_ids(),
with -1 for None so that it fits an int array).

TokenTagger builds the alignment in its graph (kbert.tasks.tagging.model); the tests hold it to a
numpy version of it (tests/fixtures/ner_alignment_reference.py).
"""

from __future__ import annotations

IGNORE_INDEX = -100


def entity_spans(tags) -> list:
    """Entities (type, start word, end word inclusive) from IOB2 tag strings.

    Same conventions as seqeval.metrics.sequence_labeling.get_entities (conlleval): an entity runs
    from a B-X (or an I-X that follows O or another type) over the following I-X tags.
    """
    spans, current = [], None  # current = (type, start)
    for i, tag in enumerate(list(tags) + ["O"]):
        if tag == "O":
            prefix, kind = "O", None
        else:
            prefix, _, kind = tag.partition("-")
            if prefix not in ("B", "I") or not kind:
                raise ValueError(f"tag {tag!r} at position {i} is not O, B-<type> or I-<type>")
        if current is not None and (prefix != "I" or kind != current[0]):
            spans.append((current[0], current[1], i - 1))
            current = None
        if prefix == "B" or (prefix == "I" and current is None):
            current = (kind, i)
    return spans
