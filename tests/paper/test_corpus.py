"""kbert.paper.corpus: the corpus split into training text and held-out text line by line, keyed by
content; the default is the shipped corpus."""

import pytest

from kbert.errors import DataError
from kbert.paper import corpus


def test_each_file_keeps_its_start_for_training_and_gives_its_end_to_the_held_out_text(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("".join(f"a{i}\n" for i in range(10)))
    b.write_text("".join(f"b{i}\n" for i in range(20)))
    train, heldout = corpus.split_corpus([a, b], tmp_path / "cell", None, 0.1)
    texts = sorted((tmp_path / "cell" / "text" / "train").glob("*.txt"))
    assert [t.read_text().split() for t in texts] == [[f"a{i}" for i in range(9)], [f"b{i}" for i in range(18)]]
    assert (tmp_path / "cell" / "text" / "heldout.txt").read_text().split() == ["a9", "b18", "b19"]
    assert train.endswith("*.txt") and heldout.endswith("heldout.txt")
    corpus.split_corpus([b], tmp_path / "short", 12, 0.5)  # at most 12 characters read: b0..b3
    assert (tmp_path / "short" / "text" / "heldout.txt").read_text().split() == ["b2", "b3"]


def test_files_are_named_by_content_and_the_default_is_the_shipped_corpus(tmp_path):
    (tmp_path / "x.txt").write_text("same text")
    (tmp_path / "y.txt").write_text("same text")
    files = corpus.corpus_files(str(tmp_path / "*.txt"))
    digests = corpus.corpus_digest(files)
    assert [d[0] for d in digests] == ["x.txt", "y.txt"] and digests[0][1] == digests[1][1]
    assert corpus.corpus_files(None) == sorted(corpus.SHIPPED.glob("*.txt"))
    with pytest.raises(DataError, match="no corpus file"):
        corpus.corpus_files(str(tmp_path / "*.md"))
