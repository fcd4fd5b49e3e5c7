"""CoNLL's prediction file: predictions.txt, conlleval's input: "word gold predicted" per line, a
blank line between sentences.
"""

from __future__ import annotations

import pathlib


def write_conll(path, sentences, gold_tags, predicted_tags) -> pathlib.Path:
    path = pathlib.Path(path)
    with path.open("w", encoding="utf-8") as f:
        for words, gold, predicted in zip(sentences, gold_tags, predicted_tags):
            for word, g, p in zip(words, gold, predicted):
                f.write(f"{word} {g} {p}\n")
            f.write("\n")
    return path
