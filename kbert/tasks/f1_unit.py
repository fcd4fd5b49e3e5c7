"""Which span-QA F1 a model's language calls for: whitespace words (SQuAD) or characters (JSQuAD, CMRC).

Japanese and Chinese are written without spaces, so SQuAD's whitespace-token F1 equals exact
match there; their benchmarks score characters instead (``kbert.tasks.metrics.squad_char_f1``).
The unit is chosen from the model's tokenizer:

  * ``mecab-wordpiece``, ``mecab-character``, ``sentencepiece`` (the Japanese types): characters;
  * ``wordpiece``: characters when the vocabulary is mostly CJK (Google's Chinese BERT: 65% of its
    word-initial tokens are single CJK characters), whitespace words otherwise (the English
    vocabularies: under 2%).
"""

from __future__ import annotations

import re

CHARACTER_TYPES = ("mecab-wordpiece", "mecab-character", "sentencepiece")
# Share of word-initial, non-special vocabulary entries that are one CJK character, above which
# a WordPiece vocabulary is taken as Chinese/Japanese.
CJK_VOCAB_SHARE = 0.3
_CJK_CHAR = re.compile(r"^[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]$")


def cjk_share(vocabulary) -> float:
    """Share of word-initial tokens (not ``##``, not ``[...]``) that are a single CJK character."""
    words = [t for t in vocabulary if t and not t.startswith("##") and not (t.startswith("[") and t.endswith("]"))]
    return sum(bool(_CJK_CHAR.match(t)) for t in words) / max(len(words), 1)


def f1_unit_for_tokenizer(tokenizer) -> str:
    """"char" or "word" for a tokenizer object (any registered type) or a ``TokenizerSpec``-like type name."""
    kind = tokenizer if isinstance(tokenizer, str) else getattr(tokenizer, "tokenizer_type", "wordpiece")
    if kind in CHARACTER_TYPES:
        return "char"
    if isinstance(tokenizer, str):
        return "word"
    return "char" if cjk_share(tokenizer.get_vocabulary()) > CJK_VOCAB_SHARE else "word"
