"""python -m kbert.bench tokenize --tokenizer mecab-wordpiece|mecab-character (kbert.bench.tokenize_ja):
the rates and lines it prints from timings the test controls, that its candidates compute what
their names say (MeCab's words, kbert's ids against transformers' BertJapaneseTokenizer), and one run
through ``kbert bench tokenize``."""

import re
import sys

import pytest

from conftest import SHARED, require
from fixtures.bench_cli import run_bench
from kbert.bench import tokenize_ja

JA_VOCABS = {"mecab-wordpiece": SHARED / "vocab" / "ja-mecab-wordpiece" / "vocab.txt",
             "mecab-character": SHARED / "vocab" / "ja-char" / "vocab.txt"}


def _sentences(n):
    with open(SHARED / "corpus" / "ja" / "jsquad_wikipedia.txt", encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    return lines[:n]


def test_rates_are_sentences_over_each_round_and_the_median_is_printed(monkeypatch, capsys):
    now = [0.0]
    monkeypatch.setattr(tokenize_ja.time, "perf_counter", lambda: now[0])
    # seconds per batch call: the first two calls of each (one per batch) are the untimed warm-up
    costs = {"kbert": [9.0, 9.0, 0.5, 0.5, 1.0, 1.0, 0.25, 0.25], "peer": [7.0, 7.0] + [2.0] * 6}
    calls = []

    def candidate(name):
        def run(batch):
            calls.append((name, tuple(batch)))
            now[0] += costs[name].pop(0)
        return run

    batches = [["a", "b", "c"], ["d", "e", "f", "g", "h"]]  # 8 sentences
    medians = tokenize_ja.time_candidates({"kbert": candidate("kbert"), "peer": candidate("peer")}, batches, rounds=3)
    # kbert: rounds of 1.0, 2.0, 0.5 s -> 8, 4, 16 sentences/s, median 8; the peer: 4.0 s -> 2
    assert medians == {"kbert": pytest.approx(8.0), "peer": pytest.approx(2.0)}
    assert capsys.readouterr().out.splitlines() == [
        "kbert           8 sentences/s  (rounds: 8, 4, 16)", "peer            2 sentences/s  (rounds: 2, 2, 2)"]
    # warm-up of each on every batch, then rounds that interleave the candidates
    assert [name for name, _ in calls] == ["kbert"] * 2 + ["peer"] * 2 + ["kbert", "kbert", "peer", "peer"] * 3
    assert [batch for _, batch in calls[:2]] == [tuple(b) for b in batches]


def test_run_prints_mecabs_share_and_the_ratio_to_transformers(monkeypatch, capsys):
    given = {"kbert mecab-wordpiece": 300.0, "kbert pre_tokenize (NFKC + MeCab + special tokens)": 500.0,
             "kbert graph part alone": 900.0, "NFKC + fugashi alone": 1200.0,
             "transformers 9.9 BertJapaneseTokenizer": 200.0}
    monkeypatch.setattr(tokenize_ja, "build_candidates", lambda kind, vocab: {"built": (kind, vocab)})
    timed = []
    monkeypatch.setattr(tokenize_ja, "time_candidates", lambda candidates, batches, rounds: timed.append(
        (candidates, batches, rounds)) or dict(given))
    assert tokenize_ja.run("mecab-wordpiece", "v.txt", [["x"]], 4) == given
    assert timed == [({"built": ("mecab-wordpiece", "v.txt")}, [["x"]], 4)]
    # rates: fugashi's 1,200/s against kbert's 300/s is a quarter of kbert's time
    assert capsys.readouterr().out.splitlines() == [
        "MeCab (NFKC + fugashi) share of kbert's time: 25%",
        "ratio kbert mecab-wordpiece / transformers 9.9 BertJapaneseTokenizer: 1.50"]
    del given["transformers 9.9 BertJapaneseTokenizer"]  # no transformers: no ratio line
    tokenize_ja.run("mecab-wordpiece", "v.txt", [["x"]], 1)
    assert capsys.readouterr().out.splitlines() == ["MeCab (NFKC + fugashi) share of kbert's time: 25%"]


def test_candidates_split_words_as_mecab_does_and_the_graph_part_gives_kberts_ids(monkeypatch, capsys):
    require("fugashi")
    import fugashi

    monkeypatch.setitem(sys.modules, "transformers", None)  # not importable: its row is skipped, saying so
    candidates = tokenize_ja.build_candidates("mecab-wordpiece", JA_VOCABS["mecab-wordpiece"])
    assert "transformers not importable: BertJapaneseTokenizer row skipped" in capsys.readouterr().out
    assert list(candidates) == ["kbert mecab-wordpiece", "kbert pre_tokenize (NFKC + MeCab + special tokens)",
                                "kbert graph part alone", "NFKC + fugashi alone"]
    batch = _sentences(6) + ["ＡＢＣ　全角"]  # NFKC folds the full-width letters and space
    words = candidates["kbert pre_tokenize (NFKC + MeCab + special tokens)"](batch)
    mecab = candidates["NFKC + fugashi alone"](batch)
    assert [w.split() for w in words] == mecab
    # fugashi's own tagger on kbert's default dictionary (the reference), without kbert's code
    import unicodedata

    import unidic_lite

    tagger = fugashi.Tagger(f'-d "{unidic_lite.DICDIR}" -r "{unidic_lite.DICDIR}/mecabrc"')
    assert mecab[-1] == [w.surface for w in tagger(unicodedata.normalize("NFKC", batch[-1]))]
    assert mecab[-1][0] == "ABC"
    ids = candidates["kbert mecab-wordpiece"](batch)
    assert ids.tolist() == candidates["kbert graph part alone"](batch).tolist() and len(ids) > sum(map(len, mecab)) / 2


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(JA_VOCABS))
def test_kbert_ids_equal_transformers_bert_japanese_tokenizer(kind):
    require("fugashi")
    require("transformers")
    candidates = tokenize_ja.build_candidates(kind, JA_VOCABS[kind])
    (peer,) = [name for name in candidates if name.startswith("transformers ")]
    batch = _sentences(16)
    expected = [i for row in candidates[peer](batch) for i in row]
    assert candidates[f"kbert {kind}"](batch).tolist() == expected and len(expected) > 500


@pytest.mark.slow
def test_tokenize_bench_japanese_rows(capsys):
    """Through ``kbert bench tokenize`` (its default Japanese text and vocab): the rows, and the share
    line agrees with the two rates printed above it."""
    require("fugashi")
    code, out = run_bench(capsys, "tokenize", "--tokenizer", "mecab-wordpiece", "--batch-size", "16", "--batches", "2",
                          "--rounds", "1")
    assert code == 0
    rates = {m.group(1): float(m.group(2).replace(",", ""))
             for m in re.finditer(r"^(kbert mecab-wordpiece|NFKC \+ fugashi alone)\s+([\d,]+) sentences/s", out, re.M)}
    assert len(rates) == 2, out
    share = int(re.search(r"^MeCab \(NFKC \+ fugashi\) share of kbert's time: (\d+)%$", out, re.M).group(1))
    assert share == pytest.approx(100 * rates["kbert mecab-wordpiece"] / rates["NFKC + fugashi alone"], abs=1)
