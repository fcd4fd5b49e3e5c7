"""python -m kbert.bench tokenize: runs, prints every candidate and ends with the ratio."""

from __future__ import annotations

import re

import pytest

from conftest import SHARED, UNCASED_VOCAB, require


@pytest.mark.slow
def test_tokenize_bench_smoke(capsys):
    from kbert.commands.bench import main

    text = str(SHARED / "glue" / "SST-2" / "dev.tsv")
    assert main(["tokenize", "--text", text, "--vocab", str(UNCASED_VOCAB), "--batch-size", "32",
                 "--batches", "2", "--rounds", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert any(line.startswith("kbert tokenizer+packer") for line in lines)
    assert any(line.startswith("keras-hub WordPieceTokenizer") for line in lines)
    rates = [float(m.group(1).replace(",", "")) for line in lines
             if (m := re.search(r"\s([\d,]+) sentences/s", line))]
    assert len(rates) >= 4 and min(rates) > 0
    assert re.fullmatch(r"ratio kbert tokenizer\+packer / .+: \d+\.\d\d", lines[-1])


def test_tokenize_bench_japanese_rows(capsys):
    require("fugashi")
    from kbert.commands.bench import main

    assert main(["tokenize", "--tokenizer", "mecab-wordpiece", "--batch-size", "16", "--batches", "2",
                 "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^kbert mecab-wordpiece\s+[\d,]+ sentences/s", out, re.M)
    assert re.search(r"^NFKC \+ fugashi alone\s+[\d,]+ sentences/s", out, re.M)
    assert re.search(r"MeCab \(NFKC \+ fugashi\) share of kbert's time: \d+%", out)


def test_tokenize_bench_sentencepiece_rows(capsys):
    require("sentencepiece")
    from kbert.commands.bench import main

    assert main(["tokenize", "--tokenizer", "sentencepiece", "--batch-size", "16", "--batches", "2",
                 "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    # The ids are checked against the sentencepiece package's on every line before timing.
    assert re.search(r"^ids of kbert sentencepiece tokenizer equal sentencepiece's on 32 of 32 lines$", out, re.M)
    assert re.search(r"^kbert sentencepiece tokenizer\+packer\s+[\d,]+ sentences/s", out, re.M)
    assert re.search(r"^sentencepiece [\d.]+ encode \(batch, all CPUs\)\s+[\d,]+ sentences/s", out, re.M)
    assert re.fullmatch(r"ratio kbert sentencepiece tokenizer / sentencepiece .+: \d+\.\d\d", out.strip().splitlines()[-1])
