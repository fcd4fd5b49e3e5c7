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


# -- one deciding sentence in a page of narrative (issue: a label carried by one sentence) -------------
# Training documents take their filler from four Austen novels and their sentence from SST-2's train
# file; evaluation documents from other books and SST-2's dev file, so no sentence or filler is shared.
FILLER_BOOKS = {"train": ("emma.txt", "mansfieldpark.txt", "prideprejudice.txt", "sensesensibility.txt"),
                "eval": ("persuasion.txt", "northangerabbey.txt", "nltk_gutenberg/chesterton-brown.txt",
                         "nltk_gutenberg/bryant-stories.txt")}
SST2_FILES = {"train": "train.tsv", "eval": "dev.tsv"}


def sst2_sentences(shared_data, split, min_words=8) -> dict:
    """{0: negative sentences, 1: positive ones} of SST-2's ``split`` file with ``min_words`` words or more."""
    pools = {0: [], 1: []}
    lines = (shared_data / "glue" / "SST-2" / SST2_FILES[split]).read_text(encoding="utf-8").splitlines()[1:]
    for line in lines:
        text, label = line.rsplit("\t", 1)
        if len(text.split()) >= min_words:
            pools[int(label)].append(text.strip())
    return pools


def sentence_documents(shared_data, n, split, seed=0, filler_words=(190, 230), first_window_words=126) -> list:
    """n rows {"text", "label", "sentence"}: 190-230 words of narrative sentences with one SST-2
    sentence (the label: 0 negative, 1 positive; alternating) placed at a random sentence boundary
    after at least ``first_window_words`` words, so past the first window of --seq-length 128 (every
    word is one word piece or more). ``sentence`` is the deciding sentence alone (the signal)."""
    corpus = shared_data / "corpus" / "en"
    filler = [s for book in FILLER_BOOKS[split] for s in sentences(corpus / book)]
    pools = sst2_sentences(shared_data, split)
    rng = np.random.default_rng(seed)
    order = {label: rng.permutation(len(pool)) for label, pool in pools.items()}
    rows = []
    for i in range(n):
        label = i % 2
        sentence = pools[label][order[label][i // 2 % len(order[label])]]
        target, page, words = rng.integers(filler_words[0], filler_words[1] + 1), [], 0
        while words < target:
            page.append(filler[rng.integers(len(filler))])
            words += len(page[-1].split())
        before = np.cumsum([len(s.split()) for s in page])
        places = [k + 1 for k in range(len(page)) if before[k] >= first_window_words] or [len(page)]
        at = places[rng.integers(len(places))]
        rows.append({"text": " ".join(page[:at] + [sentence] + page[at:]), "label": label, "sentence": sentence})
    return rows


def multi_label_documents(shared_data, n, filler_words=90, seed=0, max_words=15) -> list:
    """n rows {"text", "labels"}: ``filler_words`` or more words of *Emma* with, independently, a
    *Botchan* sentence (label "botchan") and a *Persuasion* one (label "persuasion"), each at a random
    sentence boundary: most documents hold a label in one sentence of one window, or none."""
    corpus = shared_data / "corpus" / "en"
    filler = sentences(corpus / "emma.txt")
    pools = {label: [s for s in sentences(corpus / f"{label}.txt") if len(s.split()) <= max_words][200:200 + POOL]
             for label in ("botchan", "persuasion")}
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        page, words = [], 0
        while words < filler_words:
            page.append(filler[rng.integers(len(filler))])
            words += len(page[-1].split())
        labels = [label for label in pools if rng.random() < 0.5]
        for label in labels:
            page.insert(int(rng.integers(len(page) + 1)), pools[label][rng.integers(POOL)])
        rows.append({"text": " ".join(page), "labels": labels})
    return rows
