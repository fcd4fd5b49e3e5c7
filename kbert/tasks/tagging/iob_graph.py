"""IOB2 entity chunking in the graph, for token-tagging SavedModels (kbert.tasks.tagging.task).

The Python reference is kbert.tasks.tagging.ner_alignment.entity_spans (the tests compare both).
``iob_entities`` answers in character offsets into the raw text (raw-text exports);
``iob_word_entities`` in word indices (words-in exports of the ``mecab-*`` types, whose graph never
sees the raw text). Both chunk with ``_chunks``."""

from __future__ import annotations

import tensorflow as tf


def _chunks(tags, valid) -> dict:
    """IOB2 chunking (seqeval's default, lenient: an I- after O or another type starts an
    entity) over [batch, W] tag strings where ``valid``: per entity (in row, then word order) its
    row, first and last word index (inclusive) and type."""
    parts = tf.strings.split(tags, "-", maxsplit=1).to_tensor(default_value="", shape=[None, None, 2])
    prefix, kind = parts[..., 0], parts[..., 1]
    inside = valid & (tf.equal(prefix, "B") | tf.equal(prefix, "I"))
    prev_inside = tf.pad(inside[:, :-1], [[0, 0], [1, 0]])
    prev_kind = tf.pad(kind[:, :-1], [[0, 0], [1, 0]])
    starts = inside & (tf.equal(prefix, "B") | ~prev_inside | tf.not_equal(prev_kind, kind))
    # global entity index of every word inside an entity
    entity_of_word = tf.cumsum(tf.cast(tf.reshape(starts, [-1]), tf.int32)) - 1
    flat_inside = tf.reshape(inside, [-1])
    ids = tf.boolean_mask(entity_of_word, flat_inside)
    n = tf.reduce_sum(tf.cast(starts, tf.int32))
    position = tf.broadcast_to(tf.range(tf.shape(tags)[1])[tf.newaxis], tf.shape(tags))  # word index in its row
    inside_position = tf.boolean_mask(tf.reshape(position, [-1]), flat_inside)
    return {"rows": tf.cast(tf.where(starts)[:, 0], tf.int32), "type": tf.boolean_mask(kind, starts),
            "first": tf.math.unsorted_segment_min(inside_position, ids, n),
            "last": tf.math.unsorted_segment_max(inside_position, ids, n), "batch": tf.shape(tags)[0]}


def _dense(chunks, values, default):
    return tf.RaggedTensor.from_value_rowids(values, chunks["rows"], nrows=chunks["batch"]).to_tensor(
        default_value=default)


def _at(per_word, chunks, key):
    """``per_word`` [batch, W] at each entity's row and ``key`` ("first"/"last") word."""
    return tf.gather_nd(per_word, tf.stack([chunks["rows"], chunks[key]], axis=1))


def _num_entities(chunks):
    return tf.math.bincount(chunks["rows"], minlength=chunks["batch"], maxlength=chunks["batch"], dtype=tf.int32)


def iob_entities(tags, word_start, word_end, num_words, text):
    """Entities of [batch, W] tag strings (the first ``num_words`` of each row), as character
    spans: ``word_start``/``word_end`` [batch, W] are each word's span in ``text`` [batch]."""
    c = _chunks(tags, tf.sequence_mask(num_words, tf.shape(tags)[1]))
    first, last = _at(word_start, c, "first"), _at(word_end, c, "last")
    entity_text = tf.strings.substr(tf.gather(text, c["rows"]), first, last - first, unit="UTF8_CHAR")
    return {"entity_type": _dense(c, c["type"], ""), "entity_text": _dense(c, entity_text, ""),
            "entity_start": _dense(c, first, -1), "entity_end": _dense(c, last, -1),
            "num_entities": _num_entities(c)}


def iob_word_entities(tags, words):
    """Entities of [batch, W] tag strings of ``words`` [batch, W] (a "" word is padding and never
    in an entity), as word spans: ``entity_start_word``, ``entity_end_word`` (inclusive indices
    into the row's words) and ``entity_text``, the entity's words joined with "" (Japanese writes
    no spaces between words)."""
    c = _chunks(tags, tf.not_equal(words, ""))
    lengths = tf.strings.length(words, unit="UTF8_CHAR")
    word_start = tf.cumsum(lengths, axis=1, exclusive=True)  # in the row's words joined with ""
    first, last = _at(word_start, c, "first"), _at(word_start + lengths, c, "last")
    joined = tf.strings.reduce_join(tf.gather(words, c["rows"]), axis=1)
    entity_text = tf.strings.substr(joined, first, last - first, unit="UTF8_CHAR")
    return {"entity_type": _dense(c, c["type"], ""), "entity_text": _dense(c, entity_text, ""),
            "entity_start_word": _dense(c, c["first"], -1), "entity_end_word": _dense(c, c["last"], -1),
            "num_entities": _num_entities(c)}
