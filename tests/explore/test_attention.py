"""Attention probabilities ready to draw (kbert/explore/attention.py): the shape checks and the
--layer/--head selection every drawing goes through, and ``kbert explore attention`` end to end on a tiny
model, in this process through kbert.cli_support.run (the encoder's probabilities, the page and PNG it
writes, its one-line error)."""

import json

import numpy as np
import pytest

from fixtures.attention_maps import TOKENS, PageSpans, synthetic_attention
from kbert.explore.attention import select
from kbert.explore.attention_html import render_attention_html


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="covers 10 tokens but 3 token labels"):
        render_attention_html(TOKENS[:3], synthetic_attention())
    with pytest.raises(ValueError, match=r"\[layers, heads, seq, seq\]"):
        render_attention_html(TOKENS, synthetic_attention()[0])
    with pytest.raises(ValueError, match="--layer 5 is out of range: the model has layers 0..1"):
        select(synthetic_attention(), layer=5)


def _explore(*args):
    from fixtures.cli import run_command

    return run_command("explore", *args)


@pytest.mark.slow
def test_attention_cli_end_to_end(tiny_model_dir, tmp_path):
    from kbert.explore.attention import encoder_attentions
    from kbert.model_dir import load_encoder

    encoder = load_encoder(tiny_model_dir)
    ids = {"input_word_ids": np.array([[101, 1996, 2158, 102, 0]], np.int32),
           "input_mask": np.array([[1, 1, 1, 1, 0]], np.int32), "input_type_ids": np.zeros((1, 5), np.int32)}
    probs = encoder_attentions(encoder, ids)
    config = encoder.config
    assert probs.shape == (config.num_hidden_layers, 1, config.num_attention_heads, 5, 5)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    assert np.abs(probs[..., 4]).max() == 0.0  # the padded key gets nothing

    out, png = tmp_path / "a.html", tmp_path / "a.png"
    run = _explore("attention", tiny_model_dir, "The man went to the store.", "He bought milk.",
                   "--out", out, "--png", png)
    assert run.status == 0, run.err[-3000:]
    tokens = ["[CLS]", "the", "man", "went", "to", "the", "store", ".", "[SEP]", "he", "bought", "milk", ".", "[SEP]"]
    spans = PageSpans()
    spans.feed(out.read_text(encoding="utf-8"))
    assert spans.spans["tok query"] == tokens
    assert png.stat().st_size > 10_000
    run = _explore("attention", tiny_model_dir, "hello", "--out", out, "--layer", "1", "--head", "0")
    assert run.status == 0, run.err[-3000:]
    data = json.loads(out.read_text(encoding="utf-8").split('id="attention-data">')[1].split("</script>")[0])
    assert data["layers"] == [1] and data["heads"] == [0]
    run = _explore("attention", tiny_model_dir, "hello", "--out", out, "--layer", "9")
    assert run.status == 1 and "--layer 9 is out of range" in run.err
    assert run.err.startswith("kbert explore: error: "), run.err
