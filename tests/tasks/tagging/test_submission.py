"""kbert.tasks.tagging.submission: CoNLL's predictions.txt ("word gold predicted", a blank line
between sentences) read back as conlleval reads it."""

from kbert.tasks.tagging.submission import write_conll


def test_write_conll_reads_back(tmp_path):
    sentences = [["EU", "rejects", "German", "call"], ["Peter", "Blackburn"], ["Zürich"]]
    gold = [["B-ORG", "O", "B-MISC", "O"], ["B-PER", "I-PER"], ["B-LOC"]]
    predicted = [["B-ORG", "O", "B-LOC", "O"], ["B-PER", "O"], ["O"]]
    path = write_conll(tmp_path / "predictions.txt", sentences, gold, predicted)
    blocks = path.read_text(encoding="utf-8").split("\n\n")
    assert blocks[-1] == ""  # every sentence ends with its blank line
    read = [[line.split(" ") for line in block.splitlines()] for block in blocks[:-1]]
    assert [[w for w, _, _ in s] for s in read] == sentences
    assert [[g for _, g, _ in s] for s in read] == gold
    assert [[p for _, _, p in s] for s in read] == predicted
