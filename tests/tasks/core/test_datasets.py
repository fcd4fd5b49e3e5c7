"""Length bucketing: every example once per epoch, batches within one bucket, known step count."""

import numpy as np
import tensorflow as tf

from kbert.tasks.core.datasets import bucket_boundaries, make_dataset, num_batches, token_lengths
from kbert.text import BertPreprocessor
from conftest import SHARED, UNCASED_VOCAB


def test_bucketed_batches_cover_every_example_once_and_stay_in_their_bucket():
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 60, size=203)
    ids = np.arange(len(lengths))
    boundaries = [8, 16, 32]
    ds = make_dataset(ids, lengths, batch_size=16, lengths=lengths, boundaries=boundaries, shuffle=True, seed=3)
    assert ds.cardinality().numpy() == num_batches(lengths, 16, boundaries)
    for _ in range(2):  # two epochs, reshuffled
        seen, steps = [], 0
        for x, y in ds:
            x, y = x.numpy(), y.numpy()
            np.testing.assert_array_equal(lengths[x], y)  # x and y stay paired
            buckets = np.searchsorted(boundaries, y, side="right")
            assert len(set(buckets)) == 1, y  # one bucket per batch
            assert len(x) <= 16
            seen.extend(x)
            steps += 1
        assert sorted(seen) == list(range(len(lengths)))
        assert steps == ds.cardinality().numpy()


def test_plain_batches_without_boundaries():
    ds = make_dataset(np.arange(10), batch_size=4)
    assert [b.numpy().tolist() for b in ds] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert ds.cardinality().numpy() == 3


def test_token_lengths_are_the_packed_lengths():
    lines = [line.split("\t")[0] for line in
             (SHARED / "glue" / "SST-2" / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:41]]
    pre = BertPreprocessor(str(UNCASED_VOCAB), seq_length=32)
    lengths = token_lengths(pre.tokenizer, [np.array(lines, dtype=object)], 32, batch_size=7)
    expected = pre(tf.constant(lines))["input_mask"].numpy().sum(axis=1)
    np.testing.assert_array_equal(lengths, expected)
    assert lengths.max() == 32  # some dev sentences are cut
    pair = token_lengths(pre.tokenizer, [np.array(lines, dtype=object)] * 2, 32)
    np.testing.assert_array_equal(pair, pre([tf.constant(lines)] * 2)["input_mask"].numpy().sum(axis=1))
    assert bucket_boundaries(32) == [8, 12, 16, 20, 24, 32]
