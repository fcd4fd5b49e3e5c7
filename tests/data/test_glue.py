"""GLUE readers on the real distribution files, plus the registry and malformed rows; real files mutated
by hypothesis (tests/fixtures/file_mutations.py: columns dropped or added, labels replaced, lines cut,
bytes flipped) either read, every label one the task has, or raise a DataError naming file and line."""

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import SHARED
from fixtures.file_mutations import check_named, first_lines, mutate, mutations
from kbert.data.glue import TASKS, get_task, read_glue
from kbert.errors import DataError

GLUE = SHARED / "glue"


@pytest.mark.parametrize("task,directory,split,rows", [
    ("cola", "CoLA", "train", 8551), ("cola", "CoLA", "dev", 1043),
    ("sst2", "SST-2", "train", 67349), ("sst2", "SST-2", "dev", 872),
    ("mrpc", "MRPC", "train", 3668), ("mrpc", "MRPC", "dev", 408),
    ("stsb", "STS-B", "train", 5749), ("stsb", "STS-B", "dev", 1500),
])
def test_row_counts(task, directory, split, rows):
    data = read_glue(task, split, GLUE / directory)
    assert len(data.examples) == rows
    assert TASKS[task].directory == directory


def test_cola_headerless_first_rows_and_backspace():
    train = read_glue("cola", "train", GLUE / "CoLA")
    # line 1: gj04<TAB>1<TAB><TAB>Our friends won't buy this analysis, let alone the next one we propose.
    assert train.examples[0] == {
        "id": "train-0", "label": 1, "text_b": None,
        "text_a": "Our friends won't buy this analysis, let alone the next one we propose."}
    assert train.label_names == ("0", "1")
    # lines 7130-7132 hold U+0008 (kept, not treated as whitespace or a separator)
    assert train.examples[7129]["text_a"] == (
        "This girl in the red coat will put \x08a picture of Bill it on your desk before tomorrow.")
    assert train.examples[7129]["label"] == 0
    assert sum("\x08" in e["text_a"] for e in train.examples) == 3
    dev = read_glue("cola", "dev", GLUE / "CoLA")
    assert dev.examples[0]["text_a"] == "The sailors rode the breeze clear of the rocks."
    assert dev.examples[-1]["text_a"] == "John talked to Bill about himself."
    labels = [e["label"] for e in train.examples]
    assert labels.count(0) + labels.count(1) == 8551 and 0 < labels.count(0) < 8551


def test_sst2_keeps_trailing_space():
    dev = read_glue("sst2", "dev", GLUE / "SST-2")
    assert dev.examples[0]["text_a"] == "it 's a charming and often affecting journey . "
    assert dev.examples[0]["label"] == 1
    assert dev.examples[1] == {"id": "dev-1", "text_a": "unflinchingly bleak and desperate ",
                               "text_b": None, "label": 0}
    train = read_glue("sst2", "train", GLUE / "SST-2")
    assert train.examples[0]["text_a"] == "hide new secretions from the parental units "
    assert train.examples[-1]["text_a"].startswith("this new jangle of noise")


def test_mrpc_bom_header_and_quotes():
    dev = read_glue("mrpc", "dev", GLUE / "MRPC")
    first = dev.examples[0]
    assert first["label"] == 1
    assert first["text_a"] == ("He said the foodservice pie business doesn't fit the company's "
                               "long-term growth strategy.")
    # An unbalanced '"' opens the field: with CSV quoting this would swallow the next lines.
    assert first["text_b"] == '"The foodservice pie business does not fit our long-term growth strategy.'
    assert dev.examples[-1]["text_b"].startswith('In Soviet times the Beatles\' music "was considered')
    train = read_glue("mrpc", "train", GLUE / "MRPC")
    assert train.examples[1585]["text_a"].startswith("Treasury\x12s long-range plan")


def test_stsb_float_scores():
    train = read_glue("stsb", "train", GLUE / "STS-B")
    assert train.label_names is None and TASKS["stsb"].is_regression
    first = train.examples[0]
    assert (first["text_a"], first["text_b"], first["label"]) == (
        "A plane is taking off.", "An air plane is taking off.", 5.0)
    assert isinstance(first["label"], float)
    dev = read_glue("stsb", "dev", GLUE / "STS-B")
    assert dev.examples[1]["label"] == 4.75
    assert dev.examples[-1]["label"] == 0.0 and dev.examples[-1]["id"] == "1499"
    assert all(0.0 <= e["label"] <= 5.0 for e in train.examples + dev.examples)


def test_registry():
    assert get_task("glue/SST-2") is TASKS["sst2"]
    assert set(TASKS) >= {"cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli"}
    assert TASKS["cola"].metrics == ("matthews_corrcoef",)
    assert TASKS["mrpc"].metrics == ("accuracy", "f1")
    assert TASKS["stsb"].metrics == ("pearson", "spearman")
    assert TASKS["mnli"].file("dev_mismatched") == "dev_mismatched.tsv"
    # data_dir may be the task folder or the GLUE root
    assert TASKS["sst2"].path(GLUE, "dev") == str(GLUE / "SST-2" / "dev.tsv")
    assert TASKS["sst2"].path(GLUE / "SST-2", "dev") == str(GLUE / "SST-2" / "dev.tsv")
    assert TASKS["mnli"].labels == ("contradiction", "entailment", "neutral")
    with pytest.raises(ValueError, match="dev_matched"):
        TASKS["mnli"].file("dev")
    with pytest.raises(ValueError, match="unknown GLUE task"):
        get_task("nope")


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


# Layouts as GLUE's download_glue_data.py writes them (headers copied from the real files).
MNLI_TRAIN_HEADER = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse"
                     "\tsentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label")
MNLI_DEV_HEADER = MNLI_TRAIN_HEADER.replace(
    "label1\tgold_label", "label1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label")


def test_other_tasks_layouts(tmp_path):
    qqp = _write(tmp_path, "qqp.tsv", "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
                 '7\t15\t16\tHow do "I" start?\tHow to start?\t1\n')
    ex = read_glue("qqp", "train", path=qqp).examples[0]
    assert ex == {"id": "7", "text_a": 'How do "I" start?', "text_b": "How to start?", "label": 1}

    row = "0\t1\t2\tgenre\t( a )\t( b )\t(S a)\t(S b)\tA man.\tA person.\t"
    train = _write(tmp_path, "train.tsv", MNLI_TRAIN_HEADER + "\n" + row + "neutral\tneutral\n")
    dev = _write(tmp_path, "dev_matched.tsv",
                 MNLI_DEV_HEADER + "\n" + row + "neutral\tentailment\tneutral\tneutral\tneutral\tneutral\n"
                 + row + "contradiction\tcontradiction\tneutral\tcontradiction\tcontradiction\tcontradiction\n")
    assert read_glue("mnli", "train", path=train).examples[0]["label"] == 2
    assert [e["label"] for e in read_glue("mnli", "dev_matched", path=dev).examples] == [2, 0]

    for name, task in [("qnli", "index\tquestion\tsentence\tlabel"), ("rte", "index\tsentence1\tsentence2\tlabel")]:
        path = _write(tmp_path, f"{name}.tsv", task + "\n0\tA?\tB.\tnot_entailment\n")
        assert read_glue(name, "dev", path=path).examples[0]["label"] == 1
    wnli = _write(tmp_path, "wnli.tsv", "index\tsentence1\tsentence2\tlabel\n0\tA.\tB.\t1\n")
    assert read_glue("wnli", "train", path=wnli).examples[0]["label"] == 1


def test_test_splits_have_no_labels(tmp_path):
    cola = _write(tmp_path, "cola_test.tsv", "index\tsentence\n0\tBill whistled past the house.\n")
    ex = read_glue("cola", "test", path=cola).examples
    assert ex == [{"id": "0", "text_a": "Bill whistled past the house.", "text_b": None, "label": None}]
    mrpc = _write(tmp_path, "mrpc_test.tsv",
                  "\ufeffindex\t#1 ID\t#2 ID\t#1 String\t#2 String\n0\t1089874\t1089925\tA b.\tC d.\n")
    ex = read_glue("mrpc", "test", path=mrpc).examples[0]
    assert (ex["id"], ex["text_a"], ex["text_b"], ex["label"]) == ("0", "A b.", "C d.", None)
    stsb = _write(tmp_path, "stsb_test.tsv",
                  "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\n"
                  "0\tmain-captions\tMSRvid\t2012test\t0024\tnone\tnone\tA girl.\tA boy.\n")
    assert read_glue("stsb", "test", path=stsb).examples[0]["label"] is None


@pytest.mark.parametrize("content,line,field,value", [
    ("sentence\tlabel\ngood \t1\nbad \t2\n", 3, "label", "'2'"),
    ("sentence\tlabel\ngood \t1\nno label here\n", 3, "row with 1 columns", "no label here"),
    ("sentence\tlabel\ngood \t1\n\nbad \t0\n", 3, "row with 1 columns", "''"),
    ("sentence\tlabel\ngood \t1\tx\n", 2, "row with 3 columns", "x"),
])
def test_malformed_sst2_rows(tmp_path, content, line, field, value):
    path = _write(tmp_path, "train.tsv", content)
    with pytest.raises(DataError) as info:
        read_glue("sst2", "train", path=path)
    message = str(info.value)
    assert str(path) in message and f"line {line}" in message and field in message and value in message
    assert info.value.line == line and "expected" in message


def test_malformed_scores_and_headers(tmp_path):
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    for bad in ["4,5", "nan", "5.5", "", "high"]:
        path = _write(tmp_path, "dev.tsv", header + f"0\tg\tf\t2012\t0\tn\tn\tA.\tB.\t{bad}\n")
        with pytest.raises(DataError, match=r"line 2: field 'score'") as info:
            read_glue("stsb", "dev", path=path)
        assert repr(bad) in str(info.value)
    path = _write(tmp_path, "dev.tsv", "sentence\tlabl\nx\t1\n")
    with pytest.raises(DataError, match=r"line 1: field 'header'.*column named 'label'"):
        read_glue("sst2", "dev", path=path)


def test_bad_utf8_empty_and_missing(tmp_path):
    path = _write(tmp_path, "train.tsv", b"sentence\tlabel\nok\t1\nbad \xff byte\t0\n")
    with pytest.raises(DataError, match=r"train.tsv, line 3: field 'bytes': got b'\\xff'; expected UTF-8"):
        read_glue("sst2", "train", path=path)
    for content in ["", "\n\n", "sentence\tlabel\n"]:
        path = _write(tmp_path, "train.tsv", content)
        with pytest.raises(DataError, match="train.tsv.*(non-empty file|at least one data row)"):
            read_glue("sst2", "train", path=path)
    with pytest.raises(DataError, match="file not found"):
        read_glue("sst2", "train", tmp_path / "missing")


# -- mutated files (hypothesis) ------------------------------------------------------------------
GLUE_SAMPLES = {  # task -> (directory, split, first lines of the real file)
    "cola": ("CoLA", "dev", 12), "sst2": ("SST-2", "dev", 12), "mrpc": ("MRPC", "dev", 8), "stsb": ("STS-B", "dev", 8),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(task=st.sampled_from(sorted(GLUE_SAMPLES)), ops=mutations())
@example(task="sst2", ops=[("bad_label", 1, 0)])  # always tried: SST-2's first label made "2"
def test_mutated_glue_files_read_or_name_file_and_line(tmp_path, task, ops):
    from kbert.data.glue import read_glue

    directory, split, n = GLUE_SAMPLES[task]
    data = mutate(first_lines(SHARED / "glue" / directory / f"{split}.tsv", n), ops)
    path = tmp_path / f"{task}-{split}.tsv"
    try:
        result = read_glue(task, split, path=path, data=data)
    except DataError as e:
        check_named(e, path)
        return
    for example in result.examples:  # accepted: each label is one the task has (GLUE's definitions)
        label = example["label"]
        if task == "stsb":  # a similarity score from 0 to 5
            assert isinstance(label, float) and 0.0 <= label <= 5.0, example
        else:  # CoLA, SST-2, MRPC: class 0 or 1
            assert type(label) is int and label in (0, 1), example
