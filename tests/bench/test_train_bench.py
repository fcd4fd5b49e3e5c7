"""python -m kbert.bench train (kbert/bench/train_bench.py): the pre-training step's table on a tiny
case (no timing assertions), and the batch it times."""

from __future__ import annotations

import re

import pytest

from fixtures.bench_cli import RATIO, TINY, run_bench


@pytest.mark.slow
def test_train_bench_table(capsys):
    code, out = run_bench(capsys, "train", *TINY, "--vs", "keras-hub", "--xla", "off", "--predictions", "3")
    assert code == 0
    assert "== pre-training step" in out
    assert re.search(r"^kbert \(no XLA\)\s+[\d,.]+", out, re.M)
    assert re.search(r"^keras-hub \S+ \(no XLA\)", out, re.M)
    assert RATIO.match(out.strip().splitlines()[-1])


def test_the_timed_batch():
    """The fixed batch the step is timed on: every token real, segments half and half, distinct sorted
    masked positions that never hit [CLS], ids inside the vocabulary."""
    import numpy as np

    from kbert import BertConfig
    from kbert.bench.common import Case
    from kbert.bench.train_bench import _batch

    config = BertConfig.preset("tiny", vocab_size=100)
    x, y = _batch(Case("tiny", 3, 16), config, 5)
    np.testing.assert_array_equal(x["input_type_ids"], [[0] * 8 + [1] * 8] * 3)
    assert (x["input_mask"] == 1).all() and ((x["input_word_ids"] >= 1) & (x["input_word_ids"] < 100)).all()
    for row in x["masked_lm_positions"]:
        assert len(set(row)) == 5 and list(row) == sorted(row) and row.min() >= 1 and row.max() < 16
    assert ((y["masked_lm_ids"] >= 0) & (y["masked_lm_ids"] < 100)).all() and y["masked_lm_ids"].shape == (3, 5)
    np.testing.assert_array_equal(y["masked_lm_weights"], np.ones((3, 5)))
    assert set(np.unique(y["next_sentence_labels"])) <= {0, 1} and y["next_sentence_labels"].shape == (3,)
