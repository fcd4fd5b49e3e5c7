"""How long a string MeCab can take, and cutting longer text into pieces it can (no TensorFlow:
vocabulary learning uses it too)."""

from __future__ import annotations

import re

# MeCab (fugashi 1.x, unidic-lite) segfaults on one very long string: from about 190,000 characters
# of one letter ("aaa..."), 600,000 kanji or 1,000,000 characters of ordinary Japanese prose (a
# tokenizer process then dies with no message). Its time also grows faster than the length on runs
# of one character type. Longer (NFKC-normalized) text is given to MeCab in pieces of at most
# MECAB_MAX_CHARS characters, a quarter of the lowest crash found, each cut after the last white
# space or sentence end in its second half (or hard at the limit if it has none): the words differ
# from one MeCab call's only next to such a cut.
MECAB_MAX_CHARS = 50_000
_CUT_AFTER = re.compile(r"[\s。．！？!?]")


def mecab_pieces(text: str, limit: int = MECAB_MAX_CHARS) -> list[str]:
    """``text`` cut into pieces of at most ``limit`` characters that MeCab can take (MECAB_MAX_CHARS):
    each piece ends after the last white space or sentence end in its second half, else at the limit."""
    pieces, start = [], 0
    while len(text) - start > limit:
        end = start + limit
        cut = max((m.end() for m in _CUT_AFTER.finditer(text, start + limit // 2, end)), default=end)
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces
