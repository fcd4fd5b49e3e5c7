"""The embedding projector's files (kbert/explore/projector.py): TensorBoard's projector config, the
vectors checkpoint and the metadata TSV, token- and sentence-level, read back and compared with the
features they came from; its refusals; and the features command's --projector flags."""

import numpy as np
import pytest
import tensorflow as tf

from kbert.explore.projector import TENSOR_NAME, write_features_projector


def _features(seed=0):
    rng = np.random.default_rng(seed)
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]], np.int32)
    ids = rng.integers(5, 20, mask.shape).astype(np.int32) * mask
    return {"input_word_ids": ids, "input_mask": mask,
            "last_hidden": rng.normal(size=(3, 6, 4)).astype(np.float32) * mask[..., None]}


ROWS = [{"text_a": "first\trow"}, {"text_a": "second", "text_b": "pair\nhalf"}, {"text_a": ""}]
VOCAB = [f"tok{i}" for i in range(20)]


def _read_projector(logdir):
    from google.protobuf import text_format
    from tensorboard.plugins import projector

    config = text_format.Parse((logdir / "projector_config.pbtxt").read_text(), projector.ProjectorConfig())
    (embedding,) = config.embeddings
    assert embedding.tensor_name == TENSOR_NAME and embedding.metadata_path == "metadata.tsv"
    vectors = tf.train.load_checkpoint(str(logdir)).get_tensor(TENSOR_NAME)
    return vectors, (logdir / "metadata.tsv").read_text(encoding="utf-8").splitlines()


def test_projector_token_level(tmp_path):
    arrays = _features()
    write_features_projector(tmp_path, arrays, ROWS, VOCAB, level="token")
    vectors, lines = _read_projector(tmp_path)
    expected, labels = [], []
    for r in range(3):
        for p in range(6):
            if arrays["input_mask"][r, p]:
                expected.append(arrays["last_hidden"][r, p])
                labels.append(VOCAB[arrays["input_word_ids"][r, p]])
    np.testing.assert_array_equal(vectors, np.array(expected))
    assert lines[0] == "token\trow\tposition\ttext" and len(lines) == 1 + 13
    assert [line.split("\t")[0] for line in lines[1:]] == labels
    assert lines[1].split("\t")[1:] == ["0", "0", "first row"]
    assert lines[-1].split("\t")[3] == "(empty)"
    assert lines[5].split("\t")[3] == "second | pair half"


def test_projector_sentence_level_and_bad_input(tmp_path):
    arrays = _features()
    write_features_projector(tmp_path, arrays, ROWS, VOCAB, level="sentence")
    vectors, lines = _read_projector(tmp_path)
    for r, length in enumerate((4, 6, 3)):
        np.testing.assert_allclose(vectors[r], arrays["last_hidden"][r, :length].mean(0), rtol=1e-6)
    assert lines == ["first row", "second | pair half", "(empty)"]
    with pytest.raises(ValueError, match="3 rows of features but 2 input rows"):
        write_features_projector(tmp_path, arrays, ROWS[:2], VOCAB)
    with pytest.raises(ValueError, match="no 'sum_all_layers'"):
        write_features_projector(tmp_path, arrays, ROWS, VOCAB, layer="sum_all_layers")
    with pytest.raises(ValueError, match="level must be one of"):
        write_features_projector(tmp_path, arrays, ROWS, VOCAB, level="word")



def test_projector_flags_for_the_features_cli(tmp_path, tiny_model_dir):
    import argparse

    from kbert.commands.features import add_projector_arguments, projector_from_args

    parser = argparse.ArgumentParser()
    parser.add_argument("model_dir")
    add_projector_arguments(parser)
    arrays = _features()
    assert projector_from_args(parser.parse_args([str(tiny_model_dir)]), arrays, ROWS) is None
    args = parser.parse_args([str(tiny_model_dir), "--projector", str(tmp_path / "p"), "--projector-level", "sentence"])
    assert "tensorboard --logdir" in projector_from_args(args, arrays, ROWS)
    vectors, lines = _read_projector(tmp_path / "p")
    assert vectors.shape == (3, 4) and len(lines) == 3
