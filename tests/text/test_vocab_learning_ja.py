"""python -m kbert.vocab for the Japanese tokenizer types, the CJK alphabet size and the lower-casing hazard."""

import collections
import json
import re
import unicodedata

import pytest

from conftest import SHARED, require
from kbert.text import vocab_learning_ja as ja
from kbert.text.registry import load_tokenizer
from kbert.text.vocab import load_vocab
from fixtures.cli import command_status
from pipelines.cjk_text import prepare


def vocab_main(argv):
    """``kbert vocab ARGV`` as the command line runs it (kbert.cli_support.run): its exit status."""
    return command_status("vocab", argv)


SOSEKI = SHARED / "corpus" / "ja" / "wagahaiwa_nekodearu.txt"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The first 400 lines of the novel, markup stripped (a few seconds to learn from)."""
    path = tmp_path_factory.mktemp("ja") / "soseki.txt"
    lines = SOSEKI.read_text(encoding="utf-8").split("\n")[:400]
    path.write_text(prepare("\n".join(lines), "ja", aozora=True), encoding="utf-8")
    return path


def test_sentencepiece_vocab_has_the_shared_models_special_layout(corpus, tmp_path, capsys):
    spm = require("sentencepiece")
    out = tmp_path / "spm.model"
    assert vocab_main(["--tokenizer", "sentencepiece", "--input", str(corpus), "--size", "3000",
                       "--out", str(out)]) == 0
    ours = spm.SentencePieceProcessor(model_file=str(out))
    shared = spm.SentencePieceProcessor(model_file=str(SHARED / "vocab" / "ja-sentencepiece" / "spm.model"))
    for p in (ours, shared):
        assert [p.id_to_piece(i) for i in range(5)] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        assert (p.pad_id(), p.unk_id(), p.bos_id(), p.eos_id()) == (0, 1, -1, -1)
        assert [p.is_control(i) for i in (2, 3, 4)] == [True] * 3
    assert ours.get_piece_size() == 3000
    # The directory records the spec, and kbert's tokenizer built from it gives the package's ids.
    assert json.loads((tmp_path / "kbert.json").read_text())["tokenizer"] == {
        "type": "sentencepiece", "lower_case": False, "vocab_file": "spm.model"}
    tokenizer = load_tokenizer(tmp_path)
    lines = corpus.read_text(encoding="utf-8").split("\n")[:50]
    assert tokenizer.tokenize_flat(lines).to_list() == [ours.encode(line) for line in lines]


def test_mecab_character_vocab_is_the_characters_by_frequency(corpus, tmp_path):
    require("fugashi")
    out = tmp_path / "vocab.txt"
    assert vocab_main(["--tokenizer", "mecab-character", "--input", str(corpus), "--size", "100000",
                       "--out", str(out)]) == 0
    text = corpus.read_text(encoding="utf-8")
    counts = collections.Counter(c for c in unicodedata.normalize("NFKC", text) if not c.isspace())
    expected = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(counts, key=lambda c: (-counts[c], c))
    assert load_vocab(out) == expected
    spec = json.loads((tmp_path / "kbert.json").read_text())["tokenizer"]
    assert spec == {"type": "mecab-character", "lower_case": False, "vocab_file": "vocab.txt",
                    "mecab_dic": "unidic_lite"}
    small = tmp_path / "small"
    small.mkdir()
    assert vocab_main(["--tokenizer", "mecab-character", "--input", str(corpus), "--size", "50",
                       "--out", str(small / "vocab.txt")]) == 0
    assert load_vocab(small / "vocab.txt") == expected[:50]


def test_mecab_wordpiece_vocab_learns_whole_mecab_words(corpus, tmp_path):
    require("fugashi")
    out = tmp_path / "vocab.txt"
    assert vocab_main(["--tokenizer", "mecab-wordpiece", "--input", str(corpus), "--size", "3000",
                       "--out", str(out)]) == 0
    vocab = load_vocab(out)
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and 2500 <= len(vocab) <= 3000
    split = ja.mecab_word_splitter()
    words = collections.Counter(w for line in corpus.read_text(encoding="utf-8").split("\n") for w in split(line))
    frequent = [w for w, n in words.most_common(30) if len(w) > 1]
    assert frequent and all(w in vocab for w in frequent)  # no lower-casing, no splitting of kanji
    # No piece crosses a MeCab word boundary: every multi-character token is inside some word.
    text = "".join(words)
    assert all(t.removeprefix("##") in text for t in vocab[5:])


def test_alphabet_default_suits_cjk_and_keeps_english_at_1000():
    text = prepare(SOSEKI.read_text(encoding="utf-8"), "ja", aozora=True)
    chars = collections.Counter(c for c in text if not c.isspace())
    assert len(chars) > 3000
    size = ja.default_alphabet_size(chars, 32000)
    kept = sum(n for _, n in chars.most_common(size))
    assert 1000 < size < len(chars) and kept >= 0.9995 * sum(chars.values())
    assert ja.default_alphabet_size(chars, 8000) == 2000  # at most a quarter of the vocabulary
    english = collections.Counter((SHARED / "corpus" / "en" / "persuasion.txt").read_text(encoding="utf-8"))
    assert ja.default_alphabet_size(english, 30000) == 1000


@pytest.mark.slow
def test_wordpiece_keeps_japanese_cased_and_warns_when_forced(corpus, tmp_path, capsys):
    small = tmp_path / "small.txt"
    small.write_text("\n".join(corpus.read_text(encoding="utf-8").split("\n")[:40]), encoding="utf-8")
    assert vocab_main(["--input", str(small), "--size", "1500", "--out", str(tmp_path / "vocab.txt"),
                       "--min-count", "2"]) == 0
    err = capsys.readouterr().err
    assert "not lower-casing" in err
    assert json.loads((tmp_path / "kbert.json").read_text())["tokenizer"]["lower_case"] is False
    assert "が" in load_vocab(tmp_path / "vocab.txt")  # a voiced kana survives
    forced = tmp_path / "forced"
    forced.mkdir()
    assert vocab_main(["--input", str(small), "--size", "1500", "--out", str(forced / "vocab.txt"),
                       "--min-count", "2", "--uncased"]) == 0
    err = capsys.readouterr().err
    assert "voicing marks" in err
    pairs = re.findall(r"([\u3040-\u30ff]) -> ([\u3040-\u30ff])", err)
    assert pairs and all(unicodedata.normalize("NFD", v)[0] == u != v for v, u in pairs)  # e.g. が -> か
    assert "が" not in load_vocab(forced / "vocab.txt")


def test_bad_requests_are_clear_errors(corpus, tmp_path, capsys):
    assert vocab_main(["--tokenizer", "sentencepiece", "--input", str(corpus), "--size", "100",
                       "--out", str(tmp_path / "vocab.txt")]) == 1
    assert "must end in .model" in capsys.readouterr().err
    assert vocab_main(["--tokenizer", "mecab-wordpiece", "--uncased", "--input", str(corpus), "--size", "100",
                       "--out", str(tmp_path / "vocab.txt")]) == 1
    assert "never lower-cases" in capsys.readouterr().err
    assert vocab_main(["--tokenizer", "sentencepiece", "--input", str(tmp_path / "none*.txt"), "--size", "100",
                       "--out", str(tmp_path / "spm.model")]) == 1
    assert "matches no files" in capsys.readouterr().err
