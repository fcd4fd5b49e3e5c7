"""kbert.convert.to_hf: the names, config and tokenizer files of a Hugging Face folder, checked against
the reader of the other direction (kbert.convert.hf, kbert.convert.tokenizer_source) and transformers'
own tables."""

import json

import numpy as np
import pytest

from kbert.config import ACTIVATIONS, BertConfig
from kbert.convert import hf
from kbert.convert.names import ConversionError
from kbert.convert.to_hf import TO_HF_ACTIVATIONS, hf_config, hf_keys, hf_state, tokenizer_files
from kbert.convert.tokenizer_source import read_hf_tokenizer
from kbert.text.spec import TokenizerSpec
from conftest import UNCASED_VOCAB, require


@pytest.mark.slow
def test_every_kbert_activation_has_the_transformers_name_of_the_same_function():
    assert set(TO_HF_ACTIVATIONS) == set(ACTIVATIONS)
    for ours, theirs in TO_HF_ACTIVATIONS.items():
        assert hf.HF_ACTIVATIONS[theirs] == ours  # the reader maps it back
    transformers = require("transformers")
    import torch

    from kbert.layers.activations import get_activation

    x = np.linspace(-5, 5, 101).astype(np.float32)
    for ours, theirs in TO_HF_ACTIVATIONS.items():
        reference = transformers.activations.ACT2FN[theirs](torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(np.asarray(get_activation(ours)(x)), reference, atol=2e-6, err_msg=ours)


def test_names_are_the_readers_names_backwards():
    rng = np.random.default_rng(0)
    names = hf_keys(3)
    arrays = {name: rng.normal(size=(4, 3) if name.endswith("/kernel") else (5,)).astype(np.float32)
              for name in names}
    state = hf_state(arrays, 3, "bert.")
    assert "bert.encoder.layer.2.attention.self.query.weight" in state and "cls.predictions.bias" in state
    back = hf.hf_to_google(state, "test")
    assert set(back) == set(arrays)
    for name in arrays:
        assert np.array_equal(back[name], arrays[name]), name
    with pytest.raises(ConversionError, match="no Hugging Face name for bert/encoder/layer_3"):
        hf_state({"bert/encoder/layer_3/output/dense/bias": np.zeros(2)}, 3)


def test_config_reads_back_as_the_same_bert_config():
    config = BertConfig.preset("tiny", hidden_act="gelu_exact", max_position_embeddings=64)
    written = hf_config(config, "BertModel", 0)
    assert written["hidden_act"] == "gelu" and written["architectures"] == ["BertModel"]
    assert hf.config_from_hf(written, "config.json") == config
    assert hf_config(BertConfig.preset("tiny"), "BertModel")["hidden_act"] == "gelu_new"


@pytest.mark.parametrize("spec", [
    TokenizerSpec(lower_case=True, options={"rules": "transformers", "max_chars_per_word": 100}),
    TokenizerSpec(lower_case=False, options={"rules": "transformers", "max_chars_per_word": 100,
                                             "tokenize_chinese_chars": False}),
    TokenizerSpec(lower_case=True, options={"rules": "transformers", "max_chars_per_word": 100,
                                            "strip_accents": False}),
])
def test_wordpiece_files_read_back_as_the_same_spec(tmp_path, spec):
    files, notes = tokenizer_files(spec, UNCASED_VOCAB, 512)
    assert notes == []
    for name, data in files.items():
        (tmp_path / name).write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "vocab.txt").write_bytes(UNCASED_VOCAB.read_bytes())
    assert read_hf_tokenizer(tmp_path)[0] == spec


def test_google_rules_are_noted_and_sentencepiece_refused(tmp_path):
    _, notes = tokenizer_files(TokenizerSpec(lower_case=True), UNCASED_VOCAB, 512)
    assert any("special tokens written in the text" in n for n in notes)
    assert any("over 200 characters" in n for n in notes)
    _, notes = tokenizer_files(TokenizerSpec(lower_case=True, options={"rules": "transformers"}), UNCASED_VOCAB, 512)
    assert notes == ["tokenizer: kbert makes a word over 200 characters [UNK]; transformers over 100"]
    with pytest.raises(ConversionError, match="sentencepiece tokenizer is refused"):
        tokenizer_files(TokenizerSpec(type="sentencepiece", lower_case=False, vocab_file="spm.model"), UNCASED_VOCAB,
                        512)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\n[UNK]\n", encoding="utf-8")
    with pytest.raises(ConversionError, match="lacks .*PAD"):
        tokenizer_files(TokenizerSpec(lower_case=True), vocab, 512)
