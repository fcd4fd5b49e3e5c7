"""``kbert vocab`` (kbert/commands/vocab.py) in-process on a corpus of a few lines: its flags reach the
learner (the written vocabulary and kbert.json show them), its last line says what it wrote, and a
bad command line is one line naming the flag before any work. The learner itself is checked in
tests/text/test_vocab_learning*.py."""

import json

import pytest

from fixtures.cli import command_status

TEXT = "Hello World, hello Ölwelt. The cat sat on the mat; the dog sat on the log.\n"


@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text(TEXT * 20, encoding="utf-8")
    (tmp_path / "corpus" / "b.txt").write_text("Another file, other words: birds and bees.\n" * 20, encoding="utf-8")
    return tmp_path / "corpus"


def main(argv):
    """``kbert vocab ARGV`` as the command line runs it (kbert.cli_support.run): its exit status."""
    return command_status("vocab", argv)


def _learn(capsys, *argv):
    code = main(list(map(str, argv)))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured


def test_flags_reach_the_vocabulary_and_its_spec(tmp_path, corpus, capsys):
    out = tmp_path / "cased" / "vocab.txt"
    out.parent.mkdir()
    captured = _learn(capsys, "--input", corpus / "a.txt", "--input", corpus / "b.txt", "--size", 200,
                      "--unused", 3, "--cased", "--min-count", 2, "--out", out)
    tokens = out.read_text(encoding="utf-8").splitlines()
    assert tokens[:8] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", "[unused1]", "[unused2]"]
    assert {"Hello", "World", "Ö", "birds"} <= set(tokens)  # --cased: case and accents kept; both --input read
    spec = json.loads((out.parent / "kbert.json").read_text(encoding="utf-8"))
    assert spec["tokenizer"]["type"] == "wordpiece" and spec["do_lower_case"] is False
    # the last line: the count of what was written, the type and the file
    assert captured.out.splitlines()[-1].startswith(f"wrote {len(tokens)} tokens (wordpiece) to {out} in ")
    assert "counting words" in captured.err  # progress goes to stderr, not into the line a script reads

    out = tmp_path / "uncased" / "vocab.txt"
    out.parent.mkdir()
    _learn(capsys, "--input", corpus / "*.txt", "--size", 200, "--out", out)  # a glob, the defaults
    tokens = out.read_text(encoding="utf-8").splitlines()
    assert "[unused0]" not in tokens and "hello" in tokens and "Hello" not in tokens and "o" in tokens
    assert json.loads((out.parent / "kbert.json").read_text(encoding="utf-8"))["do_lower_case"] is True


def test_a_vocabulary_short_of_size_says_why(tmp_path, corpus, capsys):
    out = tmp_path / "vocab.txt"
    low = _learn(capsys, "--input", corpus / "a.txt", "--size", 5000, "--min-count", 1, "--out", out).out
    size_low = len(out.read_text(encoding="utf-8").splitlines())
    high = _learn(capsys, "--input", corpus / "a.txt", "--size", 5000, "--min-count", 1000, "--out", out).out
    size_high = len(out.read_text(encoding="utf-8").splitlines())
    assert size_high < size_low < 0.95 * 5000  # --min-count reaches the learner
    for line, size in ((low, size_low), (high, size_high)):
        assert f"wrote {size} tokens" in line
        assert line.strip().endswith("(fewer than --size 5000: the corpus gives no more at these settings; pieces "
                                     "seen fewer than --min-count times are not learned)")
    enough = _learn(capsys, "--input", corpus / "a.txt", "--size", 40, "--out", out).out
    assert "fewer than --size" not in enough


@pytest.mark.parametrize("flags, message", [
    (["--size", "0"], "--size must be positive, got 0"),
    (["--size", "100", "--min-count", "0"], "--min-count must be >= 1, got 0"),
    (["--size", "100", "--unused", "-1"], "--unused must be >= 0, got -1"),
    (["--size", "100", "--cased", "--uncased"], "--cased and --uncased contradict each other"),
    (["--size", "100", "--tokenizer", "juman"], "argument --tokenizer: invalid choice: 'juman'"),
    (["--size", "ten"], "argument --size: invalid int value: 'ten'"),
])
def test_a_bad_flag_is_one_line_naming_it(tmp_path, corpus, capsys, flags, message):
    out = tmp_path / "vocab.txt"
    assert main(["--input", str(corpus / "a.txt"), "--out", str(out), *flags]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kbert vocab: error: ") and message in err[0], err
    assert not out.exists() and not (tmp_path / "kbert.json").exists()


def test_outputs_that_cannot_be_written_are_refused_naming_them(tmp_path, corpus, capsys):
    missing = tmp_path / "no" / "vocab.txt"
    assert main(["--input", str(corpus / "a.txt"), "--size", "100", "--out", str(missing)]) == 1
    assert f"--out {missing}: directory {missing.parent} does not exist" in capsys.readouterr().err
    # the vocabulary written over one of the files it learns from: refused, the file untouched
    assert main(["--input", str(corpus / "*.txt"), "--size", "100", "--out", str(corpus / "b.txt")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"kbert vocab: error: {corpus / 'b.txt'} is an input of this command: writing it would destroy "
                   "that input; choose another output"]
    assert (corpus / "b.txt").read_text(encoding="utf-8").startswith("Another file")
    assert not (corpus / "kbert.json").exists()
