"""KLUE STS's F1 (kbert.tasks.classification.klue) by hand, as KLUE's baseline computes it."""

import numpy as np
import pytest

from kbert.tasks.classification import klue as m


def test_klue_sts_f1_by_hand():
    # gold binary 1 1 0 0; predicted scores cut at 3.0 -> 1 0 1 0: TP 1, FP 1, FN 1 -> F1 0.5
    assert m.klue_sts_f1([3.0, 2.99, 4.0, 0.5], [1, 1, 0, 0]) == pytest.approx(50.0)
    # gold given as 0-5 scores is cut at 3.0 the same way
    assert m.klue_sts_f1([3.0, 2.99, 4.0, 0.5], [4.2, 3.0, 2.0, 0.0]) == pytest.approx(50.0)
    result = m.klue_sts_metrics([1.0, 2.0, 3.0], [1.0, 2.0, 4.0], [0, 0, 1])
    assert result["f1"] == 100.0
    assert result["pearson"] == pytest.approx(np.corrcoef([1, 2, 3], [1, 2, 4])[0, 1])
