"""python -m kbert.bench serve --saved-model (kbert/bench/serve_bench.py): what it says without a
model, and its table on a string signature (no timing assertions)."""

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
