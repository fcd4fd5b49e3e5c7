"""tokenizer.json beside an ONNX export (kbert.export.onnx.tokenizer_json): written only where Hugging
Face ``tokenizers`` gives kbert's ids, checked on tests' adversarial strings and the 3,000 reference lines;
otherwise refused with the rule that differs."""

import json

import numpy as np
import pytest

from fixtures.adversarial_text import ADVERSARIAL
from conftest import REFERENCE, SHARED, UNCASED_VOCAB, require

tokenizers = require("tokenizers")

import kbert  # noqa: E402
from kbert.export.onnx.tokenizer_json import hf_ids, kbert_ids, tokenizer_file  # noqa: E402
from kbert.text import BertPreprocessor, BertTokenizer, TokenizerSpec, create_tokenizer  # noqa: E402

SEQ = 128


@pytest.fixture(scope="module")
def lines():
    return [json.loads(line) for line in (REFERENCE / "wordpiece_uncased.jsonl").read_text().splitlines()]


def single(tokenizer, seq=SEQ, extra=()):
    preprocessor = BertPreprocessor(tokenizer, seq_length=seq)
    return tokenizer_file(tokenizer, lambda batch: preprocessor([batch]), "single", seq, extra)


def loaded(result):
    assert result.text is not None, result.reason
    return tokenizers.Tokenizer.from_str(result.text)


@pytest.mark.slow
def test_google_rules_give_the_reference_ids(lines):
    """The written file, loaded back, gives google-research/bert's own ids (the reference file's) on
    all 3,000 lines: [CLS] ids [SEP], cut at the sequence length."""
    tok = loaded(single(BertTokenizer(UNCASED_VOCAB)))
    for line, encoding in zip(lines, tok.encode_batch([line["text"] for line in lines])):
        want = ([101] + line["ids"])[:SEQ - 1] + [102]
        assert encoding.ids[:len(want)] == want and sum(encoding.attention_mask) == len(want), line["text"]


@pytest.mark.slow
@pytest.mark.parametrize("options", [
    dict(lower_case=False),
    dict(lower_case=True, rules="transformers", max_chars_per_word=100),   # all-MiniLM-L6-v2's
    dict(lower_case=False, rules="tokenizers"),
    dict(lower_case=True, strip_accents=False, rules="tokenizers"),
    dict(lower_case=True, tokenize_chinese_chars=False),
])
def test_kberts_ids_on_the_adversarial_strings_and_the_reference_lines(options, lines):
    tokenizer = BertTokenizer(UNCASED_VOCAB, **options)
    texts = ADVERSARIAL + [line["text"] for line in lines]
    tok = loaded(single(tokenizer, extra=ADVERSARIAL))
    preprocessor = BertPreprocessor(tokenizer, seq_length=SEQ)
    assert hf_ids(tok, "single", texts) == kbert_ids(lambda batch: preprocessor([batch]), "single", texts)


@pytest.mark.slow
def test_a_cased_transformers_tokenizer_is_refused_naming_the_rule():
    result = single(BertTokenizer(UNCASED_VOCAB, lower_case=False, rules="transformers"))
    assert result.text is None and "never_split" in result.reason and "[MA\\u0000SK]" in result.reason


def test_a_pair_model_is_refused_where_the_pair_is_cut_otherwise():
    """kbert cuts a long pair as google-research/bert; tokenizers' longest_first gives the odd token to
    the longer text. Pairs that fit are encoded alike (the check compares them first)."""
    tokenizer = BertTokenizer(UNCASED_VOCAB)
    preprocessor = BertPreprocessor(tokenizer, seq_length=16)
    result = tokenizer_file(tokenizer, preprocessor, "pair", 16)
    assert result.text is None and "longest_first" in result.reason and "text A gets the odd token" in result.reason
    short = [("a short one", "and its pair"), ("Héllo ΑΣ", "Ｆｕｌｌ 中文")]
    tok = tokenizers.Tokenizer.from_str(single(tokenizer, 16).text)
    assert hf_ids(tok, "pair", short) == kbert_ids(preprocessor, "pair", short)


@pytest.mark.parametrize("kind", ["mecab-character", "sentencepiece"])
def test_japanese_tokenizers_are_refused_saying_why(kind):
    require("fugashi") if kind.startswith("mecab") else require("sentencepiece")
    folder = {"mecab-character": "ja-char", "sentencepiece": "ja-sentencepiece"}[kind]
    vocab = next(p for p in (SHARED / "vocab" / folder).iterdir() if p.suffix in (".txt", ".model"))
    tokenizer = create_tokenizer(TokenizerSpec(type=kind, lower_case=False, vocab_file=str(vocab)))
    result = single(tokenizer)
    assert result.text is None and kind in result.reason
    assert ("MeCab" in result.reason) == kind.startswith("mecab")


def test_span_qa_and_windows_are_refused(tmp_path):
    base = kbert.random_model_dir(tmp_path / "tiny")
    from kbert.export.onnx.tokenizer_json import Unexpressible, request_kind

    with pytest.raises(Unexpressible, match="run_squad.py's windows"):
        request_kind(kbert.SpanQuestionAnswerer.from_model_dir(base, seq_length=32, max_query_length=8))
    with pytest.raises(Unexpressible, match="windows"):
        request_kind(kbert.TextClassifier.from_model_dir(base, num_classes=2, seq_length=32,
                                                         long_documents="windows"))


def test_a_taggers_words_are_encoded_as_kbert_packs_them(tmp_path):
    """Pre-split words (is_split_into_words): the same ids as the tagger's features, and each token's
    word_id names its word (the first piece of a word carries its tag)."""
    model = kbert.TokenTagger.from_model_dir(kbert.random_model_dir(tmp_path / "tiny"), label_names=["O", "B-X"],
                                             seq_length=24)
    result = tokenizer_file(model.tokenizer, lambda words: model.features(model.pieces(words=words))[0], "words", 24)
    tok = loaded(result)
    words = ["the", "U.S.", "fox", "jumped"]
    encoding = tok.encode(words, is_pretokenized=True)
    _, _, word_ids = model.features(model.pieces(words=[words]))
    first = np.asarray(word_ids)[0][: len(encoding.ids)]
    hf_first = [w if w is not None and (i == 0 or encoding.word_ids[i - 1] != w) else -1
                for i, w in enumerate(encoding.word_ids)]
    assert first.tolist() == hf_first
