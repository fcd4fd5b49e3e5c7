"""A Japanese (Tohoku-style) Hugging Face checkpoint converted end to end, and the tokenizers the converters refuse.

``weights/ja-tiny-random-bert`` (BertForPreTraining with BertJapaneseTokenizer, MeCab + WordPiece) and
what transformers gives for the rows of ``reference/ja_tiny_bert_inputs.json`` (``ja_tiny_bert.npz``).
"""

import json
import shutil
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import REFERENCE, SHARED, require
from fixtures.cli import run_command

require("fugashi")
require("unidic_lite")
from kbert.convert import google, hf  # noqa: E402
from kbert.convert.names import ConversionError  # noqa: E402
from kbert.convert.tokenizer_source import read_hf_tokenizer  # noqa: E402
from kbert.model_dir import load_encoder, load_heads, read_tokenizer_spec  # noqa: E402
from kbert.text.packer import BertPacker  # noqa: E402
from kbert.text.registry import load_tokenizer  # noqa: E402

JA_TINY = SHARED / "weights" / "ja-tiny-random-bert"


@pytest.fixture(scope="module")
def ja_model_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("ja") / "model"
    hf.convert(JA_TINY, out)
    return out


def test_convert_records_the_mecab_tokenizer(ja_model_dir):
    metadata = json.loads((ja_model_dir / "kbert.json").read_text(encoding="utf-8"))
    assert metadata["tokenizer"] == {"type": "mecab-wordpiece", "lower_case": False, "vocab_file": "vocab.txt",
                                     "mecab_dic": "unidic_lite"}
    assert read_tokenizer_spec(ja_model_dir).type == "mecab-wordpiece"
    assert set(metadata["heads"]) == {"mlm", "nsp"}


def test_converted_model_reproduces_transformers(ja_model_dir):
    """Raw Japanese text -> ids (pairs truncated longest_first) -> encoder and heads, as transformers."""
    spec = json.loads((REFERENCE / "ja_tiny_bert_inputs.json").read_text(encoding="utf-8"))
    expected = dict(np.load(REFERENCE / "ja_tiny_bert.npz"))
    tokenizer = load_tokenizer(ja_model_dir)
    ids = tokenizer.special_token_ids
    packer = BertPacker(spec["seq_length"], ids["start_of_sequence_id"], ids["end_of_segment_id"], ids["padding_id"])

    def segment(texts):
        return tokenizer.tokenize(texts).merge_dims(1, 2)  # raw texts: the call runs MeCab itself

    rows = spec["rows"]
    singles = [r for r in rows if "text_b" not in r]
    pairs = [r for r in rows if "text_b" in r]
    assert rows == singles + pairs and len(singles) == 24
    packed = [packer([segment([r["text_a"] for r in singles])]),
              packer([segment([r["text_a"] for r in pairs]), segment([r["text_b"] for r in pairs])])]
    inputs = {k: tf.concat([p[k] for p in packed], axis=0) for k in packed[0]}
    for key in ("input_word_ids", "input_mask", "input_type_ids"):
        np.testing.assert_array_equal(inputs[key].numpy(), expected[key], err_msg=key)

    encoder = load_encoder(ja_model_dir)
    out = encoder(inputs)
    mask = expected["input_mask"][..., None].astype(bool)
    np.testing.assert_allclose(np.where(mask, out["sequence_output"].numpy(), 0), expected["last_hidden_state"],
                               atol=1e-4)
    np.testing.assert_allclose(out["pooled_output"].numpy(), expected["pooler_output"], atol=1e-4)
    heads = load_heads(ja_model_dir, encoder.config)
    positions = tf.tile(tf.range(8)[None], [len(rows), 1])
    mlm = heads["mlm"](out["sequence_output"], positions, encoder.word_embeddings)
    np.testing.assert_allclose(mlm.numpy(), expected["mlm_logits_first8"], atol=1e-4)
    np.testing.assert_allclose(heads["nsp"](out["pooled_output"]).numpy(), expected["nsp_logits"], atol=1e-4)


def _hf_folder(tmp_path, **changes):
    folder = tmp_path / "hf"
    folder.mkdir(exist_ok=True)
    config = json.loads((JA_TINY / "tokenizer_config.json").read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    shutil.copy(JA_TINY / "vocab.txt", folder / "vocab.txt")
    return folder


@pytest.mark.parametrize("changes, field, value", [
    ({"word_tokenizer_type": "sudachi"}, "word_tokenizer_type", "sudachi"),
    ({"word_tokenizer_type": "jumanpp"}, "word_tokenizer_type", "jumanpp"),
    ({"word_tokenizer_type": None}, "word_tokenizer_type", "basic"),
    ({"subword_tokenizer_type": "sentencepiece"}, "subword_tokenizer_type", "sentencepiece"),
    ({"mecab_kwargs": {"mecab_dic": "jumandic"}}, "mecab_kwargs.mecab_dic", "jumandic"),
    ({"mecab_kwargs": {"mecab_dic": "unidic_lite", "mecab_option": "-O wakati"}}, "mecab_kwargs.mecab_option",
     "-O wakati"),
    ({"do_lower_case": True}, "do_lower_case", True),
    ({"tokenizer_class": "XLMRobertaTokenizer"}, "tokenizer_class", "XLMRobertaTokenizer"),
])
def test_tokenizers_kbert_cannot_reproduce_are_refused(tmp_path, changes, field, value):
    folder = _hf_folder(tmp_path, **changes)
    with pytest.raises(ConversionError, match=f"tokenizer_config.json: field '{field}' is {value!r}"):
        read_hf_tokenizer(folder)


def test_a_mecab_dictionary_that_is_not_installed_is_refused(tmp_path, monkeypatch):
    from kbert.text import mecab

    # mecab_kwargs without a dictionary means transformers' default, ipadic (not installed here:
    # made sure by hiding the package).
    mecab.mecab_tagger.cache_clear()
    monkeypatch.setitem(sys.modules, "ipadic", None)
    folder = _hf_folder(tmp_path, mecab_kwargs=None)
    with pytest.raises(ConversionError, match="'mecab_kwargs.mecab_dic' is 'ipadic'.*not installed.*kbert\\[ja\\]"):
        read_hf_tokenizer(folder)
    mecab.mecab_tagger.cache_clear()


def test_character_and_wordpiece_folders(tmp_path):
    spec, path = read_hf_tokenizer(_hf_folder(tmp_path, subword_tokenizer_type="character"))
    assert (spec.type, spec.lower_case, path.name) == ("mecab-character", False, "vocab.txt")
    bert = tmp_path / "bert"
    bert.mkdir()
    shutil.copy(JA_TINY / "vocab.txt", bert / "vocab.txt")
    (bert / "tokenizer_config.json").write_text('{"tokenizer_class": "BertTokenizer", "do_lower_case": false}')
    spec, _ = read_hf_tokenizer(bert)
    assert (spec.type, spec.lower_case) == ("wordpiece", False)
    spm = tmp_path / "spm"
    spm.mkdir()
    shutil.copy(SHARED / "vocab" / "ja-sentencepiece" / "spm.model", spm / "spiece.model")
    spec, path = read_hf_tokenizer(spm)
    assert (spec.type, spec.vocab_file, path.name) == ("sentencepiece", "spm.model", "spiece.model")


@pytest.mark.slow
def test_google_converter_takes_the_tokenizer_type(tmp_path, ja_model_dir):
    prefix = google.to_google(ja_model_dir, tmp_path / "ckpt" / "bert_model.ckpt")
    out = google.convert(prefix, tmp_path / "back", tokenizer="mecab-wordpiece")
    assert read_tokenizer_spec(out).to_json() == read_tokenizer_spec(ja_model_dir).to_json()
    result = run_command("convert", "google", prefix, tmp_path / "bad", "--tokenizer", "juman")
    assert result.status == 1 and "unknown tokenizer type 'juman'" in result.err


@pytest.mark.slow
def test_features_cli_reproduces_transformers_from_raw_japanese(ja_model_dir, tmp_path):
    """Issue 16's end to end: ``kbert.convert hf`` then ``python -m kbert.features`` on the raw rows."""
    spec = json.loads((REFERENCE / "ja_tiny_bert_inputs.json").read_text(encoding="utf-8"))
    rows_file = tmp_path / "rows.jsonl"
    rows_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in spec["rows"]), encoding="utf-8")
    out = tmp_path / "features.npz"
    result = run_command("features", ja_model_dir, "--input", rows_file, "--output", out,
                         "--seq-length", spec["seq_length"])
    assert result.status == 0, result.err[-3000:]
    got, ref = np.load(out), np.load(REFERENCE / "ja_tiny_bert.npz")
    for key in ("input_word_ids", "input_mask", "input_type_ids"):
        np.testing.assert_array_equal(got[key], ref[key], err_msg=key)
    np.testing.assert_allclose(got["sequence_output"], ref["last_hidden_state"], atol=1e-4)
    np.testing.assert_allclose(got["pooled_output"], ref["pooler_output"], atol=1e-4)
