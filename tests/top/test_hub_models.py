"""``hf://ORG/NAME`` wherever a model directory is taken (kbert.resolve_model_dir, kbert.load_encoder,
TaskModel.from_model_dir, ...): converted once, checked against transformers as ``kbert convert hf
--check`` checks, kept beside the Hugging Face cache and reused. Offline, on a Hugging Face cache laid
out as huggingface_hub writes one, as tests/convert/test_by_name.py tests the command."""


import numpy as np
import pytest

import kbert
from kbert.convert import hf
from kbert.hub_models import CHECKED, converted_root
from fixtures.hf_tiny import COMMIT, NAME, offline_cache, same_model, tiny_hf  # noqa: F401 (fixtures)
from fixtures.hf_tiny import hf_cache_entry


@pytest.mark.slow
def test_a_name_is_converted_once_checked_and_reused(tmp_path, tiny_hf, offline_cache, monkeypatch):  # noqa: F811
    hf_cache_entry(offline_cache, NAME, tiny_hf, commit=COMMIT)
    model_dir = kbert.resolve_model_dir(f"hf://{NAME}")
    # beside the Hugging Face cache, one folder per snapshot (commit)
    assert model_dir == offline_cache.parent / "kbert" / f"models--{NAME.replace('/', '--')}" / COMMIT
    assert converted_root() == offline_cache.parent / "kbert"
    same_model(hf.convert(tiny_hf, tmp_path / "from_folder"), model_dir)
    report = (model_dir.parent / f"{COMMIT}.{CHECKED}").read_text()
    assert "ids equal" in report and "against transformers" in report

    # reused: neither converted nor checked again
    def refuse(*args, **kwargs):
        raise AssertionError("converted again")

    monkeypatch.setattr(hf, "convert", refuse)
    monkeypatch.setattr("kbert.convert.check.check_conversion", refuse)
    assert kbert.resolve_model_dir(f"hf://{NAME}@{COMMIT}") == model_dir
    encoder = kbert.load_encoder(f"hf://{NAME}")
    reference = kbert.load_encoder(tmp_path / "from_folder")
    for a, b in zip(encoder.weights, reference.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert kbert.load_tokenizer(f"hf://{NAME}").vocab_size == encoder.config.vocab_size
    classifier = kbert.TextClassifier.from_model_dir(f"hf://{NAME}", num_classes=2, seq_length=32)
    assert classifier.encoder.config.hidden_size == 32
    heads = kbert.PretrainingHeads.from_model_dir(f"hf://{NAME}", seq_length=32)
    assert heads.mlm_head is not None and heads.nsp_head is not None
    # a folder is taken as it is
    assert kbert.resolve_model_dir(str(tmp_path / "from_folder")) == str(tmp_path / "from_folder")


def test_a_conversion_that_fails_the_check_is_removed(tiny_hf, offline_cache, monkeypatch):  # noqa: F811
    from kbert.convert.check import CheckReport

    hf_cache_entry(offline_cache, NAME, tiny_hf, commit=COMMIT)
    monkeypatch.setattr("kbert.convert.check.check_conversion",
                        lambda source, out: CheckReport(3, [], 0.5, 0.0, 1e-4, "en"))
    with pytest.raises(kbert.ConversionError, match="does not reproduce transformers"):
        kbert.resolve_model_dir(f"hf://{NAME}")
    folder = converted_root() / f"models--{NAME.replace('/', '--')}"
    assert not (folder / COMMIT).exists() and not (folder / f"{COMMIT}.{CHECKED}").exists()


def test_a_name_missing_from_the_offline_cache_is_one_line(offline_cache):  # noqa: F811
    with pytest.raises(kbert.ConversionError) as info:
        kbert.load_encoder("hf://nobody/nothing")
    message = str(info.value)
    assert "not in the Hugging Face cache" in message and "HF_HUB_OFFLINE=1" in message and "\n" not in message
    with pytest.raises(kbert.ConversionError, match="expected hf://ORG/NAME"):
        kbert.resolve_model_dir("hf://")
