"""Tags per character (KLUE-NER) from a TokenTagger that tags word pieces.

A character-tagged sentence is tokenized whole, with the tokenizer's character offsets
(``tokenize_with_offsets``, which maps every piece back to the original characters: lower-casing,
accent stripping and Hangul decomposed into jamo included). Training: each piece is labelled with
the tag of the character it starts at; a piece that starts inside the same character as the piece
before it (two jamo pieces of one syllable) is out of the loss (IGNORE_INDEX), so that a B- tag is
learnt once. Prediction: the first character of a piece gets the piece's tag, the piece's other
characters its I- tag (O stays O), and characters no piece covers (spaces; text cut by
truncation) get O. The result has exactly one tag per character of the sentence, spaces included.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from kbert.tasks.core.batching import length_sorted_batches
from kbert.tasks.tagging.ner_alignment import IGNORE_INDEX

OUTSIDE = "O"


def piece_offsets(tokenizer, texts) -> list:
    """Per text, (piece ids, starts, ends) as lists, character offsets into the text."""
    if not texts:
        return []
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(list(texts), tf.string), unit="UTF8_CHAR")
    return list(zip(*(r.merge_dims(1, 2).to_list() for r in (ids, starts, ends))))


def char_features(model, texts, tags=None, label_names=None):
    """(inputs, labels, spans): packed ids [n, seq_length] ([CLS] pieces [SEP], padding), labels
    [n, seq_length] (None without ``tags``) and per text the (start, end) character spans of its
    kept pieces."""
    special = model.tokenizer.special_token_ids
    cls, sep, pad = special["start_of_sequence_id"], special["end_of_segment_id"], special["padding_id"]
    seq = model.seq_length
    index = {name: i for i, name in enumerate(label_names or ())}
    n = len(texts)
    word_ids = np.full((n, seq), pad, dtype=np.int32)
    mask = np.zeros((n, seq), dtype=np.int32)
    labels = None if tags is None else np.full((n, seq), IGNORE_INDEX, dtype=np.int32)
    spans = []
    for row, (ids, starts, ends) in enumerate(piece_offsets(model.tokenizer, texts)):
        ids, starts, ends = ids[:seq - 2], starts[:seq - 2], ends[:seq - 2]
        k = len(ids)
        word_ids[row, :k + 2] = [cls, *ids, sep]
        mask[row, :k + 2] = 1
        spans.append(list(zip(starts, ends)))
        if labels is not None:
            previous = -1
            for j, start in enumerate(starts):
                if start != previous:
                    labels[row, j + 1] = index[tags[row][start]]
                previous = start
    inputs = {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": np.zeros_like(word_ids)}
    return inputs, labels, spans


def to_char_tags(piece_tags, spans, length: int) -> list:
    """One tag per character of a text of ``length`` characters from its pieces' tags and spans."""
    tags = [OUTSIDE] * length
    done = [False] * length
    for tag, (start, end) in zip(piece_tags, spans):
        if start < 0 or start >= length or done[start]:
            continue
        inside = "I-" + tag[2:] if tag[:2] in ("B-", "I-") else tag
        tags[start] = tag
        done[start] = True
        for i in range(start + 1, min(end, length)):
            if not done[i]:
                tags[i], done[i] = inside, True
    return tags


def predict_char_tags(model, texts, batch_size: int = 64, progress=None) -> list:
    """Per text, its tags (model.label_names), one per character."""
    texts = [t.decode("utf-8") if isinstance(t, bytes) else str(t) for t in texts]
    inputs, _, spans = char_features(model, texts)
    names = model.label_names
    result = [None] * len(texts)
    for rows, width, batch in length_sorted_batches(inputs, batch_size):
        predicted = np.asarray(model.predict_ids({k: v.numpy() for k, v in batch.items()})).argmax(axis=-1)
        for r, i in enumerate(rows):
            piece_tags = [names[t] for t in predicted[r, 1:1 + len(spans[i])]]
            result[i] = to_char_tags(piece_tags, spans[i], len(texts[i]))
        if progress is not None:
            progress(len(rows))
    return result


def char_tag_signatures(module, serve_ids) -> tuple:
    """(serve, serve_ids) for a task SavedModel of a per-character tagger (klue/ner): ``serving_default``
    takes sentences (``text``) and returns ``tags`` and ``tag_ids`` [batch, longest sentence's characters]
    ("" and -1 past a sentence's end) and ``num_chars``, by the rule of ``to_char_tags``, in the graph:
    the same tokenizer offsets as ``char_features``, each character owned by the first piece that
    covers it. ``serve_ids`` (the tagging type's: a tag per piece) is returned with it."""
    from kbert.tasks.core.signatures import valid_utf8

    model = module.model
    names = list(model.label_names)
    inside = [names.index("I-" + n[2:]) if n[:2] in ("B-", "I-") and "I-" + n[2:] in names else i
              for i, n in enumerate(names)]
    outside = names.index(OUTSIDE) if OUTSIDE in names else model.fill_label
    special = model.tokenizer.special_token_ids
    cls, sep, pad = special["start_of_sequence_id"], special["end_of_segment_id"], special["padding_id"]
    seq = model.seq_length
    beyond = tf.int32.max  # pads the piece starts, so that searching them never lands past a row's pieces

    @tf.function(input_signature=[{"text": tf.TensorSpec([None], tf.string, name="text")}])
    def serve(inputs):
        text = valid_utf8(inputs["text"])
        ids, starts, ends = model.tokenizer.tokenize_with_offsets(text, unit="UTF8_CHAR")
        ids, starts, ends = (tf.cast(r.merge_dims(1, 2)[:, :seq - 2], tf.int32) for r in (ids, starts, ends))
        n = tf.shape(text)[0]
        zero_column = tf.RaggedTensor.from_tensor(tf.zeros([n, 1], tf.int32))
        row = tf.concat([zero_column + cls, ids, zero_column + sep], axis=1)
        word_ids = row.to_tensor(default_value=pad, shape=[None, seq])
        packed = {"input_word_ids": word_ids, "input_mask": tf.ones_like(row).to_tensor(0, shape=[None, seq]),
                  "input_type_ids": tf.zeros_like(word_ids)}
        piece_tags = tf.argmax(model(packed, training=False), axis=-1, output_type=tf.int32)[:, 1:seq - 1]
        starts_d = starts.to_tensor(default_value=beyond, shape=[None, seq - 2])
        ends_d = ends.to_tensor(default_value=0, shape=[None, seq - 2])
        num_chars = tf.strings.length(text, unit="UTF8_CHAR")
        width = tf.reduce_max(tf.concat([num_chars, [0]], 0))
        chars = tf.broadcast_to(tf.range(width)[None], [n, width])
        last = tf.searchsorted(starts_d, chars, side="right") - 1  # the last piece starting at or before
        start = tf.gather(starts_d, tf.maximum(last, 0), batch_dims=1)
        owner = tf.searchsorted(starts_d, start, side="left")  # the first of the pieces with that start
        owner = tf.minimum(owner, seq - 3)
        owner_start = tf.gather(starts_d, owner, batch_dims=1)
        owner_end = tf.gather(ends_d, owner, batch_dims=1)
        tag = tf.gather(piece_tags, owner, batch_dims=1)
        tag = tf.where(chars == owner_start, tag, tf.gather(tf.constant(inside, tf.int32), tag))
        covered = (last >= 0) & (chars < owner_end)
        valid = tf.sequence_mask(num_chars, width)
        tag_ids = tf.where(valid, tf.where(covered, tag, outside), -1)
        tags = tf.where(valid, tf.gather(tf.constant(names), tf.maximum(tag_ids, 0)), "")
        return {"tags": tags, "tag_ids": tag_ids, "num_chars": num_chars}

    return serve, serve_ids
