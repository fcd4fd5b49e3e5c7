"""kbert.paper.scales: the paper's sizes at each scale stay distinct and well formed."""

import pytest

from kbert.errors import OptionsError
from kbert.paper.scales import SCALES, get_scale
from kbert.paper.tables import TABLES


def test_scales_keep_the_papers_sizes_apart():
    sizes = [row.size for row in TABLES["table6"].rows]
    assert [SCALES["paper"].size(s) for s in sizes] == sizes
    for scale in SCALES.values():  # six distinct models at every scale
        assert len(set(map(scale.size, sizes))) == 6
        for layers, hidden, heads in map(scale.size, sizes):
            assert layers >= 1 and hidden % heads == 0


def test_the_paper_scale_is_the_papers_budget_and_a_wrong_name_says_the_choices():
    paper = get_scale("paper")
    assert (paper.steps, paper.batch_size, paper.learning_rates) == (1_000_000, 256, (5e-5, 4e-5, 3e-5, 2e-5))
    assert paper.size((24, 1024, 16)) == (24, 1024, 16)
    assert SCALES["micro"].size((12, 768, 12)) == (4, 48, 12)
    with pytest.raises(OptionsError, match="micro, compact, paper"):
        get_scale("huge")
