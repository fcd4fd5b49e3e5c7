"""Vocabulary files: Google's reading rules and errors naming the file and line."""

from __future__ import annotations

import pytest

from kbert.errors import DataError
from kbert.text import VocabError, load_vocab
from kbert.text.vocab import as_token_list


def test_load_vocab_errors_name_the_file_and_line(tmp_path):
    path = tmp_path / "vocab.txt"
    with pytest.raises(DataError, match=f"{path}.*file not found"):
        load_vocab(path)
    path.write_text("", encoding="utf-8")
    with pytest.raises(DataError, match=f"{path}.*empty file"):
        load_vocab(path)
    path.write_text("[PAD]\n\nhello\n", encoding="utf-8")
    with pytest.raises(DataError, match=f"{path}, line 2.*non-empty token"):
        load_vocab(path)
    path.write_text("[PAD]\nhello\nworld\nhello\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"line 4: got 'hello'; expected each token once \(first seen at line 2\)"):
        load_vocab(path)
    # Google's rules: surrounding whitespace and CRLF stripped; a whitespace-only token is kept.
    path.write_text("[PAD]\r\n hello \r\n\u2028\n##\u2028\n", encoding="utf-8")
    assert load_vocab(path) == ["[PAD]", "hello", "\u2028", "##"]
    with pytest.raises(VocabError, match="entry 1 is 3"):
        as_token_list(["a", 3])
    with pytest.raises(DataError, match="entry 2.*first seen at entry 0"):
        as_token_list(["a", "b", "a"])
