"""tf.data input pipeline for pre-training: TFRecords of raw text -> masked, packed batches.

Records (written by ``pipelines/pretraining_data.py``): ``text_a`` and ``text_b`` (bytes, raw text)
and ``next_sentence_label`` (int64; 0 = IsNext, 1 = NotNext). Tokenization, packing and masking
all happen here, in the graph, after batching (batch-then-map: one op call per batch instead of
per example, about 10x the throughput on this machine).

Damaged files are read with ``kbert.data.records`` (shared with the task-data reader): a
truncated or corrupted record raises ``CorruptRecordError`` naming the file, record and byte
offset (inside ``explain_data_errors()``); with ``skip_bad_records`` the rest of that file is
skipped and counted in a ``BadRecordCounter``.
"""

from __future__ import annotations

import tensorflow as tf

from kbert.data import records
from kbert.data.records import (  # noqa: F401  (re-exported: kbert.pretrain and user code import them here)
    RECORD_OVERHEAD,
    BadRecordCounter,
    CorruptRecordError,
    checked_records,
    explain_data_errors,
    read_files,
)
from kbert.errors import DataError
from kbert.text.pre_tokenize import pre_tokenize_tensor

FEATURES = {
    "text_a": tf.io.FixedLenFeature([], tf.string),
    "text_b": tf.io.FixedLenFeature([], tf.string),
    "next_sentence_label": tf.io.FixedLenFeature([], tf.int64),
}


def list_files_and_sizes(file_pattern) -> tuple[list[str], list[int]]:
    """The pre-training files matching ``file_pattern`` and their sizes (see kbert.data.records)."""
    return records.list_files_and_sizes(file_pattern, "pre-training")


def list_files(file_pattern) -> list[str]:
    return list_files_and_sizes(file_pattern)[0]


def record_dataset(
    file_pattern,
    is_training: bool = True,
    input_context: tf.distribute.InputContext | None = None,
    seed: int | None = None,
    skip_bad_records: bool = False,
    bad_record_counter: BadRecordCounter | None = None,
) -> tf.data.Dataset:
    """Serialized records of this input pipeline's share of the files (shuffled, repeated when
    training), read with ``checked_records``."""
    files, sizes = list_files_and_sizes(file_pattern)
    if input_context is not None and input_context.num_input_pipelines > 1:
        n, i = input_context.num_input_pipelines, input_context.input_pipeline_id
        if len(files) < n:
            raise DataError(file_pattern, f"at least one file for each of the {n} input pipelines (write more "
                            "shards, --num-shards)", value=f"{len(files)} file(s)")
        files, sizes = files[i::n], sizes[i::n]  # as Dataset.shard(n, i)
        if not any(sizes):
            raise DataError(", ".join(files), f"records for input pipeline {i} of {n}",
                            record="its files are all empty (0 bytes)")
    return read_files(files, sizes, shuffle_files=is_training, repeat=is_training, seed=seed,
                      deterministic=not is_training or seed is not None, skip_bad_records=skip_bad_records,
                      bad_record_counter=bad_record_counter)


def pretraining_dataset(
    file_pattern,
    preprocessor,
    masker,
    batch_size: int,
    is_training: bool = True,
    input_context: tf.distribute.InputContext | None = None,
    shuffle_buffer: int = 10_000,
    seed: int | None = None,
    use_nsp: bool = True,
    skip_bad_records: bool = False,
    bad_record_counter: BadRecordCounter | None = None,
):
    """Yields ``(features, labels)`` for ``BertPretrainer``; static shapes, ``drop_remainder``.

    ``masker=None`` (a left-to-right language model, ``BertLMPretrainer``): the packed pair
    unmasked, the encoder's three inputs alone (the model reads its targets from them).

    ``batch_size`` is per replica when ``input_context`` is given (``strategy.distribute_datasets_
    from_function``), else global. Each input pipeline reads its own shard of the files.
    A damaged file raises ``CorruptRecordError`` (inside ``explain_data_errors()``) or, with
    ``skip_bad_records``, is skipped from its first bad record on, counted in ``bad_record_counter``.
    """
    ds = record_dataset(file_pattern, is_training, input_context, seed, skip_bad_records, bad_record_counter)
    if is_training:
        ds = ds.shuffle(shuffle_buffer, seed=seed)
    ds = ds.batch(batch_size, drop_remainder=is_training)
    seq_length = preprocessor.seq_length

    def to_model_inputs(records):
        ex = tf.io.parse_example(records, FEATURES)
        # A tokenizer with a Python step (in_graph False) runs it here (tf.numpy_function); no-op otherwise.
        texts = [pre_tokenize_tensor(preprocessor.tokenizer, ex[k]) for k in ("text_a", "text_b")]
        # Whole-word masking reads the tokenizer's words (MeCab's for mecab-*) carried through packing.
        # A pair that does not fit is cut at random ends (google-research/bert's truncate_seq_pair).
        packed = preprocessor(texts, word_starts=getattr(masker, "whole_word", False), pre_tokenized=True,
                              random_cut=True)
        static = lambda t, *dims: tf.ensure_shape(t, [None if not is_training else batch_size, *dims])  # noqa: E731
        if masker is None:
            return {name: static(packed[name], seq_length)
                    for name in ("input_word_ids", "input_mask", "input_type_ids")}
        masked = masker(packed)
        features = {
            "input_word_ids": static(masked["input_word_ids"], seq_length),
            "input_mask": static(masked["input_mask"], seq_length),
            "input_type_ids": static(masked["input_type_ids"], seq_length),
            "masked_lm_positions": static(masked["masked_lm_positions"], masker.max_predictions),
        }
        labels = {
            "masked_lm_ids": static(masked["masked_lm_ids"], masker.max_predictions),
            "masked_lm_weights": static(masked["masked_lm_weights"], masker.max_predictions),
        }
        if use_nsp:
            labels["next_sentence_labels"] = static(tf.cast(ex["next_sentence_label"], tf.int32))
        return features, labels

    # Held-out data maps one batch at a time: the masker's random ops are stateful kernels shared by
    # the map's parallel calls, which would draw from them in whatever order the threads run, so the
    # same checkpoint would get other masks (and numbers) from run to run even with a fixed seed.
    if is_training:
        ds = ds.map(to_model_inputs, num_parallel_calls=tf.data.AUTOTUNE, deterministic=seed is not None)
    else:  # one call at a time; tf.data warns about a `deterministic` argument without parallel calls
        ds = ds.map(to_model_inputs)
    return ds.prefetch(tf.data.AUTOTUNE)
