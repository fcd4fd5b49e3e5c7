"""kbert.export.tokenizer_assets: the tokenizer's files in a SavedModel, written with tf.saved_model.save
and reloaded, compared byte for byte with the files they came from (WordPiece's vocab.txt,
SentencePiece's spm.model, a further file a tokenizer lists); do_lower_case as the spec says; a
SentencePiece model that still tokenizes after the reload; and the refusal for a tokenizer that has
no file."""

import pathlib

import pytest
import tensorflow as tf

from conftest import SHARED, UNCASED_VOCAB
from kbert.export.tokenizer_assets import attach_tokenizer_assets
from kbert.random_model import VOCAB
from kbert.text import BertTokenizer
from kbert.text.spec import TokenizerSpecError

SPM = SHARED / "vocab" / "ja-sentencepiece" / "spm.model"


def saved_and_reloaded(module, folder):
    tf.saved_model.save(module, str(folder))
    return tf.saved_model.load(str(folder))


def asset_bytes(asset) -> bytes:
    return pathlib.Path(asset.asset_path.numpy().decode()).read_bytes()


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("tokenizer_assets") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("lower_case", [True, False])
def test_wordpiece_keeps_its_vocab_file_and_case(vocab_file, tmp_path, lower_case):
    module = tf.Module()
    attach_tokenizer_assets(module, BertTokenizer(vocab_file, lower_case=lower_case), "test export")
    assert not hasattr(module, "tokenizer")  # WordPiece's tables are constants of the traced graphs
    assert not hasattr(module, "tokenizer_assets")  # no file beyond the vocabulary
    reloaded = saved_and_reloaded(module, tmp_path / "sm")
    assert asset_bytes(reloaded.vocab_file) == vocab_file.read_bytes()
    assert (tmp_path / "sm" / "assets" / "vocab.txt").read_bytes() == vocab_file.read_bytes()
    assert reloaded.do_lower_case.dtype == tf.bool and bool(reloaded.do_lower_case.numpy()) is lower_case
    assert not reloaded.do_lower_case.trainable


def test_a_token_list_needs_the_file_given(vocab_file, tmp_path):
    tokenizer = BertTokenizer(list(VOCAB))
    assert tokenizer.asset_files == {}
    with pytest.raises(TokenizerSpecError, match=r"^encoder export: the 'wordpiece' tokenizer has no vocab.txt file to export "
                                         r"\(it was built from a token list\): build it from its file or a model "
                                         r"directory$"):
        attach_tokenizer_assets(tf.Module(), tokenizer, "encoder export")
    module = tf.Module()
    attach_tokenizer_assets(module, tokenizer, "encoder export", vocab_file=vocab_file)
    assert asset_bytes(saved_and_reloaded(module, tmp_path / "sm").vocab_file) == vocab_file.read_bytes()


class WithRules(BertTokenizer):
    """A tokenizer type that carries a second file (as a registered type may)."""

    rules = None

    @property
    def asset_files(self) -> dict:
        return {**super().asset_files, "rules.json": self.rules, "a_table.tsv": self.rules.with_name("table.tsv")}


def test_further_files_are_kept_by_name(vocab_file, tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text('{"rule": 1}', encoding="utf-8")
    rules.with_name("table.tsv").write_text("a\t1\n", encoding="utf-8")
    tokenizer = WithRules(vocab_file)
    tokenizer.rules = rules
    module = tf.Module()
    attach_tokenizer_assets(module, tokenizer, "test export")
    assert list(module.tokenizer_assets) == ["a_table.tsv", "rules.json"]  # sorted by name, vocab not among them
    reloaded = saved_and_reloaded(module, tmp_path / "sm")
    assert asset_bytes(reloaded.vocab_file) == vocab_file.read_bytes()
    assert {name: asset_bytes(a) for name, a in reloaded.tokenizer_assets.items()} == {
        "a_table.tsv": b"a\t1\n", "rules.json": b'{"rule": 1}'}


def test_sentencepiece_keeps_its_model_and_still_tokenizes(tmp_path):
    from kbert.text.sentencepiece import SentencePieceTokenizer

    tokenizer = SentencePieceTokenizer(str(SPM))
    module = tf.Module()
    attach_tokenizer_assets(module, tokenizer, "test export")
    assert module.tokenizer is tokenizer  # tracked: the SavedModel keeps its SentencePiece resource
    module.tokenize = tf.function(lambda text: tokenizer.tokenize_flat(text).to_tensor(-1),
                                  input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    texts = ["吾輩は猫である。名前はまだ無い。", "kbert"]
    expected = module.tokenize(tf.constant(texts)).numpy()
    reloaded = saved_and_reloaded(module, tmp_path / "sm")
    assert asset_bytes(reloaded.vocab_file) == SPM.read_bytes()
    assert pathlib.Path(reloaded.vocab_file.asset_path.numpy().decode()).name == "spm.model"
    assert bool(reloaded.do_lower_case.numpy()) is False
    assert (reloaded.tokenize(tf.constant(texts)).numpy() == expected).all()
    # a module that already tracks the tokenizer keeps its own
    owner = tf.Module()
    owner.tokenizer = "already set"
    attach_tokenizer_assets(owner, tokenizer, "test export")
    assert owner.tokenizer == "already set"


def test_a_real_vocabulary_file(tmp_path):
    """bert-base-uncased's vocab.txt, as TF Hub's BERT preprocessors carry it."""
    module = tf.Module()
    attach_tokenizer_assets(module, BertTokenizer(UNCASED_VOCAB), "test export")
    reloaded = saved_and_reloaded(module, tmp_path / "sm")
    lines = asset_bytes(reloaded.vocab_file).decode("utf-8").splitlines()
    assert lines == UNCASED_VOCAB.read_text(encoding="utf-8").splitlines() and len(lines) == 30522
