"""Issue 8, data files: damaged TFRecords, malformed task files and empty inputs explain themselves.

Faults injected here (counted in the module's FAULTS dict, printed by report_faults):
- TFRecord shards truncated inside a record's data, inside a record's header, with a flipped
  byte in a record's data (CRC), in a record's length field, with garbage appended, and as a
  directory or an empty file: read by the pre-training pipeline with and without
  ``skip_bad_records`` and through ``python -m kbert.pretrain`` (a checkpoint is written before
  the error, and a rerun with ``--skip-bad-records`` resumes from it).
- The same damage in one shard of task-data TFRecords, read by ``kbert.data.tfrecord.make_dataset``.
- GLUE, SQuAD and CoNLL files mutated by hypothesis (columns dropped or added, labels replaced,
  lines cut, bytes flipped, JSON truncated): every read either succeeds or raises ``DataError``
  naming the file and the line / record.
"""

from __future__ import annotations

import collections
import json
import os
import random
import re
import struct

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import SHARED
from kbert.data.pretraining import (
    BadRecordCounter,
    CorruptRecordError,
    explain_data_errors,
    list_files,
    pretraining_dataset,
    record_dataset,
)
from kbert.errors import DataError

FAULTS = collections.Counter()
OUTCOMES = collections.Counter()  # task-file mutations: "<kind> rejected" (DataError) / "<kind> accepted"

WORDS = ("the cat sat on a mat and dog ran far away from home with big red ball in garden "
         "she he it was is were saw made good bad day night").split()


# -- tiny vocab and pre-training records (no Beam: milliseconds) -----------------------------------
def write_vocab(path):
    tokens = ["[PAD]", *[f"[unused{i}]" for i in range(5)], "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ","]
    tokens += list("abcdefghijklmnopqrstuvwxyz") + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"] + WORDS
    path.write_text("".join(t + "\n" for t in dict.fromkeys(tokens)), encoding="utf-8")
    return path


def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def write_records(path, count, seed=0):
    """``count`` NSP records; returns the byte offset at which each record starts (and the end)."""
    rng = random.Random(seed)
    offsets = [0]
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(count):
            example = tf.train.Example(features=tf.train.Features(feature={
                "text_a": tf.train.Feature(bytes_list=tf.train.BytesList(value=[sentence(rng, rng.randint(3, 9)).encode()])),
                "text_b": tf.train.Feature(bytes_list=tf.train.BytesList(value=[sentence(rng, rng.randint(3, 9)).encode()])),
                "next_sentence_label": tf.train.Feature(int64_list=tf.train.Int64List(value=[rng.randint(0, 1)])),
            })).SerializeToString()
            writer.write(example)
            offsets.append(offsets[-1] + len(example) + 16)
    assert os.path.getsize(path) == offsets[-1]
    return offsets


def frame_offsets(data: bytes):
    """Independent framing walk (header lengths only): start offsets of the records."""
    offsets, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        offsets.append(pos)
        pos += 12 + length + 4
    return offsets


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    return write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt")


@pytest.fixture(scope="module")
def text_layers(vocab):
    from kbert.text import BertPreprocessor, load_vocab
    from kbert.text.masking import MlmMasker

    tokens = load_vocab(vocab)
    return BertPreprocessor(tokens, seq_length=32), MlmMasker(tokens, max_predictions=5)


# Each damage: (name, function(bytes, offsets) -> (damaged bytes, index of the first bad record)).
def _truncate_data(data, offsets):
    return data[:offsets[7] + 20], 7


def _truncate_header(data, offsets):
    return data[:offsets[5] + 6], 5


def _flip_data_byte(data, offsets):
    b = bytearray(data)
    b[offsets[3] + 12 + 5] ^= 0x40
    return bytes(b), 3


def _flip_length_byte(data, offsets):
    b = bytearray(data)
    b[offsets[9]] ^= 0x01
    return bytes(b), 9


def _append_garbage(data, offsets):
    return data + b"\x07not a record", len(offsets) - 1


DAMAGE = {"truncated inside a record": _truncate_data, "truncated inside a header": _truncate_header,
          "flipped data byte (CRC)": _flip_data_byte, "flipped length byte": _flip_length_byte,
          "garbage appended": _append_garbage}


def _damaged(tmp_path, name, count=12, seed=1):
    good = tmp_path / f"good-{seed}.tfrecord"
    offsets = write_records(good, count, seed)
    data, bad_index = DAMAGE[name](good.read_bytes(), offsets)
    bad = tmp_path / f"bad-{seed}.tfrecord"
    bad.write_bytes(data)
    good.unlink()
    return bad, bad_index, offsets


def _count_records(pattern, **kwargs):
    with explain_data_errors():
        return sum(1 for _ in record_dataset(pattern, is_training=False, **kwargs))


def _count_batched_examples(pattern, text_layers, **kwargs):
    """Through the whole pre-training pipeline (tokenize, pack, mask)."""
    pre, masker = text_layers
    ds = pretraining_dataset(pattern, pre, masker, batch_size=4, is_training=False, seed=0, **kwargs)
    with explain_data_errors():
        return sum(int(f["input_word_ids"].shape[0]) for f, _ in ds)


@pytest.mark.parametrize("name", list(DAMAGE))
def test_damaged_shard_is_named_with_record_and_offset(tmp_path, name):
    write_records(tmp_path / "a-good.tfrecord", 10, seed=2)
    bad, index, offsets = _damaged(tmp_path, name)
    FAULTS[f"TFRecord: {name}"] += 1
    with pytest.raises(CorruptRecordError) as info:
        _count_records(str(tmp_path / "*.tfrecord"))
    error = info.value
    assert error.file == str(bad) and error.index == index and error.offset == offsets[index]
    assert error.size == os.path.getsize(bad)
    message = str(error)
    assert str(bad) in message and f"record {index}" in message and f"byte offset {offsets[index]}" in message
    assert "--skip-bad-records" in message
    if name != "garbage appended":  # the independent framing walk agrees on where records start
        assert frame_offsets(bad.read_bytes())[:index] == offsets[:index]


@pytest.mark.slow
def test_skip_bad_records_keeps_every_readable_record_and_counts(tmp_path, text_layers, capfd):
    expected_records = write_records(tmp_path / "a-good.tfrecord", 10, seed=2) and 10
    bad_files = []
    for seed, name in enumerate(DAMAGE, start=10):
        bad, index, _ = _damaged(tmp_path, name, seed=seed)
        bad_files.append(bad)
        expected_records += index  # the records before the first bad one are read
        FAULTS[f"TFRecord (skipped): {name}"] += 1
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


def test_intact_files_read_exactly_as_before(tmp_path):
    """The checked reader yields the records of tf.data.TFRecordDataset, in order."""
    from kbert.data.pretraining import checked_records

    write_records(tmp_path / "x.tfrecord", 25, seed=3)
    (tmp_path / "empty.tfrecord").write_bytes(b"")
    for f in ("x.tfrecord", "empty.tfrecord"):
        path = str(tmp_path / f)
        mine = [r.numpy() for r in checked_records(path, os.path.getsize(path))]
        assert mine == [r.numpy() for r in tf.data.TFRecordDataset(path)]


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
    FAULTS["empty or missing input (glob, empty files, directory)"] += 3
    # A worker whose share of the files is all empty would wait forever: refused up front.
    os.rmdir(tmp_path / "dir.tfrecord")
    write_records(tmp_path / "c.tfrecord", 4)
    pre, masker = text_layers
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=0)  # gets a and c
    pretraining_dataset(str(tmp_path / "*.tfrecord"), pre, masker, 2, input_context=context)
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1)  # gets b only
    with pytest.raises(DataError, match="b.tfrecord, its files are all empty.*input pipeline 1 of 2"):
        pretraining_dataset(str(tmp_path / "*.tfrecord"), pre, masker, 2, input_context=context)
    FAULTS["empty or missing input (glob, empty files, directory)"] += 1


# -- task-data TFRecords (pipelines/task_data.py) read through the same checks ---------------------
def write_task_records(path, count, seed=0):
    """``count`` classification records in the task-data layout; returns the record offsets."""
    from kbert.data.tfrecord import encode_example

    rng = random.Random(seed)
    offsets = [0]
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(count):
            example = encode_example("classification", {
                "id": f"{path.stem}-{i}", "text_a": sentence(rng, rng.randint(3, 9)),
                "text_b": sentence(rng, rng.randint(3, 9)), "label": rng.randint(0, 1)}).SerializeToString()
            writer.write(example)
            offsets.append(offsets[-1] + len(example) + 16)
    assert os.path.getsize(path) == offsets[-1]
    return offsets


@pytest.mark.parametrize("name", list(DAMAGE))
def test_a_damaged_task_data_shard_is_named_or_skipped(tmp_path, name, capfd):
    from kbert.data.tfrecord import make_dataset

    for i in (0, 2):
        write_task_records(tmp_path / f"sst2-train-0000{i}-of-00003.tfrecord", 10, seed=i)
    bad = tmp_path / "sst2-train-00001-of-00003.tfrecord"
    offsets = write_task_records(bad, 12, seed=1)
    data, index = DAMAGE[name](bad.read_bytes(), offsets)
    bad.write_bytes(data)
    pattern = str(tmp_path / "sst2-train-*.tfrecord")
    FAULTS[f"task-data TFRecord: {name}"] += 1

    for batch_size in (None, 4):
        with pytest.raises(CorruptRecordError) as info, explain_data_errors():
            list(make_dataset(pattern, "classification", batch_size=batch_size))
        error = info.value
        assert (error.file, error.index, error.size) == (str(bad), index, os.path.getsize(bad)), str(error)
        assert str(bad) in str(error) and f"record {index}" in str(error)

    counter = BadRecordCounter()
    got = list(make_dataset(pattern, "classification", shuffle=True, seed=0, skip_bad_records=True,
                            bad_record_counter=counter).as_numpy_iterator())
    ids = sorted(r["id"].decode() for r in got)
    assert ids == sorted([f"sst2-train-0000{i}-of-00003-{j}" for i in (0, 2) for j in range(10)]
                         + [f"sst2-train-00001-of-00003-{j}" for j in range(index)])
    assert counter.count == 1
    assert re.search(rf"skipping damaged TFRecord data in \"?{re.escape(str(bad))}", capfd.readouterr().err)


def test_task_data_reader_refuses_missing_and_empty_shards_before_work(tmp_path):
    from kbert.data.tfrecord import make_dataset

    with pytest.raises(FileNotFoundError, match="no task-data files match .*none-"):
        make_dataset(str(tmp_path / "none-*.tfrecord"), "classification")
    (tmp_path / "a.tfrecord").write_bytes(b"")
    with pytest.raises(DataError, match=r"1 matching file\(s\), all empty"):
        make_dataset(str(tmp_path / "*.tfrecord"), "classification")
    FAULTS["empty or missing input (task data)"] += 2


# -- python -m kbert.pretrain on damaged data ---------------------------------------------------------
def _pretrain(tmp_path, vocab, data, *extra):
    from kbert.commands.pretrain import main

    return main(["--config", "tiny", "--vocab", str(vocab), "--train-data", str(data),
                 "--model-dir", str(tmp_path / "m"), "--seq-length", "32", "--max-predictions", "5",
                 "--batch-size", "16", "--seed", "0", "--learning-rate", "1e-3", *extra])


@pytest.mark.slow
def test_pretrain_cli_names_the_file_keeps_the_steps_and_resumes_with_skip(tmp_path, vocab, capfd):
    """The damaged record lies past the 10,000-record shuffle buffer: training has run some steps
    when it is reached. Those steps are checkpointed, then a rerun with --skip-bad-records resumes."""
    data = tmp_path / "data"
    data.mkdir()
    offsets = write_records(data / "train-0.tfrecord", 10_300, seed=5)
    raw = bytearray((data / "train-0.tfrecord").read_bytes())
    raw[offsets[10_150] + 14] ^= 0xFF
    (data / "train-0.tfrecord").write_bytes(bytes(raw))
    FAULTS["TFRecord through the CLI: flipped data byte"] += 1
    import tensorflow as tf

    from kbert.cli_support import is_user_error
    from kbert.data.pretraining import CorruptRecordError

    with pytest.raises(CorruptRecordError) as info:
        _pretrain(tmp_path, vocab, data / "*.tfrecord", "--steps", "24", "--checkpoint-every", "4")
    assert is_user_error(info.value)  # the command shows it as one line "kbert pretrain: error: ...", exit 1
    out = capfd.readouterr()
    assert str(info.value).startswith(f"{data / 'train-0.tfrecord'}: record 10150 (byte offset {offsets[10_150]}")
    latest = tf.train.latest_checkpoint(str(tmp_path / "m" / "checkpoints"))
    step = int(latest.rsplit("-", 1)[1])
    assert 4 < step < 24 and f"damaged training data: checkpoint written at step {step}" in out.out
    assert not (tmp_path / "m" / "encoder.weights.h5").exists()

    assert _pretrain(tmp_path, vocab, data / "*.tfrecord", "--steps", "24", "--checkpoint-every", "4",
                     "--skip-bad-records") == 0
    out = capfd.readouterr()
    assert f"resuming from step {step}" in out.out
    results = json.loads((tmp_path / "m" / "pretrain_results.json").read_text())
    assert results["steps"] == 24 and results["skipped_bad_records"] >= 1
    assert "skipping damaged TFRecord data in" in out.err and "damaged TFRecord region(s)" in out.out


def test_the_beam_pipeline_refuses_an_empty_corpus_before_any_work(tmp_path, vocab):
    """It used to run and write empty shards."""
    from pipelines.pretraining_data import run

    (tmp_path / "a.txt").write_bytes(b"")
    (tmp_path / "b.txt").write_bytes(b"")
    FAULTS["empty or missing input (glob, empty files, directory)"] += 1
    with pytest.raises(ValueError, match=r"corpus is empty: 2 file\(s\) matching .*\*.txt.*all 0 bytes"):
        run(["--input", str(tmp_path / "*.txt"), "--output", str(tmp_path / "out"), "--vocab", str(vocab)])
    assert not list(tmp_path.glob("out*"))


def test_pretrain_cli_refuses_empty_training_and_eval_data_before_work(tmp_path, vocab, capfd):
    (tmp_path / "train-0.tfrecord").write_bytes(b"")
    with pytest.raises(DataError, match=r"all empty \(0 bytes\)"):  # the command shows it as one line
        _pretrain(tmp_path, vocab, tmp_path / "train-*.tfrecord")
    write_records(tmp_path / "train-1.tfrecord", 40)
    with pytest.raises(FileNotFoundError, match="no pre-training files match .*eval-"):
        _pretrain(tmp_path, vocab, tmp_path / "train-*.tfrecord", "--eval-data", str(tmp_path / "eval-*.tfrecord"))
    assert not (tmp_path / "m").exists()
    FAULTS["empty or missing input (glob, empty files, directory)"] += 2


# -- task files: hypothesis mutations -------------------------------------------------------------
def _lines(path, n):
    with open(path, "rb") as f:
        return [f.readline() for _ in range(n)]


GLUE_SAMPLES = {  # task -> (directory, split, first lines of the real file)
    "cola": ("CoLA", "dev", 12), "sst2": ("SST-2", "dev", 12), "mrpc": ("MRPC", "dev", 8), "stsb": ("STS-B", "dev", 8),
}


def _mutations():
    line_op = st.sampled_from(["drop_column", "add_column", "bad_label", "cut", "flip_byte", "empty", "delete",
                               "duplicate", "bad_utf8", "swap_tabs"])
    return st.lists(st.tuples(line_op, st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4)


def _mutate(lines, ops):
    lines = list(lines)
    for op, where, byte in ops:
        i = where % len(lines)
        line = lines[i].rstrip(b"\n")
        cols = line.split(b"\t")
        if op == "drop_column" and len(cols) > 1:
            del cols[where % len(cols)]
            line = b"\t".join(cols)
        elif op == "add_column":
            line += b"\textra"
        elif op == "bad_label":
            cols[where % len(cols)] = [b"2", b"-1", b"x", b"", b"nan", b"5.5", b"1e9"][byte % 7]
            line = b"\t".join(cols)
        elif op == "cut":
            line = line[: where % (len(line) + 1)]
        elif op == "flip_byte" and line:
            b = bytearray(line)
            b[where % len(b)] = byte
            line = bytes(b)
        elif op == "empty":
            line = b""
        elif op == "delete" and len(lines) > 1:
            del lines[i]
            continue
        elif op == "duplicate":
            lines.insert(i, lines[i])
            continue
        elif op == "bad_utf8":
            line = line[: where % (len(line) + 1)] + b"\xff\xfe" + line[where % (len(line) + 1):]
        elif op == "swap_tabs":
            line = line.replace(b"\t", b" ", 1)
        lines[i] = line + b"\n"
    return b"".join(lines)


def _check_named(error: DataError, path, kind):
    OUTCOMES[f"{kind} rejected"] += 1
    message = str(error)
    assert str(path) in message, message
    assert error.line is not None or error.record is not None or "(whole file)" in message, message
    assert "expected" in message, message


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(task=st.sampled_from(sorted(GLUE_SAMPLES)), ops=_mutations())
@example(task="sst2", ops=[("bad_label", 1, 0)])  # always tried: SST-2's first label made "2"
def test_mutated_glue_files_read_or_name_file_and_line(tmp_path, task, ops):
    from kbert.data.glue import read_glue

    directory, split, n = GLUE_SAMPLES[task]
    data = _mutate(_lines(SHARED / "glue" / directory / f"{split}.tsv", n), ops)
    path = tmp_path / f"{task}-{split}.tsv"
    FAULTS["GLUE file mutations"] += 1
    try:
        result = read_glue(task, split, path=path, data=data)
    except DataError as e:
        _check_named(e, path, "GLUE")
        return
    OUTCOMES["GLUE accepted"] += 1
    for example in result.examples:  # accepted: each label is one the task has (GLUE's definitions)
        label = example["label"]
        if task == "stsb":  # a similarity score from 0 to 5
            assert isinstance(label, float) and 0.0 <= label <= 5.0, example
        else:  # CoLA, SST-2, MRPC: class 0 or 1
            assert type(label) is int and label in (0, 1), example


CONLL_SAMPLE = b"".join(_lines(SHARED / "conll2003" / "valid.txt", 40))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_mutations(), space=st.booleans())
def test_mutated_conll_files_read_or_name_file_and_line(tmp_path, ops, space):
    from kbert.data.conll import read_conll

    lines = CONLL_SAMPLE.splitlines(keepends=True)
    if space:  # CoNLL separates columns by spaces: mutate those
        lines = [line.replace(b" ", b"\t") for line in lines]
    data = _mutate(lines, ops)
    if space:
        data = data.replace(b"\t", b" ")
    path = tmp_path / "valid.txt"
    FAULTS["CoNLL file mutations"] += 1
    try:
        result = read_conll(path, data=data)
    except DataError as e:
        _check_named(e, path, "CoNLL")
        return
    OUTCOMES["CoNLL accepted"] += 1
    assert all(len(ex["words"]) == len(ex["tags"]) for ex in result.examples)


def _squad_sample():
    doc = json.loads((SHARED / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))
    return {"version": "1.1", "data": [{"title": doc["data"][0]["title"],
                                        "paragraphs": doc["data"][0]["paragraphs"][:2]}]}


SQUAD_SAMPLE = json.dumps(_squad_sample(), indent=1).encode("utf-8")
# The first byte of the first answer's text: a space there leaves valid JSON whose answer is no
# longer the text at its answer_start.
_FIRST_ANSWER = SQUAD_SAMPLE.index(b'"text": "') + len(b'"text": "')


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(cut=0, flips=[(_FIRST_ANSWER, 32)], truncate=False)
@given(cut=st.integers(0, len(SQUAD_SAMPLE)), flips=st.lists(st.tuples(st.integers(0, len(SQUAD_SAMPLE) - 1),
                                                                      st.integers(0, 255)), max_size=3),
       truncate=st.booleans())
def test_mutated_squad_json_reads_or_names_file_and_line(tmp_path, cut, flips, truncate):
    from kbert.data.squad import read_squad

    data = bytearray(SQUAD_SAMPLE)
    for where, byte in flips:
        data[where] = byte
    if truncate:
        data = data[:cut]
    path = tmp_path / "dev.json"
    FAULTS["SQuAD JSON mutations"] += 1
    try:
        result = read_squad(path, data=bytes(data))
    except DataError as e:
        _check_named(e, path, "SQuAD")
        return
    OUTCOMES["SQuAD accepted"] += 1
    # accepted: the file is JSON by Python's own parser, every question of it is an example with
    # all its answers, and each answer is either at its text in the context (at the file's
    # answer_start or at most OFFSET_TOLERANCE off) or marked unplaced (-1: kept for the official
    # scorer, left out of training) because the file's offset points at no such text
    from kbert.data.squad import OFFSET_TOLERANCE, UNPLACED

    parsed = json.loads(bytes(data).decode("utf-8"))
    questions = [(paragraph["context"], q) for article in parsed["data"] for paragraph in article["paragraphs"]
                 for q in paragraph["qas"]]
    assert [e["id"] for e in result.examples] == [q["id"] for _, q in questions]
    for example, (context, question) in zip(result.examples, questions):
        assert example["context"] == context
        assert [a["text"] for a in example["answers"]] == [a["text"] for a in question["answers"]], example
        for answer, given in zip(example["answers"], question["answers"]):
            start, text, offset = answer["answer_start"], answer["text"], given.get("answer_start")
            if start == UNPLACED:
                near = [offset + d for d in range(-OFFSET_TOLERANCE, OFFSET_TOLERANCE + 1)
                        if isinstance(offset, int) and not isinstance(offset, bool) and offset + d >= 0
                        and context[offset + d:offset + d + len(text)] == text]
                assert not near or not text.strip(), (example, given)
            else:
                assert context[start:start + len(text)] == text and abs(start - offset) <= OFFSET_TOLERANCE, example


@pytest.fixture(scope="module", autouse=True)
def report_faults():
    """Prints the faults this module's tests injected, after the last of them, whichever ran
    (pytest -s shows it). Each test asserts its own outcome; this only reports."""
    yield
    print("\nfaults injected (data):", dict(FAULTS), "total", sum(FAULTS.values()))
    print("task-file mutations:", dict(OUTCOMES))
