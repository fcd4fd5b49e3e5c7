"""The tokenizer spec in kbert.json: round trip, directories written before it, bad values."""

import json
import shutil

import pytest

from conftest import UNCASED_VOCAB
from kbert.model_dir import ModelDirError, read_tokenizer_spec, record_tokenizer_spec, save_model_dir
from kbert.text import BertTokenizer, TokenizerSpec, load_tokenizer
from kbert.text.registry import as_tokenizer
from kbert.text.spec import TokenizerSpecError


def _metadata(path):
    return json.loads((path / "kbert.json").read_text(encoding="utf-8"))


def test_spec_round_trips_through_kbert_json(tmp_path):
    spec = TokenizerSpec(type="mecab-wordpiece", lower_case=False, vocab_file="vocab.txt",
                         options={"mecab_dic": "unidic_lite", "word_tokenizer": "mecab"})
    record_tokenizer_spec(tmp_path, spec)
    data = _metadata(tmp_path)
    assert data["tokenizer"] == {"type": "mecab-wordpiece", "lower_case": False, "vocab_file": "vocab.txt",
                                 "mecab_dic": "unidic_lite", "word_tokenizer": "mecab"}
    assert data["do_lower_case"] is False  # still written for readers that only know this field
    assert read_tokenizer_spec(tmp_path) == spec


def test_save_model_dir_records_the_tokenizer_spec(tmp_path):
    from kbert import BertConfig, BertEncoder

    tokenizer = BertTokenizer(UNCASED_VOCAB, lower_case=False)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=16)
    save_model_dir(tmp_path / "m", BertEncoder(config), tokenizer=tokenizer)
    data = _metadata(tmp_path / "m")
    assert data["tokenizer"] == {"type": "wordpiece", "lower_case": False, "vocab_file": "vocab.txt"}
    assert data["do_lower_case"] is False
    assert (tmp_path / "m" / "vocab.txt").read_bytes() == UNCASED_VOCAB.read_bytes()
    loaded = load_tokenizer(tmp_path / "m")
    assert type(loaded) is BertTokenizer and loaded.lower_case is False
    assert loaded.get_vocabulary() == tokenizer.get_vocabulary()
    # A tokenizer built from a token list writes its vocabulary.
    listed = BertTokenizer(tokenizer.get_vocabulary(), lower_case=True)
    save_model_dir(tmp_path / "l", BertEncoder(config), tokenizer=listed)
    assert (tmp_path / "l" / "vocab.txt").read_bytes() == UNCASED_VOCAB.read_bytes()
    assert read_tokenizer_spec(tmp_path / "l") == TokenizerSpec(lower_case=True)
    # The tokenizer must fit the embeddings.
    small = BertTokenizer(tokenizer.get_vocabulary()[:-1])
    with pytest.raises(ModelDirError, match="30521 tokens but the encoder's vocab_size is 30522"):
        save_model_dir(tmp_path / "s", BertEncoder(config), tokenizer=small)


@pytest.mark.parametrize("lower_case", [True, False])
def test_directory_written_before_the_spec_still_loads(tmp_path, lower_case):
    """kbert.json with only do_lower_case (as every earlier version wrote it) reads as WordPiece."""
    shutil.copyfile(UNCASED_VOCAB, tmp_path / "vocab.txt")
    (tmp_path / "kbert.json").write_text(json.dumps({"format": 1, "do_lower_case": lower_case, "heads": {}}))
    assert read_tokenizer_spec(tmp_path) == TokenizerSpec(type="wordpiece", lower_case=lower_case)
    tokenizer = load_tokenizer(tmp_path)
    reference = BertTokenizer(UNCASED_VOCAB, lower_case=lower_case)
    text = ["Héllo World, unaffable CAFÉ"]
    assert tokenizer.tokenize(text).to_list() == reference.tokenize(text).to_list()
    assert tokenizer.asset_files == {"vocab.txt": str(tmp_path / "vocab.txt")}
    # No kbert.json at all (a bare Google directory): uncased WordPiece, as before.
    (tmp_path / "kbert.json").unlink()
    assert read_tokenizer_spec(tmp_path) == TokenizerSpec()


def test_unknown_tokenizer_type_names_the_file_and_value(tmp_path):
    shutil.copyfile(UNCASED_VOCAB, tmp_path / "vocab.txt")
    (tmp_path / "kbert.json").write_text(json.dumps(
        {"format": 1, "tokenizer": {"type": "byte-bpe", "lower_case": True}, "heads": {}}))
    with pytest.raises(ModelDirError) as e:
        load_tokenizer(tmp_path)
    message = str(e.value)
    assert str(tmp_path / "kbert.json") in message and "'byte-bpe'" in message and "wordpiece" in message


@pytest.mark.parametrize("tokenizer, field, value", [
    ({"type": "wordpiece", "lower_case": "yes"}, "lower_case", "'yes'"),
    ({"type": "", "lower_case": True}, "type", "''"),
    ({"type": "wordpiece", "vocab_file": 3}, "vocab_file", "3"),
    ("wordpiece", "tokenizer", "'wordpiece'"),
])
def test_bad_spec_fields_name_the_file_field_and_value(tmp_path, tokenizer, field, value):
    (tmp_path / "kbert.json").write_text(json.dumps({"format": 1, "tokenizer": tokenizer, "heads": {}}))
    with pytest.raises(ModelDirError) as e:
        read_tokenizer_spec(tmp_path)
    message = str(e.value)
    assert str(tmp_path / "kbert.json") in message and field in message and value in message


def test_do_lower_case_contradicting_the_spec_is_an_error(tmp_path):
    (tmp_path / "kbert.json").write_text(json.dumps(
        {"format": 1, "do_lower_case": True, "tokenizer": {"type": "wordpiece", "lower_case": False}, "heads": {}}))
    with pytest.raises(ModelDirError, match="contradicts"):
        read_tokenizer_spec(tmp_path)


def test_spec_options_may_not_repeat_fields():
    with pytest.raises(TokenizerSpecError, match="repeat"):
        TokenizerSpec(options={"type": "x"})
    assert TokenizerSpec.from_json({"type": "sentencepiece", "vocab_file": "spm.model", "alpha": 0.1}).options == {
        "alpha": 0.1}


def test_as_tokenizer_keeps_objects_and_builds_wordpiece_from_a_vocabulary():
    tokenizer = BertTokenizer(UNCASED_VOCAB, lower_case=False)
    assert as_tokenizer(tokenizer) is tokenizer
    with pytest.raises(ValueError, match="contradicts"):
        as_tokenizer(tokenizer, lower_case=True)
    built = as_tokenizer(str(UNCASED_VOCAB), lower_case=False)
    assert type(built) is BertTokenizer and built.lower_case is False
    with pytest.raises(ValueError, match="needs a tokenizer"):
        as_tokenizer(None)


def test_command_line_flags_give_the_spec(tmp_path):
    import argparse

    from kbert.cli_support import add_tokenizer_arguments
    from kbert.text.registry import tokenizer_spec_for, tokenizer_types

    parser = argparse.ArgumentParser()
    add_tokenizer_arguments(parser, tokenizer_types())

    def tokenizer_spec_from_args(args):  # what the commands and pipelines do with the parsed flags
        return tokenizer_spec_for(args.vocab, cased=args.cased, tokenizer_type=args.tokenizer, directory=args.model_dir)

    spec, directory = tokenizer_spec_from_args(parser.parse_args(["--vocab", str(UNCASED_VOCAB), "--cased"]))
    assert spec == TokenizerSpec(lower_case=False, vocab_file=str(UNCASED_VOCAB)) and directory is None
    record_tokenizer_spec(tmp_path, TokenizerSpec(type="sentencepiece", lower_case=True, vocab_file="spm.model"))
    spec, directory = tokenizer_spec_from_args(parser.parse_args(["--model-dir", str(tmp_path)]))
    assert (spec.type, spec.lower_case, spec.vocab_file, directory) == ("sentencepiece", True, "spm.model", str(tmp_path))
    spec, _ = tokenizer_spec_from_args(parser.parse_args(["--model-dir", str(tmp_path), "--cased",
                                                           "--tokenizer", "wordpiece"]))
    assert (spec.type, spec.lower_case) == ("wordpiece", False)
    with pytest.raises(TokenizerSpecError, match="--vocab or --model-dir is required"):
        tokenizer_spec_from_args(parser.parse_args([]))


def test_kbert_vocab_records_the_spec_beside_the_vocabulary(tmp_path):
    from kbert.commands.vocab import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat on the mat. " * 50 + "Dogs bark loudly at cats. " * 50, encoding="utf-8")
    (tmp_path / "out").mkdir()
    assert main(["--input", str(corpus), "--size", "60", "--min-count", "1", "--cased",
                 "--out", str(tmp_path / "out" / "my-vocab.txt")]) == 0
    assert read_tokenizer_spec(tmp_path / "out") == TokenizerSpec(lower_case=False, vocab_file="my-vocab.txt")
    tokenizer = load_tokenizer(tmp_path / "out")
    assert tokenizer.lower_case is False and tokenizer.token_to_id("The") > 0


@pytest.mark.slow
def test_pretraining_data_pipeline_takes_the_tokenizer_of_a_model_directory(tmp_path):
    """--model-dir DIR gives the same instances as --vocab with the same file and case."""
    import tensorflow as tf

    from conftest import SHARED
    from pipelines.pretraining_data import run

    corpus = tmp_path / "corpus.txt"
    corpus.write_text((SHARED / "corpus" / "en" / "emma.txt").read_text(encoding="utf-8")[:20000], encoding="utf-8")
    shutil.copyfile(UNCASED_VOCAB, tmp_path / "vocab.txt")
    record_tokenizer_spec(tmp_path, TokenizerSpec(lower_case=True))
    common = ["--input", str(corpus), "--format", "prose", "--num-shards", "1"]
    counters_vocab = run([*common, "--output", str(tmp_path / "a"), "--vocab", str(UNCASED_VOCAB)])
    counters_dir = run([*common, "--output", str(tmp_path / "b"), "--model-dir", str(tmp_path)])
    assert counters_vocab == counters_dir and counters_dir["instances"] > 10

    def records(prefix):
        return sorted(r.numpy() for r in tf.data.TFRecordDataset(str(next(tmp_path.glob(f"{prefix}-*.tfrecord")))))

    assert records("a") == records("b")
