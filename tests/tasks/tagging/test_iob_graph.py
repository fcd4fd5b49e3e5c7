"""kbert.tasks.tagging.iob_graph (IOB2 chunking in the graph) against the Python reference,
kbert.tasks.tagging.ner_alignment.entity_spans (seqeval's rules), on hand-made rows: lenient I- after
O or another type, padding past each row's words, rows without entities, non-ASCII text."""

import tensorflow as tf

from kbert.tasks.tagging.iob_graph import iob_entities, iob_word_entities
from kbert.tasks.tagging.ner_alignment import entity_spans

ROWS = [  # (words, tags)
    (["Peter", "Blackburn", "visited", "Zürich", "AG", "today"], ["B-PER", "I-PER", "O", "B-ORG", "I-ORG", "O"]),
    (["東京", "と", "大阪", "府"], ["I-LOC", "O", "B-LOC", "I-ORG"]),  # I- after O; type change
    (["nothing", "here"], ["O", "O"]),
    (["EU", "UK"], ["B-ORG", "B-ORG"]),
]


def _padded(rows, fill):
    width = max(len(r) for r in rows)
    return [list(r) + [fill] * (width - len(r)) for r in rows]


def test_character_entities_equal_the_python_reference():
    texts, starts, ends = [], [], []
    for words, _ in ROWS:
        text, s, e = "", [], []
        for w in words:
            s.append(len(text))
            text += w
            e.append(len(text))
            text += " "
        texts.append(text.rstrip())
        starts.append(s)
        ends.append(e)
    # padding past num_words holds tags that must be ignored
    out = iob_entities(tf.constant(_padded([t for _, t in ROWS], "B-PAD")), tf.constant(_padded(starts, 0)),
                       tf.constant(_padded(ends, 0)), tf.constant([len(w) for w, _ in ROWS]), tf.constant(texts))
    for row, ((words, tags), text) in enumerate(zip(ROWS, texts)):
        expected = [(kind, starts[row][a], ends[row][b]) for kind, a, b in entity_spans(tags)]
        n = int(out["num_entities"][row])
        got = [(out["entity_type"][row, i].numpy().decode(), int(out["entity_start"][row, i]),
                int(out["entity_end"][row, i])) for i in range(n)]
        assert got == expected, row
        assert [out["entity_text"][row, i].numpy().decode() for i in range(n)] == [text[s:e] for _, s, e in expected]
        assert all(int(v) == -1 for v in out["entity_start"][row, n:])


def test_word_entities_equal_the_python_reference():
    words = tf.constant(_padded([w for w, _ in ROWS], ""))
    out = iob_word_entities(tf.constant(_padded([t for _, t in ROWS], "B-PAD")), words)
    for row, (row_words, tags) in enumerate(ROWS):
        expected = entity_spans(tags)
        n = int(out["num_entities"][row])
        got = [(out["entity_type"][row, i].numpy().decode(), int(out["entity_start_word"][row, i]),
                int(out["entity_end_word"][row, i])) for i in range(n)]
        assert got == expected, row
        texts = [out["entity_text"][row, i].numpy().decode() for i in range(n)]
        assert texts == ["".join(row_words[a:b + 1]) for _, a, b in expected]  # joined without spaces
