"""Release downloads' helpers (kbert.convert.download): the cache folder by environment, URLs, the
file digest against hashlib on the whole file, Content-Range totals (downloads from a server that cuts
its answer short: tests/convert/test_by_name.py)."""

import hashlib
import pathlib

import pytest

from kbert.convert import download


def test_cache_dir_by_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("KBERT_CACHE", str(tmp_path / "k"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert download.cache_dir() == tmp_path / "k"
    monkeypatch.delenv("KBERT_CACHE")
    assert download.cache_dir() == tmp_path / "x" / "kbert"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert download.cache_dir() == tmp_path / "home" / ".cache" / "kbert"


@pytest.mark.parametrize("source,expected", [
    ("https://storage.googleapis.com/bert_models/uncased.zip", True), ("http://localhost:8000/a.zip", True),
    ("ftp://host/a.zip", False), ("file:///tmp/a.zip", False), ("/tmp/a.zip", False), ("org/name", False),
    (pathlib.Path("/tmp/a.zip"), False)])
def test_is_url(source, expected):
    assert download.is_url(source) is expected


def test_sha256_of_a_file_longer_than_one_chunk(tmp_path):
    data = bytes(range(256)) * (download.CHUNK // 256 * 2 + 3)
    (tmp_path / "f").write_bytes(data)
    assert download.sha256_of(tmp_path / "f") == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("header,total", [("bytes 100-999/1000", 1000), ("bytes 0-0/*", None), (None, None),
                                          ("bytes */5", 5)])
def test_total_from_content_range(header, total):
    assert download._total_from_range(header) == total
