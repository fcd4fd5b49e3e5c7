"""The Japanese workshop's task, made from data that ships: classify Wikipedia passages into
ENE-like categories (multi-label), predict unlabelled passages, score a submission by micro-F1.

The workshop this follows fine-tunes a Japanese BERT on ~5,000 Wikipedia pages labelled with
Extended Named Entity (ENE) categories, predicts the unlabelled pages and submits to a leaderboard
scored by micro-F1. Its data cannot ship here; this module builds the same shape of task from the
Japanese Wikipedia paragraphs of JSQuAD (``../shared/data/corpus/ja/jsquad_wikipedia.txt``, CC BY-SA
4.0): each paragraph is a row ``{"id", "title", "text", "labels"}`` whose labels are its article's
categories, assigned by hand in ``kbert/resources/workshop/jsquad_ene_labels.tsv`` (25 names after
Sekine's ENE hierarchy; 4 of the 59 articles carry two).

Splits are by **article**, so the unlabelled passages come from pages the model never saw (as on
the leaderboard); an article goes to dev or to the unlabelled set only when every one of its
categories keeps at least one article in train. ``answers.jsonl`` is the leaderboard's hidden key.

    python -m kbert.explore workshop-data runs/ene                   # train/dev/unlabelled/answers
    python -m kbert.explore workshop-data runs/ene-articles --unit article   # whole pages, one a row
    python -m kbert.explore workshop-score runs/ene/predictions.jsonl --answers runs/ene/answers.jsonl \\
        --input runs/ene/unlabelled.jsonl                            # micro-F1, as the leaderboard
"""

from __future__ import annotations

import json
import pathlib

from kbert.errors import DataError, OptionsError

LABELS_FILE = pathlib.Path(__file__).resolve().parent.parent / "resources" / "workshop" / "jsquad_ene_labels.tsv"
CORPUS_NAME = "corpus/ja/jsquad_wikipedia.txt"
SPLIT_EVERY = 4  # one article in SPLIT_EVERY goes to dev, one to the unlabelled set (when its labels allow)
MAX_HELD_OUT_PARAGRAPHS = 60  # the few long articles (up to 180 paragraphs) stay in train


def read_label_table(path=LABELS_FILE) -> dict:
    """{title: [categories]} from the hand-made TSV (``#`` lines are comments)."""
    table = {}
    for number, line in enumerate(pathlib.Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        title, sep, labels = line.partition("\t")
        names = [name.strip() for name in labels.split(",") if name.strip()]
        if not sep or not names:
            raise DataError(path, "'title<TAB>category[,category]'", line=number, value=line)
        table[title] = names
    return table


def read_articles(corpus_path) -> list:
    """[(title, [paragraph, ...])]: the corpus holds a title line, its paragraphs, a blank line."""
    articles = []
    for block in pathlib.Path(corpus_path).read_text(encoding="utf-8").split("\n\n"):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if len(lines) >= 2:
            articles.append((lines[0], lines[1:]))
    if not articles:
        raise DataError(corpus_path, "articles: a title line, its paragraphs, a blank line")
    return articles


def split_articles(titles, labels: dict, sizes: dict) -> dict:
    """{title: "train" | "dev" | "unlabelled"}, deterministic: every SPLIT_EVERY-th article (file
    order) to dev, the next to unlabelled, as long as each of its labels stays in train and it has
    at most MAX_HELD_OUT_PARAGRAPHS paragraphs (``sizes``)."""
    in_train = {}
    for title in titles:
        for name in labels[title]:
            in_train[name] = in_train.get(name, 0) + 1
    split = {}
    for index, title in enumerate(titles):
        wanted = {SPLIT_EVERY - 2: "dev", SPLIT_EVERY - 1: "unlabelled"}.get(index % SPLIT_EVERY, "train")
        if (wanted != "train" and sizes[title] <= MAX_HELD_OUT_PARAGRAPHS
                and all(in_train[name] > 1 for name in labels[title])):
            for name in labels[title]:
                in_train[name] -= 1
            split[title] = wanted
        else:
            split[title] = "train"
    return split


def write_jsonl(path, rows) -> None:
    """Writes ``rows`` as JSON lines atomically (kbert.model_dir.atomic_write)."""
    from kbert.model_dir import atomic_write

    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


UNITS = ("paragraph", "article")


def make_dataset(corpus_path, out_dir, labels_path=LABELS_FILE, unit: str = "paragraph") -> dict:
    """Writes train.jsonl, dev.jsonl (labelled), unlabelled.jsonl (no labels) and answers.jsonl
    (id -> labels of the unlabelled rows) into ``out_dir``; returns {file name: row count}.

    ``unit``: ``"paragraph"``, a row per paragraph (id ``AA-PPP``); ``"article"``, a row per article
    with every paragraph in order, one a line (id ``AA``), as the workshop classifies whole pages:
    most are longer than BERT's 512 positions (``kbert finetune --long-documents windows``). The
    split is the same article by article for both."""
    if unit not in UNITS:
        raise OptionsError(f"unit {unit!r}: expected one of {', '.join(UNITS)}", option="unit", value=unit)
    labels = read_label_table(labels_path)
    articles = read_articles(corpus_path)
    missing = [title for title, _ in articles if title not in labels]
    if missing:
        raise DataError(labels_path, f"categories for every article of {corpus_path}",
                        record=f"no line for the article(s) {missing[:5]}")
    split = split_articles([title for title, _ in articles], labels, {t: len(p) for t, p in articles})
    rows = {"train": [], "dev": [], "unlabelled": []}
    for article, (title, paragraphs) in enumerate(articles):
        if unit == "article":
            rows[split[title]].append({"id": f"{article:02d}", "title": title, "text": "\n".join(paragraphs),
                                       "labels": list(labels[title])})
            continue
        for number, text in enumerate(paragraphs):
            rows[split[title]].append({"id": f"{article:02d}-{number:03d}", "title": title, "text": text,
                                       "labels": list(labels[title])})
    out = pathlib.Path(out_dir)
    write_jsonl(out / "train.jsonl", rows["train"])
    write_jsonl(out / "dev.jsonl", rows["dev"])
    write_jsonl(out / "unlabelled.jsonl", [{k: r[k] for k in ("id", "title", "text")} for r in rows["unlabelled"]])
    write_jsonl(out / "answers.jsonl", [{"id": r["id"], "labels": r["labels"]} for r in rows["unlabelled"]])
    return {"train.jsonl": len(rows["train"]), "dev.jsonl": len(rows["dev"]),
            "unlabelled.jsonl": len(rows["unlabelled"]), "answers.jsonl": len(rows["unlabelled"])}


def _read_jsonl(path, what) -> list:
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise DataError(path, f"{what} in JSON ({e.msg})", line=number) from None
    return rows


def _labels_of(row, path, number) -> list:
    value = row.get("labels")
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise DataError(path, "a list of category names", line=number, field="labels", value=value)
    return [str(v) for v in value]


def score(submission_path, answers_path, input_path=None) -> dict:
    """Micro-F1 (the leaderboard's), macro-F1 and exact-match ratio of a submission.

    The submission holds ``{"id", "labels"}`` rows in any order; or it is ``kbert.predict``'s output
    (``{"labels": [...]}`` per row, in the order of ``input_path``, whose ``id`` column names them).
    Every answer id must be predicted exactly once.
    """
    from sklearn.metrics import f1_score
    from sklearn.preprocessing import MultiLabelBinarizer

    submitted = _read_jsonl(submission_path, "a submission row")
    if input_path is not None:
        inputs = _read_jsonl(input_path, "an input row")
        if len(inputs) != len(submitted):
            raise DataError(submission_path, f"one prediction for each of the {len(inputs)} rows of {input_path}",
                            value=f"{len(submitted)} predictions")
        ids = [row.get("id") for row in inputs]
    else:
        ids = [row.get("id") for row in submitted]
    predicted = {}
    for number, (row_id, row) in enumerate(zip(ids, submitted), 1):
        if row_id is None:
            raise DataError(submission_path, "an id (or give --input, the file that was predicted)", line=number,
                            field="id")
        if row_id in predicted:
            raise DataError(submission_path, "each id predicted once", line=number, field="id", value=row_id)
        predicted[row_id] = _labels_of(row, submission_path, number)
    answers = {row["id"]: _labels_of(row, answers_path, n) for n, row in enumerate(_read_jsonl(answers_path, "an answer"), 1)}
    missing = sorted(set(answers) - set(predicted))
    extra = sorted(set(predicted) - set(answers))
    if missing or extra:
        raise DataError(submission_path, f"the ids of {answers_path}",
                        record=f"ids missing {missing[:5]} ({len(missing)}), unknown {extra[:5]} ({len(extra)})")
    order = sorted(answers)
    binarizer = MultiLabelBinarizer().fit([answers[i] for i in order] + [predicted[i] for i in order])
    gold = binarizer.transform([answers[i] for i in order])
    pred = binarizer.transform([predicted[i] for i in order])
    return {"micro_f1": float(f1_score(gold, pred, average="micro", zero_division=0)),
            "macro_f1": float(f1_score(gold, pred, average="macro", zero_division=0)),
            "exact_match": float((gold == pred).all(axis=1).mean()),
            "rows": len(order)}
