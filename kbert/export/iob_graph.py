"""IOB2 entity chunking in the graph, for token-tagging SavedModels (kbert.tasks.plugins.tagging).

The Python reference is kbert.tasks.ner_alignment.entity_spans (the tests compare both)."""

from __future__ import annotations

import tensorflow as tf


def iob_entities(tags, word_start, word_end, num_words, text):
    """IOB2 chunking (seqeval's default, lenient: an I- after O or another type starts an
    entity) over [batch, W] tag strings, in the graph; spans are character offsets."""
    parts = tf.strings.split(tags, "-", maxsplit=1).to_tensor(default_value="", shape=[None, None, 2])
    prefix, kind = parts[..., 0], parts[..., 1]
    valid = tf.sequence_mask(num_words, tf.shape(tags)[1])
    inside = valid & (tf.equal(prefix, "B") | tf.equal(prefix, "I"))
    prev_inside = tf.pad(inside[:, :-1], [[0, 0], [1, 0]])
    prev_kind = tf.pad(kind[:, :-1], [[0, 0], [1, 0]])
    starts = inside & (tf.equal(prefix, "B") | ~prev_inside | tf.not_equal(prev_kind, kind))
    # global entity index of every word inside an entity
    entity_of_word = tf.cumsum(tf.cast(tf.reshape(starts, [-1]), tf.int32)) - 1
    flat_inside = tf.reshape(inside, [-1])
    ids = tf.boolean_mask(entity_of_word, flat_inside)
    n = tf.reduce_sum(tf.cast(starts, tf.int32))
    first = tf.math.unsorted_segment_min(tf.boolean_mask(tf.reshape(word_start, [-1]), flat_inside), ids, n)
    last = tf.math.unsorted_segment_max(tf.boolean_mask(tf.reshape(word_end, [-1]), flat_inside), ids, n)
    start_rows = tf.cast(tf.where(starts)[:, 0], tf.int32)
    entity_kind = tf.boolean_mask(kind, starts)
    row_text = tf.gather(text, start_rows)
    entity_text = tf.strings.substr(row_text, first, last - first, unit="UTF8_CHAR")
    batch = tf.shape(tags)[0]
    num_entities = tf.math.bincount(start_rows, minlength=batch, maxlength=batch, dtype=tf.int32)

    def dense(values, default):
        return tf.RaggedTensor.from_value_rowids(values, start_rows, nrows=batch).to_tensor(default_value=default)

    return {"entity_type": dense(entity_kind, ""), "entity_text": dense(entity_text, ""),
            "entity_start": dense(first, -1), "entity_end": dense(last, -1), "num_entities": num_entities}
