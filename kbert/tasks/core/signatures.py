"""What every task type's serving signatures share (each family's task.py), and the task exporter
(kbert.export.task) that saves them: the ids-in input spec and the UTF-8 repair of strings in."""

from __future__ import annotations

import tensorflow as tf

IDS_SPEC = {
    name: tf.TensorSpec([None, None], tf.int32, name=name)
    for name in ("input_word_ids", "input_mask", "input_type_ids")
}


def valid_utf8(text):
    """Invalid UTF-8 bytes -> U+FFFD, so that character offsets (and the substrings cut with them)
    are defined for any input; valid text is unchanged. Offsets then refer to this text."""
    return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
