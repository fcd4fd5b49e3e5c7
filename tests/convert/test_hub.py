"""Hub model names (kbert.convert.hub): what counts as ``ORG/NAME[@REVISION]`` rather than a folder, and
how it splits (the download itself: tests/convert/test_by_name.py)."""

import pytest

from kbert.convert.hub import is_hub_name, split_name


@pytest.mark.parametrize("source", ["bert-base-uncased", "cl-tohoku/bert-base-japanese-v3", "klue/bert-base@main",
                                    "org/name@refs/pr/1", "org/name@0123abc"])
def test_names(source):
    assert is_hub_name(source)


@pytest.mark.parametrize("source", ["a/b/c", "/abs/path", "./rel", "org/", "vocab.txt", "config.json",
                                    "uncased_L-12_H-768_A-12.zip", "-org/name", "org/name@", ""])
def test_not_names(source):
    assert not is_hub_name(source)


def test_an_existing_path_is_a_folder_even_when_it_looks_like_a_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org").mkdir()
    (tmp_path / "org" / "name").mkdir()
    assert not is_hub_name("org/name")
    assert is_hub_name("org/other")


def test_split_name():
    assert split_name("klue/bert-base@v1.0") == ("klue/bert-base", "v1.0")
    assert split_name("bert-base-uncased") == ("bert-base-uncased", None)
