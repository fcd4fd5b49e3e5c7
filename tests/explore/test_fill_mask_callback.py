"""Pre-training shows its guesses (kbert/explore/fill_mask_callback.py): the held-out sentences it
picks, the logger's text summaries (the top-k guesses at every interval, the hidden word in bold) read
back and compared with the MLM head's own softmax, and the summaries a short run of the main job
(python -m kbert.pretrain) writes every interval."""

import re
import types

import numpy as np
import pytest
import tensorflow as tf

from conftest import PRETRAIN_RUN_EVERY, PRETRAIN_RUN_STEPS
from kbert.explore.fill_mask_callback import FillMaskLogger, held_out_sentences


def read_fill_mask_summaries(log_dir) -> dict[int, str]:
    """{step: markdown} of the ``fill_mask`` text summaries in ``log_dir``, read with TensorBoard's
    EventAccumulator (every point: it keeps a sample of 10 per tensor tag by default)."""
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.util import tensor_util

    logs = event_accumulator.EventAccumulator(str(log_dir), size_guidance={event_accumulator.TENSORS: 0}).Reload()
    return {e.step: tensor_util.make_ndarray(e.tensor_proto).item().decode("utf-8") for e in logs.Tensors("fill_mask")}


def test_held_out_sentences_hide_one_whole_vocabulary_word(tmp_path):
    texts = ["the cat sat on the mat today", "too short here", "a b c d e f g", "The Dog ran far away from home",
             " ".join(["word"] * 41)]
    with tf.io.TFRecordWriter(str(tmp_path / "pt-0.tfrecord")) as writer:
        for text in texts:
            writer.write(tf.train.Example(features=tf.train.Features(feature={"text_a": tf.train.Feature(
                bytes_list=tf.train.BytesList(value=[text.encode()]))})).SerializeToString())
    vocab = ["[PAD]", "the", "cat", "sat", "on", "mat", "dog", "ran", "far", "away", "from", "home", "word", "a", "b"]
    found = held_out_sentences(str(tmp_path / "pt-*"), vocab, count=5)
    # 3 words, 41 words and one-letter words are never picked: two sentences qualify
    assert sorted(masked.replace("[MASK]", word) for masked, word in found) == sorted([texts[0], texts[3]])
    for masked, word in found:
        assert masked.split().count("[MASK]") == 1 and len(word) >= 3 and word.lower() in vocab
    assert held_out_sentences(str(tmp_path / "pt-*"), vocab, count=1) == found[:1]  # same seed, same picks
    cased = held_out_sentences(str(tmp_path / "pt-*"), vocab, lower_case=False, count=5)
    assert all(word in vocab for _, word in cased)  # "The", "Dog" are not whole tokens of this vocabulary


@pytest.mark.slow
def test_the_logger_writes_the_mlm_heads_guesses_at_its_steps(tmp_path):
    from kbert import random_model_dir
    from kbert.explore.heads_model import PretrainingHeads

    heads = PretrainingHeads.from_model_dir(random_model_dir(tmp_path / "tiny"))
    texts = ["the man went to the [MASK] .", "[MASK] bought milk ."]
    packed = {k: v.numpy() for k, v in heads.pack(texts).items()}
    positions = np.stack([np.flatnonzero(row == heads.mask_id) for row in packed["input_word_ids"]])
    logits = np.asarray(heads.mlm_head(heads.encoder(packed)["sequence_output"], positions,
                                       heads.encoder.word_embeddings), np.float64)[:, 0]
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    vocab = heads.preprocessor.tokenize.get_vocabulary()
    top = [[(vocab[i], p[i]) for i in np.argsort(-p)[:3]] for p in probabilities]
    sentences = [(texts[0], top[0][1][0]), (texts[1], "zzzz")]  # the second guess is the hidden word; no guess is

    logger = FillMaskLogger(tmp_path / "logs", heads.encoder, heads.mlm_head, heads.preprocessor, sentences,
                            every=3, top_k=3)
    iterations = tf.Variable(0, dtype=tf.int64)
    logger.set_model(types.SimpleNamespace(optimizer=types.SimpleNamespace(iterations=iterations)))
    for step in range(1, 8):
        iterations.assign(step)
        logger.on_train_batch_end(step - 1)
    logger.on_train_end()
    logger.on_train_end()  # the same step again: not logged twice
    steps = [event.step for path in (tmp_path / "logs").glob("events.out.tfevents.*")
             for event in map(tf.compat.v1.Event.FromString, tf.data.TFRecordDataset(str(path)).as_numpy_iterator())
             if any(value.tag == "fill_mask" for value in event.summary.value)]
    assert steps == [3, 6, 7]
    summaries = read_fill_mask_summaries(tmp_path / "logs")
    assert sorted(summaries) == [3, 6, 7]
    for markdown in summaries.values():
        parts = markdown.split("\n\n| guess | probability |\n|---|---|\n")
        assert parts[0] == f"{texts[0]}  \n(hidden word: **{sentences[0][1]}**)"
        tables = [re.findall(r"^\| (.+) \| ([\d.]+) \|$", part, re.M) for part in parts[1:]]
        assert tables[0] == [(t if i != 1 else f"**{t}**", f"{p:.4f}") for i, (t, p) in enumerate(top[0])]
        assert tables[1] == [(t, f"{p:.4f}") for t, p in top[1]]
    assert logger.guesses() == [[t for t, _ in row] for row in top]


def test_pretraining_writes_fill_mask_summaries(pretrain_run):
    model_dir = pretrain_run.model_dir  # conftest: fill-mask every PRETRAIN_RUN_EVERY steps
    summaries = read_fill_mask_summaries(model_dir / "logs" / "fill_mask")
    assert sorted(summaries) == [PRETRAIN_RUN_EVERY, PRETRAIN_RUN_STEPS]
    last = summaries[PRETRAIN_RUN_STEPS]
    assert last.count("[MASK]") == 4 and last.count("hidden word") == 4
    assert "| guess | probability |" in last
