"""Each named task's reader on what its benchmark ships, quirks included (docs/benchmark-files.md lists
them, each with the test that covers it; the last test here checks that every test it names exists).

Files in ../shared/data are read whole; for the others a small file is built here with the quirk (the
KorQuAD file is only read: its licence allows no modified copy)."""

import ast
import json
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import REPO, SHARED
from kbert.data import conll, glue, squad, swag
from kbert.errors import DataError

# MNLI's GLUE layout (the header of GLUE's dev_matched.tsv; MultiNLI's own .txt files name the same columns)
MNLI_HEADER = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse"
               "\tsentence2_parse\tsentence1\tsentence2\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label")


def _write(path, text):
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def _mnli_row(index, gold, labels=("neutral",) * 5):
    return "\t".join([str(index), "1", f"{index}n", "fiction", "( a )", "( b )", "(S a)", "(S b)",
                      'He said "go.', f"Premise {index}.", *labels, gold])


# ---------------------------------------------------------------- GLUE


def _mnli_recipe(train, dev):
    from kbert.tasks.core.options import FinetuneOptions
    from kbert.tasks.core.registry import get_task

    named = get_task("glue/mnli")
    return named.task_type.recipe(named, FinetuneOptions(task="glue/mnli", init="unused", model_dir="unused",
                                                         train_file=str(train), eval_file=str(dev)))


def test_mnli_no_consensus_rows_are_left_out_and_named(tmp_path):
    """MultiNLI's own files keep the pairs whose annotators agreed on no label (gold_label "-"); GLUE's
    files leave them out and nothing scores them. kbert reads such a file without them, naming each
    (line and id) in the run's log and summary; a file of nothing else is refused."""
    rows = [_mnli_row(0, "neutral"), _mnli_row(1, "-", ("neutral", "entailment", "contradiction", "neutral",
                                                        "entailment")), _mnli_row(2, "contradiction")]
    dev = _write(tmp_path / "dev_matched.tsv", "\n".join([MNLI_HEADER, *rows]) + "\n")
    data = glue.read_glue("mnli", "dev_matched", path=dev)
    assert [e["id"] for e in data.examples] == ["0", "2"] and [e["label"] for e in data.examples] == [2, 0]
    assert data.examples[0]["text_a"] == 'He said "go.'  # no CSV quoting: the quote is text
    assert data.meta["left_out"] == ["line 3 (id 1)"]
    train = _write(tmp_path / "train.tsv", "\n".join([MNLI_HEADER, rows[0], rows[2]]) + "\n")
    recipe = _mnli_recipe(train, dev)
    assert (recipe.num_train, recipe.num_eval) == (2, 2)
    assert recipe.summary()["eval_left_out"] == 1 and recipe.summary()["eval_left_out_ids"] == ["line 3 (id 1)"]
    assert "train_left_out" not in recipe.summary()
    assert recipe.data_notes == ("1 eval rows left out (gold label '-': no consensus, not scored by GLUE): "
                                 "line 3 (id 1)",)
    only = _write(tmp_path / "only.tsv", "\n".join([MNLI_HEADER, rows[1]]) + "\n")
    with pytest.raises(DataError, match=r"only\.tsv \(whole file\).*got \"only rows labelled '-'"):
        glue.read_glue("mnli", "dev_matched", path=only)
    # other tasks have no such label: "-" is a label outside the task's list, named with its line
    sst = _write(tmp_path / "sst.tsv", "sentence\tlabel\ngood \t1\nmeh \t-\n")
    with pytest.raises(DataError, match=r"sst\.tsv, line 3: field 'label': got '-'"):
        glue.read_glue("sst2", "dev", path=sst)


def test_qqp_rows_as_distributed(tmp_path):
    """QQP: quotes are text (no CSV quoting), an empty question is an empty text (Megatron-LM's reader
    skips such rows; kbert keeps them, as the GLUE server scores them); a row whose question was broken
    over two lines (GLUE's first QQP release had one, GLUE-baselines issue 5) has the wrong number of
    fields and is refused, naming its line."""
    header = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
    path = _write(tmp_path / "dev.tsv", header + '1\t3\t4\t"Why?\t\t0\n2\t5\t6\tHow do I "start"?\tHow?\t1\n')
    examples = glue.read_glue("qqp", "dev", path=path).examples
    assert [(e["id"], e["text_a"], e["text_b"], e["label"]) for e in examples] == [
        ("1", '"Why?', "", 0), ("2", 'How do I "start"?', "How?", 1)]
    broken = _write(tmp_path / "train.tsv", header + "7\t8\t9\tWhat is\n\tWas it real?\t0\n")
    with pytest.raises(DataError, match=r"train\.tsv, line 2: field 'row with 4 columns'"):
        glue.read_glue("qqp", "train", path=broken)


def test_ax_diagnostic_is_a_test_file(tmp_path):
    """GLUE's diagnostic set (AX.tsv, saved as diagnostic.tsv) has no labels: index, sentence1,
    sentence2. Its labelled release (diagnostic-full.tsv: Premise, Hypothesis, Label, ...) names its
    columns otherwise and is refused, naming the column kbert looks for."""
    path = _write(tmp_path / "diagnostic.tsv", "index\tsentence1\tsentence2\n0\tThe cat sat.\tA cat sat.\n")
    assert glue.read_glue("ax", "test", path=path).examples == [
        {"id": "0", "text_a": "The cat sat.", "text_b": "A cat sat.", "label": None}]
    full = _write(tmp_path / "diagnostic-full.tsv", "Lexical Semantics\tPredicate-Argument Structure\tLogic\t"
                  "Knowledge\tDomain\tPremise\tHypothesis\tLabel\n\t\tNegation\t\tArtificial\tA.\tB.\tcontradiction\n")
    with pytest.raises(DataError, match=r"line 1: field 'header'.*'sentence1'"):
        glue.read_glue("ax", "test", path=full)


# ---------------------------------------------------------------- CoNLL-2003


def test_conll_original_iob1_files(tmp_path):
    """The original eng.train / eng.testa / eng.testb tag IOB1 (an entity starts with I-, B- only
    between two of one type) and start documents with -DOCSTART-; a file may end lines with CRLF and
    have several blank lines in a row. kbert reads the tags as written; the evaluation (seqeval in
    conlleval's mode, the official conlleval rules) reads an I- after O as an entity's start."""
    from kbert.tasks.tagging.metrics import ner_metrics

    text = ("-DOCSTART- -X- O O\r\n\r\n\r\nU.N. NNP I-NP I-ORG \r\nofficial NN I-NP O\r\nEkeus NNP I-NP I-PER\r\n"
            "heads VBZ I-VP O\r\n\r\nPeter NNP I-NP I-PER\r\nJohn NNP I-NP B-PER\r\n")
    data = conll.read_conll(_write(tmp_path / "eng.testa", text))
    assert [e["words"] for e in data.examples] == [["U.N.", "official", "Ekeus", "heads"], ["Peter", "John"]]
    tags = [e["tags"] for e in data.examples]
    assert tags == [["I-ORG", "O", "I-PER", "O"], ["I-PER", "B-PER"]] and data.meta["documents"] == 1
    # IOB1 entities as conlleval counts them: ORG, PER, and two adjacent PERs (4 in all); a prediction
    # that runs the two PERs together finds 3 entities, 2 right: P 2/3, R 2/4, F1 4/7
    assert ner_metrics(tags, tags)["f1"] == 1.0
    assert ner_metrics([["I-ORG", "O", "I-PER", "O"], ["I-PER", "I-PER"]], tags)["f1"] == pytest.approx(4 / 7)


# ---------------------------------------------------------------- SWAG


def test_swag_full_files_have_another_layout(tmp_path):
    """swagaf's data/ holds train.csv, val.csv, test.csv (four ending columns and a label; test.csv
    without it) and train_full.csv / val_full.csv, whose gold ending and 3-4 distractors are separate
    columns: kbert reads the regular files and names the column it misses in a _full one."""
    header = ",video-id,fold-ind,startphrase,gold-ending,distractor-0,distractor-1,distractor-2,distractor-3," \
             "gold-source,gold-type,distractor-0-type,distractor-1-type,distractor-2-type,distractor-3-type,sent1," \
             "sent2\n"
    path = _write(tmp_path / "val_full.csv", header + "0,v,1,A man. He,runs.,a,b,c,,gold0-orig,pos,unl,unl,unl,,"
                  "A man.,He\n")
    with pytest.raises(DataError, match=r"val_full\.csv, line 1: field 'header'.*'ending0'"):
        swag.read_swag(path)


# ---------------------------------------------------------------- span QA (SQuAD, JSQuAD, KorQuAD, CMRC 2018)


@pytest.mark.slow
def test_korquad_dev_as_distributed():
    """KorQuAD 1.0's dev file, read as it is: one answer per question, every offset on its text, three
    answers whose text starts or ends with a space (kept: the scorer normalises white space; a training
    span may start on a space); its version string is "KorQuAD_v1.0_dev", a v1 file."""
    path = SHARED / "korquad" / "KorQuAD_v1.0_dev.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    data = squad.read_squad(path)
    assert len(data.examples) == 5774 and data.meta["version"] == "KorQuAD_v1.0_dev"
    assert not data.meta["version_2_with_negative"]
    assert all(len(e["answers"]) == 1 for e in data.examples)
    assert data.meta["unplaced_answers"] == 0 and data.meta["repaired_offsets"] == []
    texts = [a["text"] for article in raw["data"] for p in article["paragraphs"] for qa in p["qas"]
             for a in qa["answers"]]
    assert [a["text"] for e in data.examples for a in e["answers"]] == texts
    assert sum(t != t.strip() for t in texts) == 3


def test_cmrc2018_files_as_distributed(tmp_path):
    """The trial set (five answers one character off, moved) and the dev articles (33 answers at -1,
    kept as texts, none of them first) read whole; the original data/ format of the CMRC 2018
    repository (a list of {context_text, qas: [{query_text, answers: [strings]}]}) is not SQuAD's and is
    refused as a whole file (its squad-style-data/ files are the ones to read)."""
    trial = squad.read_squad(SHARED / "cmrc2018" / "cmrc2018_trial.json")
    assert len(trial.examples) == 1002 and len(trial.meta["repaired_offsets"]) == 5
    dev = squad.read_squad(SHARED / "cmrc2018" / "cmrc2018_dev_articles_760-847.json")
    assert len(dev.examples) == 389 and dev.meta["unplaced_answers"] == 33 and dev.meta["unplaced_questions"] == []
    original = _write(tmp_path / "cmrc2018_dev.json", json.dumps([{"context_id": "DEV_0", "context_text": "天。",
                                                                     "qas": [{"query_id": "DEV_0_QUERY_0",
                                                                              "query_text": "?", "answers": ["天"]}],
                                                                     "title": "t"}], ensure_ascii=False))
    with pytest.raises(DataError, match=r"cmrc2018_dev\.json, top level: field 'data': missing; expected a JSON "
                                        r"object with key 'data'"):
        squad.read_squad(original)


# ---------------------------------------------------------------- the docs page names these tests


def test_every_quirk_in_the_docs_names_a_test_that_exists():
    page = (REPO / "docs" / "benchmark-files.md").read_text(encoding="utf-8")
    named = re.findall(r"`(tests/(?:[\w]+/)*test_[\w]+\.py)::(test_\w+)`", page)
    assert len(named) > 25
    for path, name in named:
        tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
        functions = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert name in functions, f"docs/benchmark-files.md names {path}::{name}, which does not exist"
    # every built-in task is on the page; asked of a fresh interpreter, since tests that run in this
    # one register tasks of their own (tests/tasks/core/test_registry.py)
    listing = subprocess.run([sys.executable, "-c", "from kbert.tasks.core.registry import task_names\n"
                              "print('\\n'.join(task_names()))"], capture_output=True, text=True, check=True,
                             cwd=REPO).stdout.split()
    assert len(listing) > 20 and "glue/sst2" in listing
    for task in listing:
        assert f"`{task}`" in page, task
    assert pathlib.Path(REPO / "docs" / "README.md").read_text(encoding="utf-8").count("benchmark-files.md") == 1
