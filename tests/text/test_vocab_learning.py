"""Vocabulary learning (``python -m kbert.vocab``): the words counted, the library's learner, the CLI."""

from __future__ import annotations

import pytest

from conftest import SHARED
from kbert.text import BertTokenizer, load_vocab
from kbert.text.vocab_learning import count_words, learn_from_counts, learn_vocab, reserved_tokens, split_words
from fixtures.cli import command_status
from fixtures.google_bert_oracle import GoogleBertTokenizer, reference_lines, to_lists


def vocab_main(argv):
    """``kbert vocab ARGV`` as the command line runs it (kbert.cli_support.run): its exit status."""
    return command_status("vocab", argv)


CORPUS = SHARED / "corpus" / "en"


def test_split_words_are_the_tokenizers_words():
    """The words counted for learning are exactly the original BasicTokenizer's words."""
    lines = reference_lines()
    texts = [line["text"] for line in lines[::3]]
    oracle = GoogleBertTokenizer([])
    words = [[w.decode("utf-8") for w in row] for row in to_lists(split_words(texts))]
    assert words == [oracle.basic_tokenize(t) for t in texts]
    cased = GoogleBertTokenizer([], do_lower_case=False)
    words = [[w.decode("utf-8") for w in row] for row in to_lists(split_words(texts[:200], lower_case=False))]
    assert words == [cased.basic_tokenize(t) for t in texts[:200]]


@pytest.mark.slow
def test_learned_vocab_round_trips_on_held_out_text(tmp_path, capsys):
    out = tmp_path / "vocab.txt"
    code = vocab_main(["--input", str(CORPUS / "northangerabbey.txt"), "--size", "3000", "--unused", "2",
                       "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "counting words" in captured.err and "learned" in captured.err
    assert f"to {out}" in captured.out
    vocab = load_vocab(out)  # also checks: no empty or duplicate tokens
    assert vocab[:7] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", "[unused1]"]
    assert 500 < len(vocab) <= 3000
    assert {"the", "##s", "catherine"} <= set(vocab)
    tokenizer = BertTokenizer(out)
    with open(CORPUS / "persuasion.txt", encoding="utf-8") as f:
        held_out = [line for line in f.read().split("\n")[:3000] if line.strip()]
    ids = tokenizer.tokenize_flat(held_out).flat_values.numpy()
    unk_rate = (ids == tokenizer.special_token_ids["unknown_id"]).mean()
    assert len(ids) > 30_000 and unk_rate < 0.01, unk_rate


def test_progress_driver_is_the_library_learner(tmp_path):
    """learn_from_counts only adds progress lines to tensorflow-text's learn()."""
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    with open(CORPUS / "nltk_gutenberg" / "blake-poems.txt", encoding="utf-8") as f:
        (tmp_path / "blake.txt").write_text(f.read(), encoding="utf-8")
    counts = count_words([str(tmp_path / "blake.txt")])
    ours = learn_from_counts(counts, 1000, reserved_tokens(1), min_count=2)
    assert ours == learner.learn(counts, 1000, reserved_tokens(1), lower_thresh=2)
    assert 900 <= len(ours) <= 1000


@pytest.mark.parametrize("min_count", [2, 180])
def test_a_corpus_too_small_for_the_size_gets_the_librarys_vocabulary_in_two_passes(monkeypatch, tmp_path, min_count):
    """Asked for more than the corpus gives at any threshold, the library's search walks down its whole
    range; learn_from_counts learns at the lowest threshold and at the search's last one only, and
    returns the same vocabulary. The walk ends at min_count (2) or, for some ranges, one below it (180:
    Blake's most frequent word is seen 685 times, the top of the range)."""
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    with open(CORPUS / "nltk_gutenberg" / "blake-poems.txt", encoding="utf-8") as f:
        (tmp_path / "blake.txt").write_text(f.read(), encoding="utf-8")
    counts = count_words([str(tmp_path / "blake.txt")])
    expected = learner.learn(counts, 20_000, reserved_tokens(1), lower_thresh=min_count)
    thresholds = []
    library_pass = learner.learn_with_thresh
    monkeypatch.setattr(learner, "learn_with_thresh",
                        lambda words, thresh, params: thresholds.append(thresh) or library_pass(words, thresh, params))
    ours = learn_from_counts(counts, 20_000, reserved_tokens(1), min_count=min_count)
    assert ours == expected and len(ours) < 0.95 * 20_000
    assert thresholds[0] == min_count and len(thresholds) == 1 + (min_count == 180), thresholds


def test_cased_learning_keeps_case(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Hello World, hello Ölwelt.\n" * 30, encoding="utf-8")
    cased = learn_vocab([str(corpus)], 100, lower_case=False, log=None)
    uncased = learn_vocab([str(corpus)], 100, lower_case=True, log=None)
    assert {"Hello", "World", "Ö"} <= set(cased)
    assert "hello" in uncased and "Hello" not in uncased and "Ö" not in uncased and "o" in uncased


def test_cli_errors_before_any_work(tmp_path, capsys):
    out = str(tmp_path / "vocab.txt")
    assert vocab_main(["--input", str(tmp_path / "nothing" / "*.txt"), "--size", "100", "--out", out]) == 1
    assert "matches no files" in capsys.readouterr().err
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    assert vocab_main(["--input", str(tmp_path / "*.txt"), "--size", "100", "--out", out]) == 1
    assert "corpus is empty" in capsys.readouterr().err
    (tmp_path / "blank.txt").write_text(" \n\x00\n\u3000\n", encoding="utf-8")
    assert vocab_main(["--input", str(tmp_path / "*.txt"), "--size", "100", "--out", out]) == 1
    assert "no words" in capsys.readouterr().err
    assert vocab_main(["--input", str(tmp_path / "*.txt"), "--size", "100", "--out",
                       str(tmp_path / "no" / "v.txt")]) == 1
    assert not (tmp_path / "vocab.txt").exists()
