"""CoNLL-2003 reader on the real files and malformed inputs; the real file mutated by hypothesis
(tests/fixtures/file_mutations.py, columns separated by spaces or tabs) either reads, a tag per word, or
raises a DataError naming file and line."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SHARED
from fixtures.file_mutations import check_named, first_lines, mutate, mutations
from kbert.data.conll import CONLL2003_TAGS, read_conll
from kbert.errors import DataError


@pytest.mark.slow
def test_train_and_valid_counts():
    train = read_conll(SHARED / "conll2003" / "train.txt")
    assert len(train.examples) == 14041
    assert train.meta == {"documents": 946, "tokens": 203621}
    valid = read_conll(SHARED / "conll2003" / "valid.txt")
    assert len(valid.examples) == 3250 and valid.meta["tokens"] == 51362
    assert valid.meta["documents"] == 216


@pytest.mark.slow
def test_first_sentences_by_hand():
    train = read_conll(SHARED / "conll2003" / "train.txt")
    first = train.examples[0]
    # lines 3-11 of train.txt: "EU NNP B-NP B-ORG", "rejects VBZ B-VP O", ...
    assert first["words"] == ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."]
    assert first["tags"] == ["B-ORG", "O", "B-MISC", "O", "O", "O", "B-MISC", "O", "O"]
    assert first["labels"] == [CONLL2003_TAGS.index(t) for t in first["tags"]]
    assert first["line"] == 3 and first["document"] == 0
    assert train.examples[1]["words"] == ["Peter", "Blackburn"]
    assert train.examples[1]["tags"] == ["B-PER", "I-PER"]
    assert train.label_names == CONLL2003_TAGS
    assert all("-DOCSTART-" not in e["words"] for e in train.examples)
    assert train.examples[-1]["document"] == 945


def test_collected_tags(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("-DOCSTART- -X- -X- O\n\nA NN B-NP I-LOC\nb NN I-NP O\n\nc NN B-NP B-ORG\n")
    data = read_conll(path, tags=None)
    assert data.label_names == ("O", "I-LOC", "B-ORG")
    assert [e["labels"] for e in data.examples] == [[1, 0], [2]]
    assert data.examples[1]["line"] == 6


@pytest.mark.parametrize("content,line,what", [
    ("EU NNP B-NP B-ORG\nrejects VBZ O\n", 2, "token line"),
    ("EU NNP B-NP B-ORG\n\nrejects VBZ B-VP B-PERSON\n", 3, "'B-PERSON'"),
])
def test_malformed(tmp_path, content, line, what):
    path = tmp_path / "bad.txt"
    path.write_text(content)
    with pytest.raises(DataError) as info:
        read_conll(path)
    assert f"bad.txt, line {line}" in str(info.value) and what in str(info.value)


def test_empty(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("-DOCSTART- -X- -X- O\n\n")
    with pytest.raises(DataError, match="empty.txt.*at least one sentence"):
        read_conll(path)


# -- mutated files (hypothesis) ------------------------------------------------------------------
CONLL_SAMPLE = b"".join(first_lines(SHARED / "conll2003" / "valid.txt", 40))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=mutations(), space=st.booleans())
def test_mutated_conll_files_read_or_name_file_and_line(tmp_path, ops, space):
    from kbert.data.conll import read_conll

    lines = CONLL_SAMPLE.splitlines(keepends=True)
    if space:  # CoNLL separates columns by spaces: mutate those
        lines = [line.replace(b" ", b"\t") for line in lines]
    data = mutate(lines, ops)
    if space:
        data = data.replace(b"\t", b" ")
    path = tmp_path / "valid.txt"
    try:
        result = read_conll(path, data=data)
    except DataError as e:
        check_named(e, path)
        return
    assert all(len(ex["words"]) == len(ex["tags"]) for ex in result.examples)
