"""The Japanese workshop's data set and leaderboard score (kbert.explore.ene_workshop)."""

import collections
import json

import pytest

from kbert.errors import DataError
from kbert.explore import ene_workshop
from kbert.commands.explore import main as explore_main


def read_jsonl(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_whole_articles_are_one_row_each_split_as_the_paragraphs(shared_data, tmp_path):
    corpus = shared_data / ene_workshop.CORPUS_NAME
    assert explore_main(["workshop-data", str(tmp_path / "p"), "--corpus", str(corpus)]) == 0
    assert explore_main(["workshop-data", str(tmp_path / "a"), "--corpus", str(corpus), "--unit", "article"]) == 0
    articles = ene_workshop.read_articles(corpus)
    by_title = dict(articles)
    table = ene_workshop.read_label_table()
    total = 0
    for name in ("train", "dev", "unlabelled"):
        paragraphs, whole = read_jsonl(tmp_path / "p" / f"{name}.jsonl"), read_jsonl(tmp_path / "a" / f"{name}.jsonl")
        assert [r["title"] for r in whole] == list(dict.fromkeys(r["title"] for r in paragraphs))  # same articles
        for row in whole:  # every paragraph, in order, one a line; the article's labels
            assert row["text"].split("\n") == by_title[row["title"]]
            assert row.get("labels", table[row["title"]]) == table[row["title"]]
            assert row["id"] == f"{[t for t, _ in articles].index(row['title']):02d}"
        total += len(whole)
    assert total == len(articles)
    answers = read_jsonl(tmp_path / "a" / "answers.jsonl")
    assert [a["id"] for a in answers] == [r["id"] for r in read_jsonl(tmp_path / "a" / "unlabelled.jsonl")]
    with pytest.raises(ValueError, match="unit 'page'"):
        ene_workshop.make_dataset(corpus, tmp_path / "x", unit="page")
    assert not (tmp_path / "x").exists()


def test_workshop_data_from_the_jsquad_corpus(shared_data, tmp_path):
    corpus = shared_data / ene_workshop.CORPUS_NAME
    assert explore_main(["workshop-data", str(tmp_path), "--corpus", str(corpus)]) == 0
    train, dev = read_jsonl(tmp_path / "train.jsonl"), read_jsonl(tmp_path / "dev.jsonl")
    unlabelled, answers = read_jsonl(tmp_path / "unlabelled.jsonl"), read_jsonl(tmp_path / "answers.jsonl")
    articles = ene_workshop.read_articles(corpus)
    # every paragraph is a row, once
    assert len(train) + len(dev) + len(unlabelled) == sum(len(p) for _, p in articles)
    ids = [r["id"] for r in train + dev + unlabelled]
    assert len(set(ids)) == len(ids)
    # splits by article: no article in two splits; every held-out label has a training article
    titles = {name: {r["title"] for r in rows} for name, rows in
              (("train", train), ("dev", dev), ("unlabelled", unlabelled))}
    assert not titles["train"] & titles["dev"] and not titles["train"] & titles["unlabelled"]
    assert not titles["dev"] & titles["unlabelled"] and titles["dev"] and titles["unlabelled"]
    train_labels = {name for r in train for name in r["labels"]}
    assert {name for r in dev + answers for name in r["labels"]} <= train_labels
    # the unlabelled file has no labels; the answers key it by id, in the same order
    assert all("labels" not in r for r in unlabelled)
    assert [a["id"] for a in answers] == [r["id"] for r in unlabelled]
    # labels are the hand table's, some rows multi-label
    table = ene_workshop.read_label_table()
    assert all(r["labels"] == table[r["title"]] for r in train + dev)
    assert any(len(r["labels"]) > 1 for r in train)
    assert collections.Counter(len(v) for v in table.values())[2] == 4


def test_score_equals_hand_computed_micro_f1(tmp_path, capsys):
    answers = write(tmp_path / "answers.jsonl", [{"id": "a", "labels": ["X", "Y"]}, {"id": "b", "labels": ["Y"]},
                                                {"id": "c", "labels": ["Z"]}])
    # kbert.predict's output: rows in the input's order, no ids
    inputs = write(tmp_path / "in.jsonl", [{"id": "c", "text": "."}, {"id": "a", "text": "."}, {"id": "b", "text": "."}])
    predictions = write(tmp_path / "pred.jsonl", [{"labels": ["Z"]}, {"labels": ["X"]}, {"labels": ["Y", "Z"]}])
    # true positives: c:Z, a:X, b:Y = 3; predicted 4; gold 4 -> P = R = 3/4, micro-F1 0.75
    # per label: X P1 R1/1 F1=1, Y P1/1 R1/2 F 2/3, Z P1/2 R1/1 F 2/3 -> macro 7/9; exact: c only -> 1/3
    assert explore_main(["workshop-score", str(predictions), "--answers", str(answers), "--input", str(inputs)]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["micro_f1"] == pytest.approx(0.75)
    assert scores["macro_f1"] == pytest.approx(7 / 9)
    assert scores["exact_match"] == pytest.approx(1 / 3)
    assert scores["rows"] == 3
    # the same as a submission with ids, in another order; a single string is a one-label list
    submission = write(tmp_path / "sub.jsonl", [{"id": "b", "labels": ["Y", "Z"]}, {"id": "a", "labels": "X"},
                                                {"id": "c", "labels": ["Z"]}])
    assert ene_workshop.score(submission, answers) == scores


def test_score_rejects_bad_submissions(tmp_path):
    answers = write(tmp_path / "answers.jsonl", [{"id": "a", "labels": ["X"]}, {"id": "b", "labels": ["Y"]}])
    missing = write(tmp_path / "missing.jsonl", [{"id": "a", "labels": ["X"]}])
    with pytest.raises(DataError, match=r"missing\.jsonl, ids missing \['b'\]"):
        ene_workshop.score(missing, answers)
    twice = write(tmp_path / "twice.jsonl", [{"id": "a", "labels": ["X"]}, {"id": "a", "labels": ["Y"]}])
    with pytest.raises(DataError, match=r"twice\.jsonl, line 2: field 'id': got 'a'; expected each id predicted once"):
        ene_workshop.score(twice, answers)
    no_labels = write(tmp_path / "nolabels.jsonl", [{"id": "a"}, {"id": "b", "labels": ["Y"]}])
    with pytest.raises(DataError, match=r"nolabels\.jsonl, line 1: field 'labels': got None; expected a list of category names"):
        ene_workshop.score(no_labels, answers)
    short = write(tmp_path / "short.jsonl", [{"labels": ["X"]}])
    with pytest.raises(DataError, match=r"got '1 predictions'; expected one prediction for each of the 2 rows"):
        ene_workshop.score(short, answers, input_path=answers)


def test_label_table_errors_name_the_line(tmp_path):
    bad = tmp_path / "labels.tsv"
    bad.write_text("# comment\nA\tX\nB\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"labels\.tsv, line 3: got .*; expected 'title<TAB>category"):
        ene_workshop.read_label_table(bad)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("A\npara one\n\nC\npara two\n", encoding="utf-8")
    good = tmp_path / "good.tsv"
    good.write_text("A\tX\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"no line for the article\(s\) \['C'\]"):
        ene_workshop.make_dataset(corpus, tmp_path / "out", good)
    assert not (tmp_path / "out" / "train.jsonl").exists()


def test_the_documented_counts_are_the_label_tables():
    """docs/japanese.md and the table's header say how many categories and articles the table has."""
    import re

    from conftest import REPO

    table = ene_workshop.read_label_table()
    names = {name for labels in table.values() for name in labels}
    two = sum(len(labels) == 2 for labels in table.values())
    doc = (REPO / "docs" / "japanese.md").read_text(encoding="utf-8")
    said = re.search(r"a hand-made table of (\d+) names for the (\d+) articles.*?; (\d+) articles have two", doc, re.S)
    assert said and [int(g) for g in said.groups()] == [len(names), len(table), two]
    assert f"（{len(table)} 記事に {len(names)} 種、2 つ持つ記事が {two} つ）" in doc
    header = ene_workshop.LABELS_FILE.read_text(encoding="utf-8").splitlines()[0]
    assert f"simplified to {len(names)} names" in header
