"""kbert.random_model: the random model directory's files reload (config, vocabulary, tokenizer, encoder
and heads) with BERT-Tiny's shapes; the seed decides the weights; an existing directory is reused
as it is; options and refusals."""

import json

import numpy as np
import pytest

from kbert.random_model import VOCAB, WORDS, random_model_dir


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return random_model_dir(tmp_path_factory.mktemp("random_model") / "tiny")


def weights(model_dir) -> dict:
    from kbert.model_dir import load_encoder

    return {v.path: np.asarray(v.numpy()) for v in load_encoder(model_dir).weights}


def test_the_files_reload_with_bert_tinys_shapes(model_dir):
    from kbert.model_dir import load_encoder, load_heads
    from kbert.text.registry import load_tokenizer

    assert sorted(p.name for p in model_dir.iterdir()) == [
        "bert_config.json", "encoder.weights.h5", "kbert.json", "mlm.weights.h5", "nsp.weights.h5", "vocab.txt"]
    assert (model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines() == VOCAB
    config = json.loads((model_dir / "bert_config.json").read_text(encoding="utf-8"))
    # BERT-Tiny (Turc et al.: L=2, H=128, A=2, intermediate 4H), the built-in vocabulary
    assert {k: config[k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
                                   "vocab_size", "max_position_embeddings")} == {
        "num_hidden_layers": 2, "hidden_size": 128, "num_attention_heads": 2, "intermediate_size": 512,
        "vocab_size": len(VOCAB), "max_position_embeddings": 128}
    encoder = load_encoder(model_dir)
    shapes = {tuple(v.shape) for v in encoder.weights}
    assert {(len(VOCAB), 128), (128, 128), (2, 128), (128, 512), (512, 128)} <= shapes
    out = encoder({"input_word_ids": np.array([[2, 20, 3, 0]], np.int32), "input_mask": np.array([[1, 1, 1, 0]], np.int32),
                   "input_type_ids": np.zeros((1, 4), np.int32)}, training=False)
    assert out["sequence_output"].shape == (1, 4, 128) and out["pooled_output"].shape == (1, 128)
    heads = load_heads(model_dir, encoder.config)
    assert sorted(heads) == ["mlm", "nsp"]
    # the tokenizer it names: uncased WordPiece over VOCAB, every built-in word one token
    tokenizer = load_tokenizer(model_dir)
    assert tokenizer.lower_case and tokenizer.get_vocabulary() == VOCAB
    ids = tokenizer.tokenize_flat([" ".join(WORDS).upper()]).to_list()[0]
    assert ids == [VOCAB.index(w) for w in WORDS]
    assert tokenizer.tokenize_flat(["zebra"]).to_list()[0] == [VOCAB.index(p) for p in ("z", "##e", "##b", "##r", "##a")]


def test_the_vocabulary_is_a_valid_wordpiece_vocabulary():
    assert len(VOCAB) == len(set(VOCAB))
    assert VOCAB[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    # every lower-case word can be spelt: each letter as a first piece and as a continuation
    letters = "abcdefghijklmnopqrstuvwxyz"
    assert set(letters) <= set(VOCAB) and {f"##{c}" for c in letters} <= set(VOCAB)


def test_the_seed_decides_the_weights(model_dir, tmp_path):
    again = weights(random_model_dir(tmp_path / "same"))
    other = weights(random_model_dir(tmp_path / "other", seed=1, heads=False))
    first = weights(model_dir)
    assert again.keys() == first.keys() == other.keys()
    for name in first:
        np.testing.assert_array_equal(again[name], first[name])
    random = [name for name in first if first[name].std() > 0]  # not the zero biases or unit gammas
    assert random and all(not np.array_equal(other[name], first[name]) for name in random)
    # heads=False: no head files, none listed
    assert not (tmp_path / "other" / "mlm.weights.h5").exists() and not (tmp_path / "other" / "nsp.weights.h5").exists()
    assert not json.loads((tmp_path / "other" / "kbert.json").read_text(encoding="utf-8")).get("heads")


def test_an_existing_directory_is_returned_unchanged(model_dir):
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in model_dir.iterdir()}
    assert random_model_dir(model_dir, preset="mini", seed=5, heads=False) == model_dir
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in model_dir.iterdir()} == before


def test_preset_and_config_fields(tmp_path):
    path = random_model_dir(str(tmp_path / "mini"), preset="mini", heads=False, max_position_embeddings=64,
                            hidden_act="relu")
    assert path == tmp_path / "mini"
    config = json.loads((path / "bert_config.json").read_text(encoding="utf-8"))
    assert (config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"]) == (4, 256, 4)
    assert config["max_position_embeddings"] == 64 and config["hidden_act"] == "relu"
    assert config["vocab_size"] == len(VOCAB)


def test_an_unknown_preset_is_refused_and_nothing_written(tmp_path):
    from kbert.config import ConfigError

    with pytest.raises(ConfigError, match="unknown preset 'huge'; expected one of tiny, mini"):
        random_model_dir(tmp_path / "huge", preset="huge")
    assert not (tmp_path / "huge").exists()
