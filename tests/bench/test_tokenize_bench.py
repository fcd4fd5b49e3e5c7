"""python -m kbert.bench tokenize: runs, prints every candidate and ends with the ratio (the Japanese
and SentencePiece rows: test_tokenize_ja.py, test_tokenize_spm.py)."""

from __future__ import annotations

import re

import pytest

from conftest import SHARED, UNCASED_VOCAB


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
