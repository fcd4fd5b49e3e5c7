"""Documents whose label is decided only by text after their first window, built from real sentences.

Each document opens with sentences of Jane Austen's *Emma* (at least ``head_words`` words, so at
least that many word pieces: more than one window of a small --seq-length holds) and ends with one
sentence from one of two small pools: sentences of Sōseki's *Botchan* (label "botchan") or of
Austen's *Persuasion* (label "persuasion"), then one more sentence of *Emma*. Truncation keeps only
the opening, which says nothing about the label: a model can only guess. Labels alternate, so any
split is balanced and a guess scores one half.
"""

import json
import re

import numpy as np

POOL = 4  # sentences per label


def sentences(path, min_words=6, max_words=25) -> list:
    text = path.read_text(encoding="utf-8")
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    out = []
    for paragraph in paragraphs:
        for sentence in re.split(r"(?<=[.!?])\s+", paragraph):
            words = sentence.split()
            if min_words <= len(words) <= max_words and sentence[:1].isupper() and "_" not in sentence \
                    and '"' not in sentence and sentence[-1] in ".!?":
                out.append(sentence)
    return out


def documents(shared_data, n, head_words=64, seed=0) -> list:
    """n rows {"text", "label"}, labels alternating botchan / persuasion."""
    corpus = shared_data / "corpus" / "en"
    filler = sentences(corpus / "emma.txt")
    pools = {"botchan": sentences(corpus / "botchan.txt")[200:200 + POOL],
             "persuasion": sentences(corpus / "persuasion.txt")[200:200 + POOL]}
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = ("botchan", "persuasion")[i % 2]
        head, words = [], 0
        while words < head_words:
            head.append(filler[rng.integers(len(filler))])
            words += len(head[-1].split())
        tail = [pools[label][rng.integers(POOL)], filler[rng.integers(len(filler))]]
        rows.append({"text": " ".join(head + tail), "label": label})
    return rows


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path
