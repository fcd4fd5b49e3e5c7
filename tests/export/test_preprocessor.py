"""kbert.export.preprocessor: which tokenizer a model directory or vocabulary gives (resolve_tokenizer),
the TF Hub preprocessor module built in-process (build_preprocessor_module: ids, word pieces,
offsets, special tokens and packing of 1-3 segments against ids read off the vocabulary by hand;
every bert_pack_inputs form traced before the save; the words-in form of a MeCab tokenizer), and
the exported SavedModel's signature and marker (the session's uncased preprocessor export). Loading
that export in a TensorFlow-only process is tests/text/test_preprocessor.py's."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf

from conftest import SHARED, UNCASED_VOCAB
from kbert.export.preprocessor import MAX_PACKED_SEGMENTS, build_preprocessor_module, resolve_tokenizer
from kbert.random_model import VOCAB
from kbert.text import BertPreprocessor

CLS, SEP, PAD = VOCAB.index("[CLS]"), VOCAB.index("[SEP]"), VOCAB.index("[PAD]")
TEXTS = ["The quick brown fox.", "a zebra"]
WORDS = [["the", "quick", "brown", "fox", "."], ["a", "zebra"]]
PIECES = {"zebra": ["z", "##e", "##b", "##r", "##a"]}  # the built-in vocabulary spells it letter by letter


def ids_of(word) -> list:
    return [VOCAB.index(p) for p in PIECES.get(word, [word])]


def packed(segments: list[list[int]], seq_length: int) -> tuple[list, list, list]:
    """[CLS] A [SEP] B [SEP] ..., type i on segment i (its [SEP] included), padded: written out."""
    ids, types = [CLS], [0]
    for i, segment in enumerate(segments):
        ids += segment + [SEP]
        types += [i] * (len(segment) + 1)
    pad = seq_length - len(ids)
    return ids + [PAD] * pad, [1] * len(ids) + [0] * pad, types + [0] * pad


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    """kbert.random_model's small vocabulary (a bare vocab.txt: uncased WordPiece)."""
    path = tmp_path_factory.mktemp("export_preprocessor") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def module(vocab_file):
    return build_preprocessor_module(BertPreprocessor(resolve_tokenizer(vocab_file), seq_length=16))


def test_resolve_tokenizer(tmp_path):
    """A model directory's spec (legacy do_lower_case or "tokenizer"), a bare vocabulary or model file, overrides."""
    shutil.copyfile(UNCASED_VOCAB, tmp_path / "vocab.txt")

    def described(path, **kw):
        tok = resolve_tokenizer(path, **kw)
        return tok.spec.type, tok.lower_case, tok.asset_files

    files = {"vocab.txt": str(tmp_path / "vocab.txt")}
    assert described(tmp_path) == ("wordpiece", True, files)
    (tmp_path / "kbert.json").write_text(json.dumps({"do_lower_case": False, "heads": {}}), encoding="utf-8")
    assert described(tmp_path) == ("wordpiece", False, files)
    assert described(tmp_path, lower_case=True)[1] is True
    assert described(tmp_path / "vocab.txt") == ("wordpiece", True, {"vocab.txt": str((tmp_path / "vocab.txt").resolve())})
    spm = SHARED / "vocab" / "ja-sentencepiece" / "spm.model"
    assert described(spm, lower_case=False, tokenizer_type="sentencepiece") == ("sentencepiece", False,
                                                                                {"spm.model": str(spm.resolve())})
    with pytest.raises(FileNotFoundError, match="neither"):
        resolve_tokenizer(tmp_path / "missing")
    (tmp_path / "vocab.txt").unlink()
    with pytest.raises(FileNotFoundError, match=f"model directory {tmp_path} has no vocab.txt "):
        resolve_tokenizer(tmp_path)


@pytest.mark.slow
def test_the_call_packs_the_texts_ids(module):
    out = module.__call__(tf.constant(TEXTS))  # an attribute: the saved object is callable
    assert sorted(out) == ["input_mask", "input_type_ids", "input_word_ids"]
    for row, words in enumerate(WORDS):
        ids, mask, types = packed([[i for w in words for i in ids_of(w)]], 16)
        assert out["input_word_ids"][row].numpy().tolist() == ids
        assert out["input_mask"][row].numpy().tolist() == mask
        assert out["input_type_ids"][row].numpy().tolist() == types
    assert all(out[k].dtype == tf.int32 for k in out)


@pytest.mark.slow
def test_tokenize_offsets_and_special_tokens(module, vocab_file):
    tokens = module.tokenize.__call__(tf.constant(TEXTS))
    assert tokens.to_list() == [[ids_of(w) for w in words] for words in WORDS]  # [batch, words, pieces]
    ids, starts, ends = module.tokenize_with_offsets(tf.constant(TEXTS))
    assert ids.to_list() == tokens.to_list()
    for row, (text, words) in enumerate(zip(TEXTS, WORDS)):
        lower, at, spans = text.lower().encode(), 0, []
        for word in words:  # byte offsets of each piece, found in the text by hand
            at = lower.index(word.encode(), at)
            pieces = PIECES.get(word, [word])
            spans.append([(at + k, at + k + len(p.removeprefix("##"))) for k, p in
                          zip(np.cumsum([0] + [len(p.removeprefix("##")) for p in pieces[:-1]]), pieces)])
            at += len(word)
        assert [list(zip(s, e)) for s, e in zip(starts[row].to_list(), ends[row].to_list())] == spans
    special = {k: int(v) for k, v in module.tokenize.get_special_tokens_dict().items()}
    assert special == {"vocab_size": len(VOCAB), "padding_id": PAD, "start_of_sequence_id": CLS,
                       "end_of_segment_id": SEP, "mask_id": VOCAB.index("[MASK]")}
    # TF Hub's attributes: the vocabulary file, the case, the default length
    assert module.vocab_file.asset_path.numpy().decode() == str(vocab_file.resolve())
    assert bool(module.do_lower_case.numpy()) and int(module.seq_length.numpy()) == 16


def test_bert_pack_inputs_takes_one_to_three_segments_traced_before_the_save(module):
    a, b, c = (module.tokenize.__call__(tf.constant([t])) for t in ["the fox", "a zebra", "the dog"])
    traces = module.bert_pack_inputs.experimental_get_tracing_count()
    assert traces == MAX_PACKED_SEGMENTS * 2 * 2  # 1-3 segments, rank 3 and 2, with and without seq_length
    got = module.bert_pack_inputs([a, b, c], seq_length=tf.constant(14))
    ids, mask, types = packed([ids_of("the") + ids_of("fox"), ids_of("a") + ids_of("zebra"),
                               ids_of("the") + ids_of("dog")], 14)
    assert got["input_word_ids"].numpy().tolist() == [ids]
    assert got["input_type_ids"].numpy().tolist() == [types] and got["input_mask"].numpy().tolist() == [mask]
    # rank 2 (flat ids), two segments, truncated round robin: budget 8 - 3 = 5 -> 3 of A, 2 of B
    flat = [x.merge_dims(1, 2) for x in (b, c)]
    got = module.bert_pack_inputs(flat, seq_length=tf.constant(8))
    ids, _, types = packed([(ids_of("a") + ids_of("zebra"))[:3], (ids_of("the") + ids_of("dog"))[:2]], 8)
    assert got["input_word_ids"].numpy().tolist() == [ids] and got["input_type_ids"].numpy().tolist() == [types]
    module.bert_pack_inputs([a])
    assert module.bert_pack_inputs.experimental_get_tracing_count() == traces  # no form traced anew


@pytest.mark.slow  # a second module traced whole: ~4 s on 2 cores
def test_a_mecab_tokenizer_takes_words():
    """A tokenizer with a Python step: __call__ and tokenize take [batch, words] (MeCab's split, padded
    with ""), joined in the graph into what pre_tokenize gives in Python; no offsets into raw text."""
    from kbert.tasks.core.words_inputs import words_request
    from kbert.text import TokenizerSpec, create_tokenizer

    tokenizer = create_tokenizer(TokenizerSpec(type="mecab-wordpiece", lower_case=False, vocab_file=str(
        SHARED / "weights" / "ja-tiny-random-bert" / "vocab.txt")))
    preprocessor = BertPreprocessor(tokenizer, seq_length=24)
    module = build_preprocessor_module(preprocessor)
    assert not hasattr(module, "tokenize_with_offsets")
    texts = ["吾輩は猫である。", "名前はまだ無い。どこで生れたかとんと見当がつかぬ。"]
    words = words_request(tokenizer, {"text": texts})["words"]
    assert words[0][-1] == "" and "" not in words[1]  # padded rows
    got = module.__call__(tf.constant(words))
    want = preprocessor(tf.constant(texts))  # the Python path on the raw text (eager: MeCab runs)
    for key in want:
        np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())
    assert module.tokenize.__call__(tf.constant(words)).to_list() == tokenizer.tokenize(texts).to_list()
    with pytest.raises((ValueError, TypeError)):  # a flat batch of raw text is not words
        module.__call__(tf.constant(texts))


def test_the_export_has_tf_hubs_signature_and_kbert_s_marker(uncased_preprocessor_export):
    """conftest's export (the CLI's ``export preprocessor VOCAB OUT --seq-length 64``): loaded here."""
    from kbert.export.serving import EXPORT_MARKER

    sm = tf.saved_model.load(str(uncased_preprocessor_export))
    serving = sm.signatures["serving_default"]
    assert list(serving.structured_input_signature[1]) == ["text"]
    out = serving(text=tf.constant(["hello world"]))
    vocab = UNCASED_VOCAB.read_text(encoding="utf-8").splitlines()
    expected = [vocab.index(t) for t in ("[CLS]", "hello", "world", "[SEP]")]
    assert out["input_word_ids"].numpy().tolist() == [expected + [0] * 60]
    for endpoint in ("serve", "serving_default"):  # the Keras endpoints (TFSMLayer) call the same graph
        np.testing.assert_array_equal(getattr(sm, endpoint)(tf.constant(["hello world"]))["input_word_ids"],
                                      out["input_word_ids"])
    marker = json.loads((uncased_preprocessor_export / "assets.extra" / EXPORT_MARKER).read_text(encoding="utf-8"))
    assert marker == {"kind": "preprocessor", "source": str(UNCASED_VOCAB)}
