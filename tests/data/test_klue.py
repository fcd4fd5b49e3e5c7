"""KLUE readers (kbert.data.klue) on the shared files, bad input named by file, row/line and field, and
the named tasks' file and row selection (klue/*, korquad/v1.0, cmrc2018) before any model is built."""

import json
import re

import pytest

from conftest import SHARED
from kbert.data import klue, squad
from kbert.errors import DataError

KLUE = SHARED / "klue"
NER_FILE = KLUE / "klue-ner-v1.1" / "klue-ner-v1.1_dev.tsv"
NLI_FILE = KLUE / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json"
STS_FILE = KLUE / "klue-sts-v1.1" / "klue-sts-v1.1_dev.json"
CMRC_FILE = SHARED / "cmrc2018" / "cmrc2018_trial.json"
KORQUAD_FILE = SHARED / "korquad" / "KorQuAD_v1.0_dev.json"


def test_shared_files_read_whole():
    nli, sts, ner = klue.read_nli(NLI_FILE), klue.read_sts(STS_FILE), klue.read_ner(NER_FILE)
    assert (len(nli), len(sts), len(ner)) == (2000, 350, 3500)  # the counts of the data's README
    raw = json.loads(NLI_FILE.read_text(encoding="utf-8"))
    assert [klue.NLI_LABELS[e["label"]] for e in nli.examples] == [r["gold_label"] for r in raw]
    raw = json.loads(STS_FILE.read_text(encoding="utf-8"))
    assert [e["label"] for e in sts.examples] == [r["labels"]["label"] for r in raw]
    assert all(e["binary_label"] == int(e["label"] >= 3.0) for e in sts.examples)
    assert len(klue.NER_LABELS) == 13
    for e in ner.examples:
        # the sentence is the ## line's sentence without its <entity:TYPE> marks: spaces included
        assert e["text"] == re.sub(r"<([^<>]*?):([A-Z]{2})>", r"\1", e["marked"])
        assert len(e["tags"]) == len(e["text"])
    first = ner.examples[0]
    assert first["id"] == "klue-ner-v1_dev_00001-wikitree"
    assert first["text"].startswith("B 씨는") and first["tags"][:3] == ["B-PS", "O", "O"]


def test_row_slices():
    data = klue.read_nli(NLI_FILE)
    tail = klue.select_rows(data, "1998:")
    assert len(tail) == 2 and tail.examples == data.examples[1998:] and tail.meta["rows"] == "1998:"
    assert klue.select_rows(data, ":3").examples == data.examples[:3]
    assert klue.select_rows(data, None) is data
    with pytest.raises(ValueError, match="START:END"):
        klue.select_rows(data, "12")
    with pytest.raises(ValueError, match="select none"):
        klue.select_rows(data, "5000:")


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


NER_HEAD = "## 주석 : ##\n## klue-ner-x_00001\t<김:PS> 씨\n"


@pytest.mark.parametrize("body, field, line", [
    ("김\tB-PS\n \tO\n씨O\n", "tab", 5),            # a character line without a tab
    ("김\tB-XX\n \tO\n씨\tO\n", "NE_TAG", 3),        # an unknown tag
    ("김씨\tB-PS\n", "CHAR", 3),                     # two characters on one line
])
def test_bad_ner_lines_are_named(tmp_path, body, field, line):
    path = _write(tmp_path, "bad.tsv", NER_HEAD + body)
    with pytest.raises(DataError) as e:
        klue.read_ner(path)
    assert e.value.field == field and e.value.line == line and str(path) in str(e.value)
    assert "klue-ner-x_00001" in str(e.value)


@pytest.mark.parametrize("row, field, reader", [
    ({"guid": "g1", "premise": "a", "hypothesis": "b", "gold_label": "maybe"}, "gold_label", klue.read_nli),
    ({"guid": "g1", "premise": "a", "gold_label": "neutral"}, "hypothesis", klue.read_nli),
    ({"guid": "g1", "sentence1": "a", "sentence2": "b", "labels": {"binary-label": 1}}, "labels.label",
     klue.read_sts),
    ({"guid": "g1", "sentence1": "a", "sentence2": "b", "labels": {"label": 3.2, "binary-label": 2}},
     "labels.binary-label", klue.read_sts),
])
def test_bad_json_rows_are_named(tmp_path, row, field, reader):
    good = {"guid": "g0", "premise": "a", "hypothesis": "b", "gold_label": "neutral", "sentence1": "a",
            "sentence2": "b", "labels": {"label": 1.0, "binary-label": 0}}
    path = _write(tmp_path, "bad.json", json.dumps([good, row], ensure_ascii=False))
    with pytest.raises(DataError) as e:
        reader(path)
    assert e.value.field == field and "row 1" in str(e.value) and "g1" in str(e.value)


def test_cmrc_offsets_one_off_are_moved_and_far_ones_unplaced(tmp_path):
    data = squad.read_squad(CMRC_FILE)
    repaired = data.meta["repaired_offsets"]
    assert len(repaired) == 5 and all("TRIAL_210_QUERY_" in r for r in repaired)
    for e in data.examples:
        for a in e["answers"]:
            assert e["context"][a["answer_start"]:a["answer_start"] + len(a["text"])] == a["text"]
    # without the tolerance, the file's own offsets place nothing: those questions have no span
    strict = squad.read_squad(CMRC_FILE, offset_tolerance=0)
    assert strict.meta["unplaced_questions"] == [f"TRIAL_210_QUERY_{i}" for i in range(5)]
    root = json.loads(CMRC_FILE.read_text(encoding="utf-8"))
    answer = root["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]
    answer["answer_start"] += 5
    far = squad.read_squad(_write(tmp_path, "far.json", json.dumps(root, ensure_ascii=False)))
    assert far.examples[0]["answers"] == [{"text": answer["text"], "answer_start": -1}]
    assert far.meta["unplaced_questions"] == ["TRIAL_800_QUERY_0"]


def test_missing_answers_named(tmp_path):
    root = {"version": "v1.0", "data": [{"title": "t", "paragraphs": [{"context": "서울은 수도다.", "qas": [
        {"id": "q-1", "question": "수도는?"}]}]}]}
    with pytest.raises(DataError) as e:
        squad.read_squad(_write(tmp_path, "q.json", json.dumps(root, ensure_ascii=False)))
    assert e.value.field == "answers" and "q-1" in str(e.value)


def _recipe(task, **kwargs):
    from kbert.tasks.core.options import FinetuneOptions
    from kbert.tasks.core.registry import get_task

    named = get_task(task)
    rows = {k: kwargs.pop(k) for k in ("train_rows", "eval_rows") if k in kwargs}
    if rows:  # the KLUE tasks' own options
        from kbert.tasks.core.options import RowsOptions

        kwargs["named_options"] = RowsOptions(**rows)
    options = FinetuneOptions(task=task, init="unused", model_dir="unused", **kwargs)
    return named.task_type.recipe(named, options)


def test_named_tasks_select_rows_and_articles():
    recipe = _recipe("klue/ner", train_file=str(NER_FILE), eval_file=str(NER_FILE), train_rows=":30",
                     eval_rows="3490:")
    assert (recipe.num_train, recipe.num_eval) == (30, 10)
    assert recipe.dev[0]["id"] == klue.read_ner(NER_FILE).examples[3490]["id"]
    recipe = _recipe("klue/sts", data_dir=str(KLUE), train_file=str(STS_FILE), train_rows=":300", eval_rows="300:")
    assert (recipe.num_train, recipe.num_eval) == (300, 50)  # --data-dir: the KLUE root finds the dev file
    recipe = _recipe("korquad/v1.0", train_file=str(KORQUAD_FILE), eval_file=str(KORQUAD_FILE),
                     named_options=_articles(train_articles=":2", eval_articles="139:"))
    titles = list(dict.fromkeys(a["title"] for a in json.loads(KORQUAD_FILE.read_text(encoding="utf-8"))["data"]))
    assert {e["title"] for e in recipe.dev} == {titles[139]}
    assert {e["title"] for e in recipe.train} == set(titles[:2])


def _articles(**kwargs):
    from kbert.tasks.span_qa.task import ArticlesOptions

    return ArticlesOptions(**kwargs)


@pytest.mark.parametrize("task, kwargs, message", [
    ("klue/nli", {"train_file": str(NLI_FILE), "eval_file": str(NLI_FILE)}, "needs --train-rows and --eval-rows"),
    ("klue/nli", {"train_file": str(NLI_FILE), "eval_file": str(NLI_FILE), "train_rows": ":10", "eval_rows": "5:"},
     "in both the training and the evaluation rows"),
    ("klue/nli", {"data_dir": str(KLUE)}, "klue-nli-v1.1_train.json"),
])
def test_named_task_errors(task, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _recipe(task, **kwargs)


def test_rows_are_the_klue_tasks_own_options():
    from kbert.commands.finetune import finetune_options, parse_args

    from kbert.errors import OptionsError

    with pytest.raises(OptionsError, match="task 'glue/sst2' takes no options of its own, got RowsOptions") as e:
        _recipe("glue/sst2", data_dir="x", train_rows=":10")
    assert e.value.option == "named_options"
    flags = ["--init", "i", "--model-dir", "m", "--train-rows", ":10"]
    with pytest.raises(ValueError, match=re.escape("--train-rows is an option of the tasks klue/nli, klue/sts, "
                                                   "klue/ner; task 'glue/sst2' does not take it")):
        finetune_options(parse_args(["--task", "glue/sst2", *flags]))
    options = finetune_options(parse_args(["--task", "klue/sts", *flags, "--eval-rows", "10:"]))
    assert (options.named_options.train_rows, options.named_options.eval_rows) == (":10", "10:")
    assert not hasattr(options, "train_rows")  # not a field of every run
