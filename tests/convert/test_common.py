"""Writing a model directory from Google-named arrays (kbert.convert.common): the weights arrive as
given, a vocabulary that does not fit is refused before anything is written, and an output that
exists is refused unless empty or ``overwrite``."""

import numpy as np
import pytest

from kbert.convert.common import check_output_dir, write_model_dir
from kbert.convert.names import ConversionError, encoder_variables, export_arrays
from kbert.model_dir import load_encoder, read_tokenizer_spec
from conftest import UNCASED_VOCAB


@pytest.fixture(scope="module")
def source(tiny_model_dir):
    encoder = load_encoder(tiny_model_dir)
    return encoder.config, export_arrays(encoder_variables(encoder)), read_tokenizer_spec(tiny_model_dir)


def test_the_written_directory_holds_the_arrays(source, tmp_path):
    config, arrays, spec = source
    rng = np.random.default_rng(0)
    arrays = {k: rng.normal(size=v.shape).astype("float32") for k, v in arrays.items()}
    out = write_model_dir(config, arrays, UNCASED_VOCAB, tmp_path / "m", spec, "test arrays")
    loaded = encoder_variables(load_encoder(out))
    assert set(loaded) == set(arrays)
    for name, variable in loaded.items():
        np.testing.assert_array_equal(variable.numpy(), arrays[name], err_msg=name)
    assert read_tokenizer_spec(out).lower_case == spec.lower_case


def test_a_vocabulary_of_another_size_is_refused_before_writing(source, tmp_path):
    config, arrays, spec = source
    short = tmp_path / "vocab.txt"
    short.write_text("".join(f"t{i}\n" for i in range(7)))
    with pytest.raises(ConversionError, match=rf"7 tokens.*{config.vocab_size} rows.*vocab_size={config.vocab_size}"):
        write_model_dir(config, arrays, short, tmp_path / "m", spec, "test arrays")
    assert not (tmp_path / "m").exists()
    with pytest.raises(ConversionError, match="vocab file not found"):
        write_model_dir(config, arrays, tmp_path / "none.txt", tmp_path / "m", spec, "test arrays")


def test_outputs_that_exist(tmp_path):
    check_output_dir(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    check_output_dir(tmp_path / "empty")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConversionError, match="is not a directory"):
        check_output_dir(tmp_path / "file", overwrite=True)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("x")
    with pytest.raises(ConversionError, match="already holds files; pass --overwrite"):
        check_output_dir(tmp_path / "full")
    (tmp_path / "full" / "kbert.json").write_text("{}")
    with pytest.raises(ConversionError, match=r"already holds a model \(kbert.json\)"):
        check_output_dir(tmp_path / "full")
    check_output_dir(tmp_path / "full", overwrite=True)
    (tmp_path / "link").symlink_to(tmp_path / "empty")
    with pytest.raises(ConversionError, match="is not a directory"):
        check_output_dir(tmp_path / "link")
