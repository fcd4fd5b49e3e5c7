"""The one-call converters (kbert.convert.api): sources resolved before any work, a release zip's
checksum against hashlib's, and an output that holds files refused before any download."""

import hashlib

import pytest

from kbert.convert.api import convert_google, convert_hf, hf_source, release_zip
from kbert.convert.names import ConversionError


def test_a_folder_is_its_own_source_and_a_missing_one_is_named(tmp_path):
    assert hf_source(tmp_path) == tmp_path
    with pytest.raises(ConversionError, match="model directory .*nothing/here does not exist"):
        hf_source(tmp_path / "nothing" / "here")


def test_a_release_zip_on_disk_and_its_checksum(tmp_path):
    data = b"PK\x03\x04 not really a zip"
    (tmp_path / "r.zip").write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    assert release_zip(tmp_path / "r.zip") == (tmp_path / "r.zip", digest)
    assert release_zip(tmp_path / "r.zip", sha256=digest.upper()) == (tmp_path / "r.zip", digest)
    with pytest.raises(ConversionError, match=f"has sha256 {digest}, expected 00"):
        release_zip(tmp_path / "r.zip", sha256="00" * 32)
    with pytest.raises(ConversionError, match="release zip .*missing.zip does not exist"):
        release_zip(tmp_path / "missing.zip")


def test_an_output_with_files_is_refused_before_any_fetch(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").write_text("x")
    for convert, source in ((convert_hf, "kbert-tests/not-cached"),
                            (convert_google, "https://127.0.0.1:9/never-fetched.zip")):
        with pytest.raises(ConversionError, match="already holds files"):
            convert(source, tmp_path / "out")


def test_a_checksum_for_what_is_not_a_zip_is_refused(tmp_path):
    with pytest.raises(ConversionError, match="a sha256 checks a release zip"):
        convert_google(tmp_path / "bert_model.ckpt", tmp_path / "out", sha256="00" * 32)
