"""python -m kbert.bench serve --saved-model (kbert/bench/serve_bench.py): what it says without a
model, its table on a string signature (no timing assertions), and how it reads the sentences and
checks the signature it calls."""

from __future__ import annotations

import re

import pytest

from conftest import SHARED, UNCASED_VOCAB
from fixtures.bench_cli import run_bench


def test_serve_bench_without_a_model_says_what_it_needs(capsys):
    code, out = run_bench(capsys, "serve")
    assert code == 2
    assert "--saved-model" in out and "Nothing was measured" in out


@pytest.mark.slow
def test_serve_bench_on_a_string_signature(capsys, tmp_path):
    import tensorflow as tf

    from kbert import BertConfig, BertEncoder
    from kbert.text import BertPreprocessor

    pre = BertPreprocessor(UNCASED_VOCAB, seq_length=16)
    encoder = BertEncoder(BertConfig.preset("tiny", max_position_embeddings=16))
    head = tf.Variable(tf.random.normal([128, 2]))

    class Classifier(tf.Module):
        def __init__(self):
            super().__init__()
            self.pre, self.encoder, self.head = pre, encoder, head

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def classify(self, sentence):
            pooled = self.encoder(self.pre(sentence), training=False)["pooled_output"]
            return {"label": tf.argmax(tf.matmul(pooled, self.head), -1)}

    module = Classifier()
    tf.saved_model.save(module, str(tmp_path / "sst2"), signatures={"serving_default": module.classify})
    code, out = run_bench(capsys, "serve", "--saved-model", str(tmp_path / "sst2"), "--batch-sizes", "1,4",
                     "--requests", "3", "--rounds", "1", "--warmup", "1",
                     "--text", str(SHARED / "glue" / "SST-2" / "dev.tsv"))
    assert code == 0
    lines = out.strip().splitlines()
    assert any(re.match(r"batch 1\s+[\d.]+\s+[\d.]+", line) for line in lines)
    assert any(re.match(r"batch 4\s+[\d.]+\s+[\d.]+", line) for line in lines)
    assert "sentence -> label" in out
    assert lines[-1].startswith("worst ratio kbert / fastest peer: n/a")


def test_sentences_come_from_a_tsv_column_or_lines_repeated_to_the_count(tmp_path):
    from kbert.bench.serve_bench import read_sentences

    tsv = tmp_path / "dev.tsv"
    tsv.write_text("label\tsentence\n1\tgood film\n0\t\n0\tbad \"plot\n", encoding="utf-8")
    assert read_sentences(tsv, 5) == ["good film", 'bad "plot'] * 2 + ["good film"]  # empty cells skipped
    lines = tmp_path / "texts.txt"
    lines.write_text("  one  \n\ntwo\n", encoding="utf-8")
    assert read_sentences(lines, 1) == ["one"] and read_sentences(lines, 3) == ["one", "two", "one"]
    (tmp_path / "empty.txt").write_text("\n\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"--text .*empty\.txt has no sentences"):
        read_sentences(tmp_path / "empty.txt", 3)


def test_the_signature_must_take_one_string_tensor(tmp_path):
    import tensorflow as tf

    from kbert.bench.serve_bench import string_signature

    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def classify(self, sentence):
            return {"length": tf.strings.length(sentence)}

        @tf.function(input_signature=[tf.TensorSpec([None, 8], tf.int32)])
        def ids(self, input_word_ids):
            return {"sum": tf.reduce_sum(input_word_ids, -1)}

    model = Model()
    tf.saved_model.save(model, str(tmp_path / "m"), signatures={"serving_default": model.classify,
                                                               "ids": model.ids})
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    fn, name = string_signature(loaded, "serving_default")
    assert name == "sentence" and fn(sentence=tf.constant(["abc", "de"]))["length"].numpy().tolist() == [3, 2]
    with pytest.raises(SystemExit, match=r"signature 'ids' must take exactly one string tensor; it takes "
                                         r"input_word_ids: int32\(None, 8\)"):
        string_signature(loaded, "ids")
    with pytest.raises(SystemExit, match="has no signature 'classify'; it has: (serving_default, ids|ids, serving_default)"):
        string_signature(loaded, "classify")
