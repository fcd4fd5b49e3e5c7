"""The Beam pre-training data pipeline: documents, NSP instances, TFRecords, metrics; an empty corpus
refused before any work."""

import collections
import random

import pytest
import tensorflow as tf

from pipelines.pretraining_data import create_instances, parse_documents, run, split_sentences
from conftest import SHARED, UNCASED_VOCAB

from kbert.errors import DataError


def test_parse_documents_in_both_formats():
    text = "One.\nTwo here.\n\nThree.\n\n\nFour.\n"
    assert parse_documents(text, "sentences") == [["One.", "Two here."], ["Three."], ["Four."]]
    prose = "It was a truth. Universally\nacknowledged! Yes.\n\nAnother paragraph here."
    assert parse_documents(prose, "prose", doc_sentences=100) == [
        ["It was a truth.", "Universally acknowledged!", "Yes.", "Another paragraph here."]]
    assert parse_documents(prose, "prose", doc_sentences=2) == [
        ["It was a truth.", "Universally acknowledged!", "Yes."], ["Another paragraph here."]]
    with pytest.raises(ValueError, match="format"):
        parse_documents(text, "html")


def test_split_sentences_keeps_quotes_with_their_sentence():
    assert split_sentences('He said "Go." Then she left. 3 more.') == ['He said "Go."', "Then she left.", "3 more."]


def _synthetic(num_docs=40, seed=0):
    rng = random.Random(seed)
    return [[(f"d{d}s{i}", rng.randint(3, 30)) for i in range(rng.randint(1, 25))] for d in range(num_docs)]


def _parse(segment):
    return [tuple(int(x) for x in s[1:].split("s")) for s in segment.split(" ")]


def test_instances_follow_the_original_algorithm():
    docs = _synthetic()
    instances = create_instances(docs, max_seq_length=64, short_seq_prob=0.1, dupe_factor=5, seed=1)
    labels = collections.Counter(r for _, _, r in instances)
    assert 0.45 < labels[True] / len(instances) < 0.65  # ~50%, a bit more: one-sentence chunks are always random
    for a, b, is_random_next in instances:
        sa, sb = _parse(a), _parse(b)
        # A is a run of consecutive sentences of one document
        assert len({d for d, _ in sa}) == 1 and [i for _, i in sa] == list(range(sa[0][1], sa[0][1] + len(sa)))
        assert [i for _, i in sb] == list(range(sb[0][1], sb[0][1] + len(sb)))
        if is_random_next:
            assert sb[0][0] != sa[0][0]  # NotNext: B from another document
        else:
            assert sb[0][0] == sa[0][0] and sb[0][1] == sa[-1][1] + 1  # IsNext: B really follows A


def test_instance_lengths_aim_at_the_target():
    docs = _synthetic(seed=3)
    lengths = {f"d{d}s{i}": n for d, doc in enumerate(docs) for i, (_, n) in enumerate(doc)}
    instances = create_instances(docs, max_seq_length=64, short_seq_prob=0.0, seed=2)
    # google-research/bert's rule (create_instances_from_document), target 61 = 64 - 3 with
    # short_seq_prob 0: sentences are added until A + B reaches the target, so every instance
    # reaches it unless B stopped at the end of its document, and none still reaches it without
    # B's last sentence.
    assert len(instances) > 50
    for a, b, _ in instances:
        total = sum(lengths[s] for s in (a + " " + b).split(" "))
        (doc, last), = _parse(b.split(" ")[-1])
        assert total >= 61 or last == len(docs[doc]) - 1, (a, b, total)
        assert total - lengths[b.split(" ")[-1]] < 61, (a, b, total)


def test_pipeline_writes_examples_and_counts(pretraining_records):
    files = sorted(tf.io.gfile.glob(str(pretraining_records / "train-*.tfrecord")))
    assert len(files) == 2
    source = (SHARED / "corpus" / "en" / "northangerabbey.txt").read_text()
    flat = " ".join(source.split())
    n, not_next = 0, 0
    for record in tf.data.TFRecordDataset(files):
        ex = tf.train.Example.FromString(record.numpy())
        a = ex.features.feature["text_a"].bytes_list.value[0].decode()
        b = ex.features.feature["text_b"].bytes_list.value[0].decode()
        label = ex.features.feature["next_sentence_label"].int64_list.value[0]
        assert a and b and a in flat and b in flat  # raw text from the source, no ids
        if label == 0:
            assert a + " " + b in flat  # IsNext pairs are consecutive in the novel
        n += 1
        not_next += label
    assert n > 500 and 0.4 < not_next / n < 0.7


def test_pipeline_reports_beam_metrics(tmp_path):
    counters = run(["--input", str(SHARED / "corpus" / "en" / "nltk_gutenberg" / "blake-poems.txt"),
                    "--output", str(tmp_path / "out"), "--vocab", str(UNCASED_VOCAB), "--format", "prose",
                    "--num-shards", "1", "--doc-sentences", "8"])
    assert counters["documents"] > 5 and counters["sentences"] > 50
    records = sum(1 for _ in tf.data.TFRecordDataset(str(tmp_path / "out-00000-of-00001.tfrecord")))
    assert counters["instances"] == records
    assert 0 < counters["not_next"] < records


def test_a_glob_that_matches_nothing_fails_before_any_work(tmp_path):
    with pytest.raises(FileNotFoundError, match="matches no file"):
        run(["--input", str(tmp_path / "*.txt"), "--output", str(tmp_path / "o"), "--vocab", str(UNCASED_VOCAB)])


def test_the_beam_pipeline_refuses_an_empty_corpus_before_any_work(tmp_path):
    """It used to run and write empty shards."""
    (tmp_path / "a.txt").write_bytes(b"")
    (tmp_path / "b.txt").write_bytes(b"")
    with pytest.raises(DataError, match=r"\*.txt, 2 file\(s\) matching --input, all 0 bytes .*corpus is empty"):
        run(["--input", str(tmp_path / "*.txt"), "--output", str(tmp_path / "out"), "--vocab", str(UNCASED_VOCAB)])
    assert not list(tmp_path.glob("out*"))
