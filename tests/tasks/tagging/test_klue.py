"""klue/ner (kbert.tasks.tagging.klue): KLUE NER's entity and character macro F1 by hand, as KLUE's
baseline computes them; fine-tuned on the shared dev file, the metrics of eval_results.json recomputed
from predictions.jsonl (one tag per character), kbert predict on the official TSV, and the export
answering the tags kbert predict writes."""

import numpy as np
import pytest

from conftest import SHARED
from kbert.errors import DataError
from kbert.tasks.tagging import klue as m
from fixtures.task_runs import finetune_tiny, read_jsonl, same_to_2_decimals

NER_FILE = SHARED / "klue" / "klue-ner-v1.1" / "klue-ner-v1.1_dev.tsv"

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


@pytest.mark.slow
def test_klue_ner(tiny_model_dir, tmp_path):
    from kbert.data.klue import NER_LABELS, read_ner
    from kbert.tasks.core.predict import predict_file

    result = finetune_tiny(tiny_model_dir, tmp_path / "ner", "klue/ner", train_file=str(NER_FILE), eval_file=str(NER_FILE),
                       train_rows=":48", eval_rows="3480:", seq_length=64)
    rows = read_jsonl(tmp_path / "ner" / "predictions.jsonl")
    gold = read_ner(NER_FILE).examples[3480:]
    assert [r["guid"] for r in rows] == [e["id"] for e in gold]
    # one tag per character, spaces included, also for sentences longer than the 64-piece window
    assert [len(r["tags"]) for r in rows] == [len(e["text"]) for e in gold]
    assert max(len(e["text"]) for e in gold) > 62
    predicted, truth = [r["tags"] for r in rows], [e["tags"] for e in gold]
    same_to_2_decimals(result["best"]["entity_macro_f1"], m.klue_ner_entity_macro_f1(predicted, truth))
    same_to_2_decimals(result["best"]["char_macro_f1"], m.klue_ner_char_macro_f1(predicted, truth, NER_LABELS))
    # kbert predict on the official TSV of those sentences writes the same rows
    lines = NER_FILE.read_text(encoding="utf-8").split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"## {gold[0]['id']}\t"))
    part = tmp_path / "ner_rows.tsv"
    part.write_text("\n".join(lines[start:]), encoding="utf-8")
    predict_file(tmp_path / "ner", part, tmp_path / "ner_predicted.jsonl")
    assert read_jsonl(tmp_path / "ner_predicted.jsonl") == rows
    # a line without a tab: an error naming the file and the line, and no output file
    bad = tmp_path / "ner_bad.tsv"
    bad.write_text("\n".join(lines[start:start + 3]) + "\nX O\n", encoding="utf-8")
    with pytest.raises(DataError) as e:
        predict_file(tmp_path / "ner", bad, tmp_path / "ner_bad.jsonl")
    assert e.value.line == 4 and e.value.field == "tab" and str(bad) in str(e.value)
    assert not (tmp_path / "ner_bad.jsonl").exists()


@pytest.mark.slow
def test_klue_ner_export_tags_every_character_as_predict_does(tiny_model_dir, tmp_path):
    """kbert export task of a klue/ner model: serving_default answers a tag per character, the tags
    kbert predict writes. The head is random (a 48-row fine-tune tags nearly everything O, which any
    rule would match), so pieces of one word, jamo of one syllable and spaces get different tags."""
    import keras
    import tensorflow as tf

    from kbert.data.klue import NER_LABELS, read_ner
    from kbert.export.task import export_task
    from kbert.tasks.tagging.char_tagging import predict_char_tags
    from kbert.tasks.tagging.model import TokenTagger

    keras.utils.set_random_seed(0)
    model = TokenTagger.from_model_dir(tiny_model_dir, label_names=list(NER_LABELS), seq_length=32,
                                       fill_label=NER_LABELS.index("O"), load_head=False)
    for w in model.head.weights:
        w.assign(np.random.default_rng(1).normal(0, 0.5, w.shape).astype("float32"))
    model.save_model_dir(tmp_path / "ner", extra_info={"task_name": "klue/ner"})
    # real sentences (one longer than the 30 pieces a row holds), Hangul decomposed into jamo by the
    # uncased vocabulary, an empty one and mixed scripts
    texts = [e["text"] for e in read_ner(NER_FILE).examples[3480:3486]] + ["", "Seoul 서울 2024년 — ok"]
    assert max(len(t) for t in texts) > 40
    expected = predict_char_tags(model, texts)
    assert len({t for tags in expected for t in tags}) > 3  # varied tags, not one everywhere
    served = tf.saved_model.load(str(export_task(tmp_path / "ner", tmp_path / "saved" / "1")))
    out = served.signatures["serving_default"](text=tf.constant(texts))
    num = out["num_chars"].numpy().tolist()
    assert num == [len(t) for t in texts]
    tags = [[t.decode() for t in row[:n]] for row, n in zip(out["tags"].numpy(), num)]
    assert tags == expected
    assert all(set(row[n:]) <= {b""} for row, n in zip(out["tags"].numpy(), num))
    ids = out["tag_ids"].numpy()
    assert [[NER_LABELS[i] for i in row[:n]] for row, n in zip(ids, num)] == expected
