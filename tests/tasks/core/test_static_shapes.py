"""kbert.tasks.core.static_shapes: a few fixed batch widths, and padding that changes no real output."""

import numpy as np
import pytest

from kbert import BertConfig, BertEncoder
from kbert.tasks.core.static_shapes import static_width, to_static_width


def test_widths_are_few_and_hold_the_longest_row():
    widths = {static_width(n, 128) for n in range(1, 129)}
    assert widths == {32, 64, 96, 128}
    assert static_width(33, 128) == 64 and static_width(100, 384) == 128 and static_width(500, 500) == 500
    assert static_width(460, 500) == 500  # no listed width between 448 and 500: the full length
    with pytest.raises(ValueError, match="longer than seq_length 128"):
        static_width(129, 128)


def test_padding_to_a_static_width_changes_no_real_output():
    lengths = np.array([5, 11, 3])
    mask = (np.arange(11)[None, :] < lengths[:, None]).astype("int32")
    rng = np.random.default_rng(0)
    batch = {"input_word_ids": (rng.integers(1, 100, (3, 11)) * mask).astype("int32"), "input_mask": mask,
             "input_type_ids": np.zeros((3, 11), "int32"), "labels": np.full((3, 11), 2, "int32"),
             "next_sentence_labels": np.array([0, 1, 0])}
    padded = to_static_width(batch, 64, widths=(16, 32), pad_values={"labels": -100})
    assert padded["input_word_ids"].shape == (3, 16) and padded["next_sentence_labels"].shape == (3,)
    assert (padded["labels"][:, 11:] == -100).all() and (padded["input_mask"][:, 11:] == 0).all()
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100, max_position_embeddings=64))
    names = ("input_word_ids", "input_mask", "input_type_ids")
    short = encoder({k: batch[k] for k in names})["sequence_output"].numpy()
    long = encoder({k: padded[k] for k in names})["sequence_output"].numpy()
    for row, n in enumerate(lengths):
        np.testing.assert_allclose(long[row, :n], short[row, :n], atol=1e-5)


def test_cutting_keeps_every_real_position():
    mask = np.zeros((2, 128), "int32")
    mask[:, :20] = 1
    out = to_static_width({"input_mask": mask, "input_word_ids": mask * 7}, 128)
    assert out["input_mask"].shape == (2, 32) and out["input_mask"].sum() == 40
    mask[1, 100] = 1
    with pytest.raises(ValueError, match="real positions after padding"):
        to_static_width({"input_mask": mask}, 128)
