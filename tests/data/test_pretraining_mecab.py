"""Pre-training with the MeCab types: the tf.data pipeline runs the Python word split, whole-word
masking masks whole MeCab words (word starts carried through packing), and python -m kbert.pretrain
runs with --tokenizer mecab-wordpiece."""

import json
import random

import numpy as np
import pytest
import tensorflow as tf

from conftest import REFERENCE, SHARED, require

require("fugashi")
require("unidic_lite")
from kbert.text import BertPacker, BertPreprocessor, TokenizerSpec, create_tokenizer  # noqa: E402
from kbert.text.masking import MlmMasker, fit_in_order  # noqa: E402

VOCABS = {"mecab-wordpiece": SHARED / "vocab" / "ja-mecab-wordpiece" / "vocab.txt",
          "mecab-character": SHARED / "vocab" / "ja-char" / "vocab.txt"}


def _tokenizer(kind):
    return create_tokenizer(TokenizerSpec(type=kind, lower_case=False, vocab_file=str(VOCABS[kind])))


@pytest.fixture(scope="module")
def rows():
    return [json.loads(line) for line in (REFERENCE / "ja_tokenizers.jsonl").open(encoding="utf-8")]


def _write_records(path, pairs):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for a, b in pairs:
            feature = {"text_a": tf.train.Feature(bytes_list=tf.train.BytesList(value=[a.encode()])),
                       "text_b": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b.encode()])),
                       "next_sentence_label": tf.train.Feature(int64_list=tf.train.Int64List(value=[0]))}
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


@pytest.mark.slow
def test_pipeline_ids_equal_the_reference_tokenizer_ids(rows, tmp_path):
    from kbert.data.pretraining import pretraining_dataset

    tokenizer = _tokenizer("mecab-wordpiece")
    short = [r for r in rows if len(r["mecab_wordpiece_ids"]) <= 28][:24]
    pairs = [(short[i]["text"], short[i + 1]["text"]) for i in range(0, len(short) - 1, 2)]
    expected = {(short[i]["text"], short[i + 1]["text"]): [2, *short[i]["mecab_wordpiece_ids"], 3,
                                                          *short[i + 1]["mecab_wordpiece_ids"], 3]
                for i in range(0, len(short) - 1, 2)}
    _write_records(tmp_path / "train-0.tfrecord", pairs)
    # Selected tokens keep their ids (both rates 0): the instances are the packed reference ids.
    masker = MlmMasker.from_tokenizer(tokenizer, max_predictions=10, mask_token_rate=0.0, random_token_rate=0.0)
    preprocessor = BertPreprocessor(tokenizer, seq_length=64)
    for training in (False, True):  # in order; and shuffled, repeated, mapped in parallel
        ds = pretraining_dataset(str(tmp_path / "train-*.tfrecord"), preprocessor, masker, batch_size=4,
                                 is_training=training, seed=0)
        seen = []
        for features, labels in ds.take(3):
            ids, mask = features["input_word_ids"].numpy(), features["input_mask"].numpy()
            for row in range(len(ids)):
                tokens = ids[row, :mask[row].sum()].tolist()
                assert tokens in expected.values()
                seen.append(tokens)
                positions = features["masked_lm_positions"].numpy()[row]
                weights = labels["masked_lm_weights"].numpy()[row] > 0
                np.testing.assert_array_equal(labels["masked_lm_ids"].numpy()[row][weights], ids[row, positions[weights]])
        if not training:
            assert seen == list(expected.values())[:12]


def _reference_words(row):
    """The MeCab words of a reference line (fugashi + unidic-lite surfaces, made by the reference's author)."""
    return row["mecab_words"]


@pytest.mark.slow
def test_whole_word_masking_masks_whole_mecab_words_within_the_budget(rows):
    tokenizer = _tokenizer("mecab-character")
    # Lines whose characters are the reference's words' characters, one token each (no literal
    # special tokens, no white space inside words), short enough not to be cut at 128.
    plain = [r for r in rows if "[" not in r["text"] and 4 <= len(r["char_ids"]) <= 120
             and len(r["char_ids"]) == sum(len(w) for w in _reference_words(r))][:300]
    assert len(plain) == 300
    texts = [r["text"] for r in plain]
    packed = BertPreprocessor(tokenizer, seq_length=128)(tf.constant(texts), word_starts=True)  # eager: MeCab runs
    for row, r in enumerate(plain[:20]):  # the flags are the reference words' starts, [CLS] and [SEP]
        starts = [1]
        for w in _reference_words(r):
            starts += [1] + [0] * (len(w) - 1)
        starts += [1]
        assert packed["word_starts"].numpy()[row, :len(starts)].tolist() == starts
    tf.random.set_seed(0)
    masked = MlmMasker.from_tokenizer(tokenizer, max_predictions=20, whole_word=True)(packed)
    assert "word_starts" not in masked
    positions, weights = masked["masked_lm_positions"].numpy(), masked["masked_lm_weights"].numpy()
    chosen_total, budget_total, multi_char = 0, 0, 0
    for row, r in enumerate(plain):
        word_of = [-1]  # position -> word index ([CLS] at 0)
        for k, w in enumerate(_reference_words(r)):
            word_of += [k] * len(w)
        chosen = set(positions[row, weights[row] > 0].tolist())
        assert chosen and 0 not in chosen and len(word_of) not in chosen  # never [CLS] / [SEP]
        for k in {word_of[p] for p in chosen}:
            span = {p for p, w in enumerate(word_of) if w == k}
            assert span <= chosen, (r["text"][:40], k)  # every position of a chosen word is chosen
            multi_char += len(span) > 1
        budget = min(20, max(1, round(0.15 * (len(word_of) + 1))))  # [CLS] ... [SEP], as the original
        assert len(chosen) <= budget
        chosen_total += len(chosen)
        budget_total += budget
    assert multi_char > 100  # whole multi-character words were masked
    assert 0.98 <= chosen_total / budget_total <= 1.0  # the greedy fill reaches (almost) the budget
    # Without the flags the ids cannot tell MeCab words apart: every character is a word.
    masked_ids_only = MlmMasker.from_tokenizer(tokenizer, max_predictions=20, whole_word=True)(
        {k: v for k, v in packed.items() if k != "word_starts"})
    assert masked_ids_only["masked_lm_weights"].numpy().sum() == pytest.approx(budget_total, rel=0.01)


def _original_loop(lengths, budget):
    """google-research/bert create_pretraining_data.py: for index_set in cand_indexes (shuffled) ..."""
    taken, count = [], 0
    for i, n in enumerate(lengths):
        if count >= budget:
            break
        if count + n > budget:
            continue
        taken.append(i)
        count += n
    return taken


def test_fit_in_order_is_the_original_whole_word_loop():
    rng = random.Random(0)
    for _ in range(5):  # batches of rows (empty ones included), each with its own budget
        lengths = [[rng.choice([1, 1, 1, 2, 2, 3, 5, 9]) for _ in range(rng.randint(0, 40))] for _ in range(50)]
        budgets = [rng.randint(1, 25) for _ in lengths]
        got = fit_in_order(tf.ragged.constant(lengths, tf.int64, ragged_rank=1, inner_shape=()), budgets).to_list()
        for row, budget, taken in zip(lengths, budgets, got):
            assert np.flatnonzero(taken).tolist() == _original_loop(row, budget), (row, budget)


@pytest.mark.slow
def test_packer_word_starts_follow_truncation_for_every_truncator():
    a = tf.ragged.constant([[[10, 11, 12], [13], [14, 15]]], tf.int32)  # 3 words, 6 pieces
    b = tf.ragged.constant([[[20], [21, 22, 23]]], tf.int32)
    c = tf.ragged.constant([[21, 22]], tf.int32)  # [batch, tokens]: each token a word
    packer = BertPacker(8, start_of_sequence_id=2, end_of_segment_id=3, padding_id=0)
    out = packer([a, b], word_starts=True)  # budget 5: a keeps 3 (ceil), b keeps 2
    assert out["input_word_ids"].numpy().tolist() == [[2, 10, 11, 12, 3, 20, 21, 3]]
    assert out["word_starts"].numpy().tolist() == [[1, 1, 0, 0, 1, 1, 1, 1]]
    out = BertPacker(8, 2, 3, 0, truncator="waterfall")([a, b], word_starts=True)
    assert out["input_word_ids"].numpy().tolist() == [[2, 10, 11, 12, 13, 14, 3, 3]]
    assert out["word_starts"].numpy().tolist() == [[1, 1, 0, 0, 1, 1, 1, 1]]
    out = BertPacker(10, 2, 3, 0)([a, b, c], word_starts=True)  # tensorflow-text's round robin (3 segments)
    assert out["input_word_ids"].numpy().tolist() == [[2, 10, 11, 3, 20, 21, 3, 21, 22, 3]]
    assert out["word_starts"].numpy().tolist() == [[1, 1, 0, 1, 1, 1, 1, 1, 1, 1]]
    assert set(packer([a])) == {"input_word_ids", "input_mask", "input_type_ids"}  # only when asked


@pytest.mark.slow
def test_pretrain_command_runs_with_mecab_wordpiece(tmp_path):
    from kbert.commands import pretrain

    lines = [line for line in (SHARED / "corpus" / "ja" / "jsquad_wikipedia.txt").read_text(encoding="utf-8")
             .splitlines() if line.strip()][:64]
    _write_records(tmp_path / "train-0.tfrecord", zip(lines[::2], lines[1::2]))
    model_dir = tmp_path / "model"
    assert pretrain.main(["--config", "tiny", "--vocab", str(VOCABS["mecab-wordpiece"]), "--tokenizer", "mecab-wordpiece",
                          "--train-data", str(tmp_path / "train-*.tfrecord"), "--model-dir", str(model_dir),
                          "--steps", "3", "--batch-size", "4", "--seq-length", "64", "--max-predictions", "10",
                          "--checkpoint-every", "3", "--whole-word-masking", "--seed", "0"]) == 0
    assert json.loads((model_dir / "pretrain_results.json").read_text())["steps"] == 3
    assert json.loads((model_dir / "kbert.json").read_text())["tokenizer"]["type"] == "mecab-wordpiece"
