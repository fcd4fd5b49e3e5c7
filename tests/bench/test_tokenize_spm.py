"""python -m kbert.bench tokenize --tokenizer sentencepiece (kbert.bench.tokenize_spm): its check of
every candidate's ids against the sentencepiece package (the count and the first line that differs),
the ratio it prints from given rates, that the candidates compute what their names say, and one run
through ``kbert bench tokenize``."""

import re
import sys

import numpy as np

from conftest import SHARED, require
from fixtures.bench_cli import run_bench
from kbert.bench import tokenize_spm

MODEL = SHARED / "vocab" / "ja-sentencepiece" / "spm.model"


def _sentences(n):
    with open(SHARED / "corpus" / "ja" / "jsquad_wikipedia.txt", encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    return lines[:n]


def test_ids_are_checked_line_by_line_and_the_ratio_is_to_the_package_on_all_cpus(monkeypatch, capsys):
    def reference(batch):
        return [[len(s), ord(s[0])] for s in batch]

    def kbert_ids(batch):  # wrong on one line: "bbbb...", the second of the second batch
        return [[len(s), ord(s[0])] if not s.startswith("b") else [0] for s in batch]

    long = "b" * 50
    batches = [["aa", "c"], ["dd", long]]
    monkeypatch.setattr(tokenize_spm, "build_candidates", lambda model, seq: (
        {"built": (model, seq)}, {"kbert sentencepiece tokenizer": kbert_ids, "keras-hub 1 SentencePieceTokenizer":
                                  reference}, reference))
    rates = {"kbert sentencepiece tokenizer": 3000.0, "kbert sentencepiece tokenizer+packer": 2500.0,
             "sentencepiece 0.2 encode (batch, 1 thread)": 1000.0, "sentencepiece 0.2 encode (batch, all CPUs)": 4000.0}
    timed = []
    monkeypatch.setattr(tokenize_spm, "time_candidates", lambda candidates, b, rounds: timed.append(
        (candidates, b, rounds)) or dict(rates))
    assert tokenize_spm.run("m.model", batches, 2, 16) == rates
    assert timed == [({"built": ("m.model", 16)}, batches, 2)]
    assert capsys.readouterr().out.splitlines() == [
        f"ids of kbert sentencepiece tokenizer equal sentencepiece's on 3 of 4 lines; first: {'b' * 40!r}",
        "ids of keras-hub 1 SentencePieceTokenizer equal sentencepiece's on 4 of 4 lines",
        "ratio kbert sentencepiece tokenizer / sentencepiece 0.2 encode (batch, all CPUs): 0.75"]


def test_every_candidate_computes_the_packages_ids(monkeypatch, capsys):
    require("sentencepiece")
    import sentencepiece

    monkeypatch.setitem(sys.modules, "keras_hub", None)  # a peer (its import alone costs seconds): skipped, saying so
    candidates, ids_of, reference = tokenize_spm.build_candidates(MODEL, 16)
    assert capsys.readouterr().out == "keras-hub not importable: its SentencePieceTokenizer row skipped\n"
    assert list(ids_of) == ["kbert sentencepiece tokenizer"]
    processor = sentencepiece.SentencePieceProcessor(model_file=str(MODEL))  # the reference, built here
    batch = _sentences(8) + ["ＡＢＣ 全角 and ascii"]
    expected = processor.encode(batch)
    assert reference(batch) == expected
    flat = [i for row in expected for i in row]
    for name in ("kbert sentencepiece tokenizer", "tensorflow-text FastSentencepieceTokenizer alone"):
        assert np.asarray(candidates[name](batch)).tolist() == flat, name
    for name in [n for n in candidates if n.startswith("sentencepiece ")]:
        assert candidates[name](batch) == expected, name
    for name, ids in ids_of.items():
        assert ids(batch) == expected, name
    # the packer: [CLS] ids [SEP], cut to 16 positions, padded
    packed = {k: np.asarray(v) for k, v in candidates["kbert sentencepiece tokenizer+packer"](batch).items()}
    cls, sep = processor.piece_to_id("[CLS]"), processor.piece_to_id("[SEP]")
    for row, ids in enumerate(expected):
        tokens = [cls, *ids[:14], sep]
        assert packed["input_word_ids"][row].tolist() == tokens + [0] * (16 - len(tokens))
        assert packed["input_mask"][row].tolist() == [1] * len(tokens) + [0] * (16 - len(tokens))
        assert not packed["input_type_ids"][row].any()


def test_tokenize_bench_sentencepiece_rows(capsys):
    require("sentencepiece")
    code, out = run_bench(capsys, "tokenize", "--tokenizer", "sentencepiece", "--batch-size", "16", "--batches", "2",
                          "--rounds", "1")
    assert code == 0
    # The ids are checked against the sentencepiece package's on every line before timing.
    assert re.search(r"^ids of kbert sentencepiece tokenizer equal sentencepiece's on 32 of 32 lines$", out, re.M)
    assert re.search(r"^kbert sentencepiece tokenizer\+packer\s+[\d,]+ sentences/s", out, re.M)
    assert re.search(r"^sentencepiece [\d.]+ encode \(batch, all CPUs\)\s+[\d,]+ sentences/s", out, re.M)
    assert re.fullmatch(r"ratio kbert sentencepiece tokenizer / sentencepiece .+: \d+\.\d\d", out.strip().splitlines()[-1])
