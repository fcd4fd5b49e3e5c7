"""Text decoding and NFKC with a map back to the input: which input characters each output character
came from (offsets into the ORIGINAL text for tokenizers that normalize first: ``kbert.text.mecab``).
"""

from __future__ import annotations

import functools
import re
import unicodedata

import numpy as np

SURROGATES = re.compile("[\ud800-\udfff]")


def decode_text(text) -> tuple[str, list[int] | None]:
    """``(str, byte lengths of its characters or None)``: bytes as UTF-8 with U+FFFD per invalid
    sequence (exactly ``bytes.decode("utf-8", "replace")``; the lengths are the input bytes each
    character came from), lone surrogates of a ``str`` replaced by U+FFFD."""
    if isinstance(text, str):
        return SURROGATES.sub("\ufffd", text), None
    data = bytes(text)
    parts, lengths, pos = [], [], 0
    while pos < len(data):
        try:
            chunk = data[pos:].decode("utf-8")
            parts.append(chunk)
            lengths += [len(c.encode("utf-8")) for c in chunk]
            break
        except UnicodeDecodeError as e:
            good = data[pos:pos + e.start].decode("utf-8")
            parts += [good, "\ufffd"]
            lengths += [len(c.encode("utf-8")) for c in good] + [e.end - e.start]
            pos += e.end
    return "".join(parts), lengths


@functools.lru_cache(maxsize=1)
def cluster_pattern():
    """A regex of NFKC clusters: a character that cannot interact with what precedes it under NFKC,
    then the characters that can (combining marks, second halves of canonical compositions such as
    Hangul vowel and final jamo, and characters whose NFKD starts with one of those: ``ﾞ``)."""
    seconds = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))  # Hangul LV/LVT (algorithmic)
    marks, decomposable = [], []
    for cp in range(0x110000):
        ch = chr(cp)
        if unicodedata.combining(ch):
            marks.append(cp)
        parts = unicodedata.decomposition(ch).split()
        if parts:
            decomposable.append(ch)
            if len(parts) == 2 and not parts[0].startswith("<"):
                seconds.add(int(parts[1], 16))
    joining = set(marks) | seconds
    for ch in decomposable:
        first = unicodedata.normalize("NFKD", ch)[:1]
        if first and (unicodedata.combining(first) or ord(first) in seconds):
            joining.add(ord(ch))
    joining = sorted(joining - set(range(0xD800, 0xE000)))
    ranges, start = [], None
    for i, cp in enumerate(joining):
        if start is None:
            start = cp
        if i + 1 == len(joining) or joining[i + 1] != cp + 1:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(cp))}" if cp > start else re.escape(chr(cp)))
            start = None
    cls = "".join(ranges)
    return re.compile(f"[^{cls}][{cls}]*|[{cls}]+", re.DOTALL)


def nfkc_spans(text: str):
    """``(NFKC(text), starts, ends)``: the input span ``[starts[k], ends[k])`` of each normalized character.

    The text is cut into clusters whose NFKC does not depend on their neighbours (``ｶﾞ`` is one
    cluster: they compose); every character a cluster normalizes to spans the whole cluster.
    Python's ``unicodedata`` has no NFKC boundary test, hence ``cluster_pattern``; the result is
    checked against NFKC of the whole text (on a mismatch every character spans the whole text).
    """
    if unicodedata.is_normalized("NFKC", text):
        return text, range(len(text)), range(1, len(text) + 1)
    out, starts, ends = [], [], []
    for match in cluster_pattern().finditer(text):
        cluster = match.group()
        piece = cluster if len(cluster) == 1 and unicodedata.is_normalized("NFKC", cluster) else (
            unicodedata.normalize("NFKC", cluster))
        out.append(piece)
        starts += [match.start()] * len(piece)
        ends += [match.end()] * len(piece)
    normalized = unicodedata.normalize("NFKC", text)
    if "".join(out) != normalized:
        return normalized, [0] * len(normalized), [len(text)] * len(normalized)
    return normalized, starts, ends


def byte_positions(text) -> list[int]:
    """UTF-8 byte offset of each character position 0..len of a decoded text (bytes: the input's)."""
    decoded, lengths = decode_text(text)
    if lengths is None:  # a str (lone surrogates are U+FFFD: 3 bytes, as "surrogatepass" would count)
        if decoded.isascii():
            return range(len(decoded) + 1)
        points = np.frombuffer(decoded.encode("utf-32-le"), dtype=np.uint32)
        lengths = 1 + (points >= 0x80) + (points >= 0x800) + (points >= 0x10000)
    return [0, *np.cumsum(lengths, dtype=np.int64).tolist()]
