"""Japanese and Chinese text preparation for pre-training data: Aozora Bunko markup, NFKC, sentences.

``pipelines.pretraining_data --language ja|zh [--strip-aozora]`` uses these:

  * ``strip_aozora``: Aozora Bunko's markup (https://www.aozora.gr.jp/annotation/) out of a text:
    ruby ``漢字《かんじ》`` -> ``漢字``, the ruby start mark ``｜``, editor notes ``［＃…］`` (and the
    ``※`` that stands for a character a note describes), the header block between the two
    ``-------`` rules that explains the marks, and the colophon from the ``底本：`` line on.
  * ``prepare``: the markup stripped (when asked), then NFKC for Japanese (as the Japanese
    tokenizers normalize: full-width Latin and digits to ASCII, half-width katakana to full
    width); Chinese text is left as it is (Chinese BERT vocabularies keep full-width punctuation).
  * ``split_sentences``: a sentence ends after 。！？ (Japanese; ``!?`` too, which NFKC makes of
    ！？) or 。！？； (Chinese), with any closing brackets or quotes that follow, but never inside
    brackets or quotes (「…。…」 is one sentence); a line end always ends a sentence, since
    Japanese and Chinese text is not hard-wrapped (a line is a paragraph).
"""

from __future__ import annotations

import re
import unicodedata

from kbert.errors import OptionsError

LANGUAGES = ("en", "ja", "zh")
SENTENCE_ENDS = {"ja": "。！？!?", "zh": "。！？；!?;"}
_OPENING = "「『（(［[【〔〈《“‘"
_CLOSING = "」』）)］]】〕〉》”’"

_RUBY = re.compile(r"《[^《》\n]*》")
_NOTE = re.compile(r"※?［＃[^］\n]*］")
_HEADER = re.compile(r"^-{20,}\n.*?^-{20,}\n", re.MULTILINE | re.DOTALL)
_COLOPHON = re.compile(r"^底本：.*\Z", re.MULTILINE | re.DOTALL)


def strip_aozora(text: str) -> str:
    """``text`` without Aozora Bunko markup, header notes and colophon (see the module docstring)."""
    text = _HEADER.sub("", text, count=1)
    text = _COLOPHON.sub("", text)
    text = _NOTE.sub("", text)
    text = _RUBY.sub("", text)
    return text.replace("｜", "")


def prepare(text: str, language: str = "en", aozora: bool = False) -> str:
    """The text a pre-training pipeline reads: markup stripped (``aozora``), NFKC for Japanese."""
    if language not in LANGUAGES:
        raise OptionsError(f"--language must be one of {', '.join(LANGUAGES)}, got {language!r}", option="language",
                           value=language)
    if aozora:
        text = strip_aozora(text)
    if language == "ja":
        text = unicodedata.normalize("NFKC", text)
    return text


def split_sentences(text: str, language: str) -> list[str]:
    """Sentences of a Japanese or Chinese text (a line end always ends one); blanks dropped."""
    if language not in SENTENCE_ENDS:
        raise OptionsError(f"no CJK sentence rules for language {language!r}; expected one of {sorted(SENTENCE_ENDS)}",
                           option="language", value=language)
    ends = SENTENCE_ENDS[language]
    sentences = []
    for line in text.split("\n"):
        depth, start, i, n = 0, 0, 0, len(line)
        while i < n:
            c = line[i]
            if c in _OPENING:
                depth += 1
            elif c in _CLOSING:
                depth = max(0, depth - 1)
            elif c in ends and depth == 0:
                while i + 1 < n and (line[i + 1] in ends or line[i + 1] in _CLOSING):
                    i += 1
                sentences.append(line[start:i + 1])
                start = i + 1
            i += 1
        sentences.append(line[start:])
    # Full-width (ideographic) spaces indent paragraphs in Japanese text: strip them too.
    return [s.strip(" \t\r\u3000") for s in sentences if s.strip(" \t\r\u3000")]
