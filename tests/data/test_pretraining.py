"""Pre-training records (kbert.data.pretraining): each input pipeline reads the files
``Dataset.shard(n, i)`` would give it, held-out data once and in order; too few or only empty shards
for a pipeline, a glob that matches nothing, empty files or a directory fail before any work.
Damaged shards (tests/fixtures/tiny_records.py) through the whole pipeline (tokenize, pack, mask)
with ``skip_bad_records``: every readable record is kept and each damaged file counted and logged.
(The masked batches: tests/models/test_pretrainer.py; damage named record by record:
tests/data/test_records.py.)"""

import os
import pathlib
import re

import pytest
import tensorflow as tf

from fixtures.tiny_records import DAMAGE, damaged, write_records, write_vocab
from kbert.data.pretraining import (
    BadRecordCounter,
    explain_data_errors,
    list_files,
    pretraining_dataset,
    record_dataset,
)
from kbert.errors import DataError


def _shards(tmp_path, counts):
    for s, count in enumerate(counts):
        with tf.io.TFRecordWriter(str(tmp_path / f"p-{s:05d}.tfrecord")) as writer:
            for r in range(count):
                writer.write(f"{s}:{r}".encode())
    return str(tmp_path / "p-*.tfrecord")


def test_each_input_pipeline_reads_its_share_of_the_files(tmp_path):
    counts = [2, 1, 3, 2, 1]
    pattern = _shards(tmp_path, counts)
    files = list_files(pattern)
    assert files == sorted(files) and len(files) == 5

    def records_of(names):  # shard s holds "s:0", "s:1", ...
        shards = [int(pathlib.Path(name).stem.split("-")[1]) for name in names]
        return sorted(f"{s}:{r}" for s in shards for r in range(counts[s]))

    assert sorted(r.numpy().decode() for r in record_dataset(pattern, is_training=False)) == records_of(files)
    for i in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=i)
        got = [r.numpy().decode() for r in record_dataset(pattern, is_training=False, input_context=context)]
        share = [f.decode() for f in tf.data.Dataset.from_tensor_slices(files).shard(2, i).as_numpy_iterator()]
        assert sorted(got) == records_of(share)


def test_held_out_data_is_read_once_and_in_file_order(tmp_path):
    pattern = _shards(tmp_path, [3])
    held_out = record_dataset(pattern, is_training=False).take(4)  # take: a repeated dataset would not end
    assert [r.numpy() for r in held_out] == [b"0:0", b"0:1", b"0:2"]
    training = record_dataset(pattern, is_training=True, seed=0).take(7)
    assert len(list(training)) == 7  # repeated when training


def test_pipelines_without_records_fail_before_any_work(tmp_path):
    pattern = _shards(tmp_path, [2, 0, 2, 0])
    with pytest.raises(DataError, match="got '4 file\\(s\\)'; expected at least one file for each of the 5 input"):
        record_dataset(pattern, input_context=tf.distribute.InputContext(num_input_pipelines=5, input_pipeline_id=0))
    with pytest.raises(DataError, match="records for input pipeline 1 of 2"):
        record_dataset(pattern, input_context=tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1))
    with pytest.raises(FileNotFoundError, match="no pre-training files match"):
        record_dataset(str(tmp_path / "none-*.tfrecord"))


# -- the whole pipeline on damaged, empty and missing inputs ------------------------------------------
@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    return write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt")


@pytest.fixture(scope="module")
def text_layers(vocab):
    from kbert.text import BertPreprocessor, load_vocab
    from kbert.text.masking import MlmMasker

    tokens = load_vocab(vocab)
    return BertPreprocessor(tokens, seq_length=32), MlmMasker(tokens, max_predictions=5)


def _count_batched_examples(pattern, text_layers, **kwargs):
    """Through the whole pre-training pipeline (tokenize, pack, mask)."""
    pre, masker = text_layers
    ds = pretraining_dataset(pattern, pre, masker, batch_size=4, is_training=False, seed=0, **kwargs)
    with explain_data_errors():
        return sum(int(f["input_word_ids"].shape[0]) for f, _ in ds)


@pytest.mark.slow
def test_skip_bad_records_keeps_every_readable_record_and_counts(tmp_path, text_layers, capfd):
    expected_records = write_records(tmp_path / "a-good.tfrecord", 10, seed=2) and 10
    bad_files = []
    for seed, name in enumerate(DAMAGE, start=10):
        bad, index, _ = damaged(tmp_path, name, seed=seed)
        bad_files.append(bad)
        expected_records += index  # the records before the first bad one are read
    counter = BadRecordCounter()
    got = _count_batched_examples(str(tmp_path / "*.tfrecord"), text_layers, skip_bad_records=True,
                                  bad_record_counter=counter)
    assert got == expected_records
    assert counter.count == len(DAMAGE)
    log = capfd.readouterr().err
    for bad in bad_files:
        assert re.search(rf"skipping damaged TFRecord data in \"?{re.escape(str(bad))}", log), log[-2000:]
    assert log.count("skipping damaged TFRecord data") == len(DAMAGE)
    assert f"Skipped so far: {len(DAMAGE)}" in log


@pytest.mark.slow
def test_the_pretraining_datasets_build_without_warnings(tmp_path, text_layers):
    """Held-out and training data are built without tf.data's "`deterministic` argument has no
    effect" warning (it reached the main jobs' output)."""
    import warnings

    write_records(tmp_path / "a.tfrecord", 8, seed=3)
    pre, masker = text_layers
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for is_training in (False, True):
            pretraining_dataset(str(tmp_path / "*.tfrecord"), pre, masker, batch_size=4, is_training=is_training,
                                seed=0)
    assert not [str(w.message) for w in caught if "deterministic" in str(w.message)]


@pytest.mark.slow
def test_pairs_that_do_not_fit_lose_tokens_at_either_end(tmp_path, vocab):
    """A pair longer than the sequence is cut as create_pretraining_data.py cuts it (each token from
    the front or the back by a fair coin), not always at its end: through the whole pipeline, the
    kept tokens of each segment are one run of its tokens, and of the tokens cut, about half left
    from the front (tests/text/test_packer.py checks the rule against google-research/bert's)."""
    import numpy as np

    from kbert.text import BertPreprocessor, load_vocab
    from kbert.text.masking import MlmMasker

    write_records(tmp_path / "a.tfrecord", 200, seed=5)
    tokens = load_vocab(vocab)
    pre = BertPreprocessor(tokens, seq_length=12)
    tf.random.set_seed(0)
    ds = pretraining_dataset(str(tmp_path / "*.tfrecord"), pre, MlmMasker(tokens, max_predictions=3), batch_size=8,
                             is_training=False, seed=0)
    records = tf.data.TFRecordDataset(str(tmp_path / "a.tfrecord")).map(
        lambda r: tf.io.parse_single_example(r, {k: tf.io.FixedLenFeature([], tf.string) for k in ("text_a", "text_b")}))
    texts = [(t["text_a"].numpy().decode(), t["text_b"].numpy().decode()) for t in records]
    rows = []
    for features, labels in ds:  # the masked tokens put back
        ids = features["input_word_ids"].numpy()
        np.put_along_axis(ids, features["masked_lm_positions"].numpy(),
                          np.where(labels["masked_lm_weights"].numpy() > 0, labels["masked_lm_ids"].numpy(),
                                   np.take_along_axis(ids, features["masked_lm_positions"].numpy(), 1)), 1)
        rows += [(r, t) for r, t in zip(ids, features["input_type_ids"].numpy())]
    assert len(rows) == len(texts)
    front = cut = 0
    for (row, types), pair in zip(rows, texts):
        real = row[row != 0]
        for segment, text in enumerate(pair):
            whole = pre.tokenizer([text]).flat_values.numpy().tolist()
            kept = real[(types[:len(real)] == segment)][1 - segment:-1].tolist()  # without [CLS] and [SEP]
            start = next(i for i in range(len(whole) - len(kept) + 1) if whole[i:i + len(kept)] == kept)
            front += start
            cut += len(whole) - len(kept)
    assert cut > 300
    assert 0.4 < front / cut < 0.6, (front, cut)


def test_empty_and_missing_inputs_fail_before_any_work(tmp_path, text_layers):
    with pytest.raises(FileNotFoundError, match="no pre-training files match"):
        list_files(str(tmp_path / "none-*.tfrecord"))
    (tmp_path / "a.tfrecord").write_bytes(b"")
    (tmp_path / "b.tfrecord").write_bytes(b"")
    with pytest.raises(DataError, match=r"2 matching file\(s\), all empty \(0 bytes\).*a.tfrecord, .*b.tfrecord"):
        list_files(str(tmp_path / "*.tfrecord"))
    (tmp_path / "dir.tfrecord").mkdir()
    with pytest.raises(DataError, match="dir.tfrecord.*not a directory"):
        list_files(str(tmp_path / "*.tfrecord"))
    # A worker whose share of the files is all empty would wait forever: refused up front.
    os.rmdir(tmp_path / "dir.tfrecord")
    write_records(tmp_path / "c.tfrecord", 4)
    pre, masker = text_layers
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=0)  # gets a and c
    pretraining_dataset(str(tmp_path / "*.tfrecord"), pre, masker, 2, input_context=context)
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1)  # gets b only
    with pytest.raises(DataError, match="b.tfrecord, its files are all empty.*input pipeline 1 of 2"):
        pretraining_dataset(str(tmp_path / "*.tfrecord"), pre, masker, 2, input_context=context)


def test_without_a_masker_the_batches_are_the_packed_pairs_unmasked(tmp_path, text_layers):
    """masker=None (a left-to-right LM): the encoder's three inputs alone, equal to the preprocessor's
    packing of each record's pair (in file order): nothing masked (the pairs fit, so none is cut)."""
    pre, _ = text_layers
    write_records(tmp_path / "p-00000.tfrecord", 6)
    ds = pretraining_dataset(str(tmp_path / "*.tfrecord"), pre, None, batch_size=4, is_training=False, seed=0,
                             use_nsp=False)
    batches = list(ds)
    assert all(set(b) == {"input_word_ids", "input_mask", "input_type_ids"} for b in batches)
    pairs = [tf.train.Example.FromString(r.numpy()).features.feature for r in tf.data.TFRecordDataset(
        str(tmp_path / "p-00000.tfrecord"))]
    expected = pre([tf.constant([p[k].bytes_list.value[0] for p in pairs]) for k in ("text_a", "text_b")])
    for name in ("input_word_ids", "input_mask", "input_type_ids"):
        got = tf.concat([b[name] for b in batches], 0).numpy()
        assert (got == expected[name].numpy()).all(), name
