"""Documents whose label is decided only by text after their first 512 word pieces, built from real
sentences.

Each document opens with sentences of Jane Austen's *Emma* (at least ``head_words`` words, so at
least that many word pieces: more than BERT's 512 positions hold) and goes on with
``tail_sentences`` sentences drawn from one of two small pools: sentences of Sōseki's *Botchan*
(label "botchan") or of Austen's *Persuasion* (label "persuasion"), then one more sentence of
*Emma*. Truncation keeps only the opening, which says nothing about the label: a model can only
guess. Labels alternate, so any split is balanced and a guess scores one half.

The tail is a passage, not one sentence: with one sentence in a 512-piece window a randomly
initialised BERT-Tiny did not learn in 4 epochs (accuracy 0.5); with 15 it reaches 1.0 by the third.
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


def label_pools(shared_data) -> dict:
    """{label: the sentences that decide it}."""
    corpus = shared_data / "corpus" / "en"
    return {"botchan": sentences(corpus / "botchan.txt")[200:200 + POOL],
            "persuasion": sentences(corpus / "persuasion.txt")[200:200 + POOL]}


def documents(shared_data, n, head_words=512, tail_sentences=15, seed=0) -> list:
    """n rows {"text", "label"}, labels alternating botchan / persuasion."""
    filler = sentences(shared_data / "corpus" / "en" / "emma.txt")
    pools = label_pools(shared_data)
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = ("botchan", "persuasion")[i % 2]
        head, words = [], 0
        while words < head_words:
            head.append(filler[rng.integers(len(filler))])
            words += len(head[-1].split())
        tail = [pools[label][rng.integers(POOL)] for _ in range(tail_sentences)]
        tail.append(filler[rng.integers(len(filler))])
        rows.append({"text": " ".join(head + tail), "label": label})
    return rows


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path
