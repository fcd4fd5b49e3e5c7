"""kbert.tasks.core.batching on hand-made packed batches: trimming to the longest row, prediction in
order of length and back, and the progress callbacks' row counts."""

import numpy as np
import tensorflow as tf

from kbert.tasks.core.batching import (in_input_order, length_order, length_sorted_batches, progress_callbacks,
                                       trim_to_longest)


def _packed(lengths, seq=8):
    mask = np.array([[1] * n + [0] * (seq - n) for n in lengths], dtype=np.int32)
    ids = np.where(mask == 1, np.arange(1, seq + 1), 0).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(mask)}


def test_trim_to_longest_cuts_every_input_and_companion():
    inputs = _packed([3, 5, 1])
    labels = np.arange(24).reshape(3, 8)
    trimmed, cut = trim_to_longest({k: tf.constant(v) for k, v in inputs.items()}, tf.constant(labels))
    for name, value in inputs.items():
        np.testing.assert_array_equal(trimmed[name].numpy(), value[:, :5])
    np.testing.assert_array_equal(cut.numpy(), labels[:, :5])
    # an all-padding batch keeps one position; without companions a dict comes back
    empty = trim_to_longest({k: tf.constant(v) for k, v in _packed([0, 0]).items()})
    assert isinstance(empty, dict) and empty["input_mask"].shape == (2, 1)


def test_length_order_is_stable_and_in_input_order_undoes_it():
    lengths = [5, 2, 5, 1, 2]
    order = length_order(lengths)
    assert order.tolist() == sorted(range(5), key=lambda i: (lengths[i], i))
    values = np.array([lengths[i] * 10 for i in order])  # computed in length order
    assert in_input_order(values, order).tolist() == [50, 20, 50, 10, 20]


def test_length_sorted_batches_cover_every_row_once_shortest_first():
    lengths = [7, 1, 4, 4, 0, 2, 8]
    inputs = _packed(lengths)
    batches = list(length_sorted_batches(inputs, batch_size=3))
    rows = np.concatenate([r for r, _, _ in batches])
    assert sorted(rows.tolist()) == list(range(7))
    assert [lengths[i] for i in rows] == sorted(lengths)
    for r, width, batch in batches:
        assert width == max(1, max(lengths[i] for i in r))
        np.testing.assert_array_equal(batch["input_word_ids"].numpy(), inputs["input_word_ids"][r, :width])
    assert [w for _, w, _ in length_sorted_batches(inputs, 3, trim=False)] == [8, 8, 8]


def test_progress_callbacks_report_the_rows_of_each_batch():
    done = []
    assert progress_callbacks(None, 10, 4) is None
    (callback,) = progress_callbacks(done.append, 10, 4)
    for batch in range(3):
        callback.on_predict_batch_end(batch)
    assert done == [4, 4, 2] and sum(done) == 10
