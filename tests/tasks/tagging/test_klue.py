"""KLUE NER's entity and character macro F1 (kbert.tasks.tagging.klue) by hand, as KLUE's baseline
computes them."""

import numpy as np
import pytest

from kbert.tasks.tagging import klue as m

KLUE_NER_LABELS = ["B-DT", "I-DT", "B-LC", "I-LC", "B-OG", "I-OG", "B-PS", "I-PS", "B-QT", "I-QT", "B-TI", "I-TI",
                   "O"]


def _entities(tags):
    """Strict IOB2 entities (type, start, end) of one sequence: B-X I-X* only."""
    out, i = set(), 0
    while i < len(tags):
        if tags[i].startswith("B-"):
            kind, j = tags[i][2:], i + 1
            while j < len(tags) and tags[j] == f"I-{kind}":
                j += 1
            out.add((kind, i, j))
            i = j
        else:
            i += 1
    return out


def test_klue_entity_macro_f1_by_hand():
    gold = [["B-PS", "I-PS", "O", "B-LC"], ["B-DT", "I-DT", "O"]]
    pred = [["B-PS", "I-PS", "O", "O"], ["I-DT", "I-DT", "B-LC"]]
    # PS: 1/1 -> F1 1; LC: gold 1 (3,4), pred 1 at another place -> 0; DT: gold 1, pred none
    # (strict: I-DT without B- is no entity) -> 0. Macro over PS, LC, DT = 1/3.
    assert m.klue_ner_entity_macro_f1(pred, gold) == pytest.approx(100 / 3)
    flat_g, flat_p = _entities(sum(gold, [])), _entities(sum(pred, []))
    per_type = []
    for kind in sorted({k for k, _, _ in flat_g | flat_p}):
        g, p = {e for e in flat_g if e[0] == kind}, {e for e in flat_p if e[0] == kind}
        tp = len(g & p)
        per_type.append(0.0 if not tp else 2 * tp / (len(g) + len(p)))
    assert m.klue_ner_entity_macro_f1(pred, gold) == pytest.approx(100 * np.mean(per_type))


def test_klue_char_macro_f1_counts_o_and_absent_labels():
    gold = [["B-PS", "I-PS", "O", "O"]]
    pred = [["B-PS", "O", "O", "O"]]
    # B-PS F1 1; I-PS: gold 1, pred 0 -> 0; O: gold 2, pred 3, TP 2 -> 0.8; the other 10 labels are
    # absent from both sides and count 1 each (zero_division=True): (1 + 0 + 0.8 + 10) / 13
    assert m.klue_ner_char_macro_f1(pred, gold, KLUE_NER_LABELS) == pytest.approx(100 * 11.8 / 13)
    with pytest.raises(ValueError, match="B-XX"):
        m.klue_ner_char_macro_f1([["B-XX"]], [["O"]], KLUE_NER_LABELS)
    with pytest.raises(ValueError, match="predicted tags"):
        m.klue_ner_entity_macro_f1([["O"]], [["O", "O"]])
