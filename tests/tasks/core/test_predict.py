"""python -m kbert.predict (issue 17 item 3): every task type's model directory on unlabelled rows;
one prediction per input row, in input order, each equal to the model's answer for that row alone;
the GLUE and SQuAD submission formats; bad rows named by file and line before anything is written;
the output replaced atomically.

Nothing lost: ``kbert predict`` (in this process, through kbert.cli_support.run) refuses an --output
that is its --input (by name or through a symbolic link) or a file of the model directory, and an
existing output unless --overwrite (then replaced whole); odd rows (a JSON line holding a lone
surrogate, two rows with one id, a multi-label row ``[""]``) are one line naming file, line and
field. Each refusal exits 1 and leaves every file byte for byte as it was."""

import json

import keras
import numpy as np
import pytest

from kbert.errors import DataError
from kbert.tasks.core.predict import predict_file
from kbert.tasks import load_task_model
from kbert.tasks.core.prediction import PredictOptions
from fixtures.file_tree import tree
from fixtures.task_runs import write_jsonl_rows
from fixtures.cli import run_command

TEXTS = ["a gripping film", "dull and overlong, with a plot that never arrives anywhere at all", "ok",
         "the actors are wonderful and the music is too", "", "caf\u00e9 \u4e2d\u6587 \U0001F600"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory, tiny_model_dir):
    """One fine-tuned-looking model directory per task type (random non-trivial heads)."""
    from kbert.tasks import (MultiLabelClassifier, MultipleChoiceModel, SpanQuestionAnswerer, TextClassifier,
                             TextRegressor, TokenTagger)

    keras.utils.set_random_seed(0)
    root = tmp_path_factory.mktemp("predict")
    made = {
        "sst2": (TextClassifier.from_model_dir(tiny_model_dir, label_names=["negative", "positive"], seq_length=32),
                 {"task_name": "glue/sst2"}),
        "pairs": (TextClassifier.from_model_dir(tiny_model_dir, label_names=["x", "y", "z"], num_segments=2,
                                                seq_length=32),
                  {"task_name": "csv", "text_columns": ["premise", "hypothesis"], "label_column": "label"}),
        "stsb": (TextRegressor.from_model_dir(tiny_model_dir, num_segments=2, seq_length=32),
                 {"task_name": "glue/stsb"}),
        "multi": (MultiLabelClassifier.from_model_dir(tiny_model_dir, label_names=["art", "cinema", "place"],
                                                      seq_length=32),
                  {"task_name": "csv", "text_columns": ["text"], "label_column": "labels"}),
        "ner": (TokenTagger.from_model_dir(tiny_model_dir, label_names=TAGS, seq_length=32),
                {"task_name": "conll2003"}),
        "squad": (SpanQuestionAnswerer.from_model_dir(tiny_model_dir, seq_length=48, max_query_length=12,
                                                      doc_stride=16), {"task_name": "squad/v1.1"}),
        "swag": (MultipleChoiceModel.from_model_dir(tiny_model_dir, seq_length=32), {"task_name": "swag"}),
    }
    for name, (model, info) in made.items():
        for w in model.head.weights:
            w.assign(np.random.default_rng(1).normal(0, 0.5, w.shape).astype("float32"))
        model.save_model_dir(root / name, extra_info=info)
    return root


@pytest.fixture(scope="module")
def loaded(dirs):
    """The saved models, reloaded once (load_task_model): predict_file(..., model=) reuses them."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = load_task_model(dirs / name)
        return cache[name]

    return get


@pytest.fixture(scope="module")
def predict(dirs, loaded):
    """predict(name, input, output, **kwargs): predict_file on model directory ``name``, reusing its
    loaded model."""
    return lambda name, *args, **kwargs: predict_file(dirs / name, *args, model=loaded(name), **kwargs)


def _jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.slow
def test_classifier_glue_test_file_jsonl_and_submission(dirs, loaded, predict, tmp_path):
    test_tsv = tmp_path / "test.tsv"  # a GLUE test file: index and sentence, no label
    test_tsv.write_text("index\tsentence\n" + "".join(f"{i}\t{t}\n" for i, t in enumerate(TEXTS)), encoding="utf-8")
    out = tmp_path / "p.jsonl"
    result = predict("sst2", test_tsv, out, options=PredictOptions(probabilities=True, batch_size=3))
    rows = _jsonl(out)
    assert result["rows"] == len(rows) == len(TEXTS)
    assert [r["id"] for r in rows] == [str(i) for i in range(len(TEXTS))]
    model = loaded("sst2")
    for text, row in zip(TEXTS, rows):  # each row equals model.predict on that row alone
        p = _softmax(model.predict(np.array([text], dtype=object), verbose=0)[0])
        assert row["label"] == model.label_names[int(p.argmax())]
        np.testing.assert_allclose([row["probabilities"][n] for n in model.label_names], p, atol=1e-5)

    predict("sst2", test_tsv, tmp_path / "SST-2.tsv", fmt="glue")
    lines = (tmp_path / "SST-2.tsv").read_text().splitlines()
    assert lines[0] == "index\tprediction"
    # The GLUE server's labels (0/1), not the model's label names.
    assert lines[1:] == [f"{r['id']}\t{model.label_names.index(r['label'])}" for r in rows]


@pytest.mark.slow
def test_regression_scores_and_glue_scores(dirs, loaded, predict, tmp_path):
    test_tsv = tmp_path / "sts.tsv"
    test_tsv.write_text("index\tgenre\tsentence1\tsentence2\n"
                        + "".join(f"{10 + i}\tx\t{a}\t{b}\n" for i, (a, b) in enumerate(zip(TEXTS, TEXTS[::-1]))))
    predict("stsb", test_tsv, tmp_path / "s.jsonl")
    rows = _jsonl(tmp_path / "s.jsonl")
    model = loaded("stsb")
    expected = [model.predict({"text_a": np.array([a], dtype=object), "text_b": np.array([b], dtype=object)},
                              verbose=0)[0] for a, b in zip(TEXTS, TEXTS[::-1])]
    assert [r["id"] for r in rows] == [str(10 + i) for i in range(len(TEXTS))]
    np.testing.assert_allclose([r["score"] for r in rows], expected, atol=1e-5)
    predict("stsb", test_tsv, tmp_path / "STS-B.tsv", fmt="glue")
    lines = (tmp_path / "STS-B.tsv").read_text().splitlines()[1:]
    assert [line.split("\t")[1] for line in lines] == [f"{r['score']:.3f}" for r in rows]
    with pytest.raises(ValueError, match="--probabilities: a regression model"):
        predict("stsb", test_tsv, tmp_path / "x", options=PredictOptions(probabilities=True))


@pytest.mark.slow
def test_table_pairs_with_id_column_tsv_format_and_unknown_label(dirs, loaded, predict, tmp_path):
    rows = [{"key": f"k{i}", "premise": a, "hypothesis": b} for i, (a, b) in enumerate(zip(TEXTS, TEXTS[1:]))]
    rows[2]["label"] = "y"  # a known label is fine where present
    src = tmp_path / "pairs.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    predict("pairs", src, tmp_path / "p.tsv", fmt="tsv", options=PredictOptions(id_column="key"))
    lines = (tmp_path / "p.tsv").read_text().splitlines()
    assert lines[0] == "id\tlabel" and len(lines) == len(rows) + 1
    model = loaded("pairs")
    expected = model.predict_labels({"text_a": np.array([r["premise"] for r in rows], dtype=object),
                                     "text_b": np.array([r["hypothesis"] for r in rows], dtype=object)})
    assert lines[1:] == [f"k{i}\t{label}" for i, label in enumerate(expected)]

    rows[4]["label"] = "nope"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = r"pairs\.jsonl, line 5: field 'label': got 'nope'; expected one of 'x', 'y', 'z'"
    with pytest.raises(DataError, match=expected):
        predict("pairs", src, tmp_path / "q.tsv")
    assert not (tmp_path / "q.tsv").exists()


@pytest.mark.slow
def test_multi_label_lists_in_order(dirs, loaded, predict, tmp_path):
    src = tmp_path / "m.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    predict("multi", src, tmp_path / "m.out.jsonl", options=PredictOptions(probabilities=True))
    rows = _jsonl(tmp_path / "m.out.jsonl")
    model = loaded("multi")
    assert [r["id"] for r in rows] == [str(i) for i in range(1, len(TEXTS) + 1)]
    for text, row in zip(TEXTS, rows):
        logits = model.predict(np.array([text], dtype=object), verbose=0)[0]
        assert row["labels"] == model.predict_labels([text])[0]
        np.testing.assert_allclose([row["probabilities"][n] for n in model.label_names], 1 / (1 + np.exp(-logits)),
                                   atol=1e-5)
    with pytest.raises(ValueError, match="--format glue: a multi_label_classifier model writes jsonl, tsv"):
        predict("multi", src, tmp_path / "g.tsv", fmt="glue")


@pytest.mark.slow
def test_tagging_conll_and_lines_with_entity_spans(dirs, loaded, predict, tmp_path):
    from kbert.tasks.tagging.ner_alignment import entity_spans

    sentences = [["John", "Smith", "lives", "in", "Z\u00fcrich", "."], ["Hello"], ["a", "b", "c", "d", "e", "f", "g"]]
    conll = tmp_path / "t.conll"  # words only, and -DOCSTART- lines, as a CoNLL test file without tags
    conll.write_text("-DOCSTART-\n\n" + "\n\n".join("\n".join(s) for s in sentences) + "\n")
    predict("ner", conll, tmp_path / "t.jsonl")
    lines = tmp_path / "t.txt"
    lines.write_text("\n".join(" ".join(s) for s in sentences[:1]) + "\n\n" + " ".join(sentences[2]) + "\n")
    predict("ner", lines, tmp_path / "l.jsonl", options=PredictOptions(task_format="lines"))
    model = loaded("ner")
    rows = _jsonl(tmp_path / "t.jsonl")
    assert [r["id"] for r in rows] == ["0", "1", "2"]
    by_line = _jsonl(tmp_path / "l.jsonl")
    assert [r["id"] for r in by_line] == ["1", "2", "3"] and by_line[1] == {"id": "2", "tags": [], "entities": []}
    for words, row in zip(sentences, rows):
        assert row["tags"] == model.predict_words([words])[0]
        spans = [(k, s, e + 1) for k, s, e in entity_spans(row["tags"])]
        assert [(x["type"], x["start"], x["end"]) for x in row["entities"]] == spans
        assert [x["text"] for x in row["entities"]] == [" ".join(words[s:e]) for _, s, e in spans]
    assert [r["tags"] for r in by_line] == [rows[0]["tags"], [], rows[2]["tags"]]


@pytest.mark.slow
def test_span_qa_squad_file_without_answers(dirs, loaded, predict, tmp_path):
    context = ("kbert is a BERT implementation for Keras. It was written in Z\u00fcrich in 2026 by a small team "
               "of engineers who like tests, and it runs on two CPU cores.")
    data = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": [
        {"id": "q1", "question": "Where was it written?"},
        {"id": "q2", "question": "How many cores?", "answers": []},
        {"id": "q3", "question": "What is kbert?"}]}]}]}
    src = tmp_path / "q.json"
    src.write_text(json.dumps(data))
    predict("squad", src, tmp_path / "a.jsonl", options=PredictOptions(batch_size=2))
    predict("squad", src, tmp_path / "predictions.json", fmt="squad")
    rows = _jsonl(tmp_path / "a.jsonl")
    model = loaded("squad")
    questions = [q["question"] for q in data["data"][0]["paragraphs"][0]["qas"]]
    assert [r["id"] for r in rows] == ["q1", "q2", "q3"]
    assert [r["answer"] for r in rows] == [model.answer([q], [context])[0].text for q in questions]
    assert json.loads((tmp_path / "predictions.json").read_text()) == {r["id"]: r["answer"] for r in rows}


@pytest.mark.slow
def test_multiple_choice_swag_csv(dirs, loaded, predict, tmp_path):
    header = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3\n"
    rows = [[str(i), "v", f"f{i}", "s", TEXTS[i], "then", "g", *(TEXTS * 2)[i:i + 4]] for i in range(4)]
    src = tmp_path / "test.csv"
    src.write_text(header + "".join(",".join(f'"{x}"' for x in r) + "\n" for r in rows))
    predict("swag", src, tmp_path / "c.jsonl", options=PredictOptions(probabilities=True))
    out = _jsonl(tmp_path / "c.jsonl")
    model = loaded("swag")
    assert [r["id"] for r in out] == ["f0", "f1", "f2", "f3"]
    for r, o in zip(rows, out):
        logits = model.predict_logits({"text_a": [r[4]], "choices": [[f"then {e}".strip() for e in r[7:]]]})[0]
        assert o["choice"] == int(logits.argmax()) and o["label"] == r[7 + o["choice"]]
        np.testing.assert_allclose(o["probabilities"], _softmax(logits), atol=1e-5)


@pytest.mark.slow
def test_bad_row_is_named_and_nothing_is_written(dirs, loaded, predict, tmp_path, monkeypatch):
    out = tmp_path / "out.jsonl"
    out.write_text("the previous predictions\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"txt": "no text field"}\n{"text": "fine"}\n')
    with pytest.raises(DataError, match=r"bad\.jsonl, line 2: field 'text': missing"):
        predict("multi", bad, out, overwrite=True)
    assert out.read_text() == "the previous predictions\n"
    # A failure while the new file is being put in place (here: the rename) keeps the old file too.
    good = tmp_path / "good.jsonl"
    good.write_text('{"text": "fine"}\n')
    import kbert.model_metadata  # where atomic_write renames

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(kbert.model_metadata.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        predict("multi", good, out, overwrite=True)
    assert out.read_text() == "the previous predictions\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "good.jsonl", "out.jsonl"]


@pytest.mark.slow
def test_command_line_one_line_errors_and_a_run(dirs, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS[:3]) + '{"text": 3}\n')
    bad = run_command("predict", dirs / "multi", "--input", src, "--output", tmp_path / "o.jsonl")
    assert bad.status == 1
    assert bad.err.strip().splitlines() == [
        f"kbert predict: error: {src}, line 4: field 'text': got 3; expected a string"]
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS[:3]))
    run = run_command("predict", dirs / "multi", "--input", src, "--output", tmp_path / "o.tsv", "--format", "tsv",
                      "--probabilities", "--quiet")
    assert run.status == 0, run.err
    assert "3 predictions (multi_label_classifier" in run.out
    lines = (tmp_path / "o.tsv").read_text().splitlines()
    assert lines[0] == "id\tlabels\tprobabilities.art\tprobabilities.cinema\tprobabilities.place" and len(lines) == 4


# -- outputs that would destroy data, odd rows ------------------------------------------------------
def test_predict_never_writes_over_its_input_or_the_model(kbert_cli, csv_classifiers, tmp_path):
    cls = csv_classifiers / "cls"
    same = write_jsonl_rows(tmp_path / "same.jsonl", [{"text": "a fine film"}, {"text": "dull"}])
    before, model_before = tree(tmp_path), tree(cls)
    status, err = kbert_cli("predict", [cls, "--input", same, "--output", same, "--overwrite"])
    assert status == 1 and err == [f"kbert predict: error: {same} is an input of this command: writing it would "
                                   "destroy that input; choose another output"]
    # The same file under another name (a symbolic link) is the same input.
    link = tmp_path / "link.jsonl"
    link.symlink_to(same)
    before = tree(tmp_path)
    status, err = kbert_cli("predict", [cls, "--input", same, "--output", link, "--overwrite"])
    assert status == 1 and len(err) == 1 and "is an input of this command" in err[0]
    target = cls / "kbert.json"
    status, err = kbert_cli("predict", [cls, "--input", same, "--output", target, "--overwrite"])
    assert status == 1 and err == [f"kbert predict: error: {target} is an input of this command: writing it would "
                                   "destroy that input; choose another output"]
    assert tree(tmp_path) == before and tree(cls) == model_before


def test_predict_refuses_an_existing_output_unless_overwrite(kbert_cli, csv_classifiers, tmp_path):
    cls = csv_classifiers / "cls"
    src = write_jsonl_rows(tmp_path / "in.jsonl", [{"text": "a fine film"}, {"text": "dull"}])
    out = tmp_path / "out.jsonl"
    out.write_text("someone's notes\n")
    before = tree(tmp_path)
    status, err = kbert_cli("predict", [cls, "--input", src, "--output", out, "--quiet"])
    assert status == 1 and err == [f"kbert predict: error: {out} already exists; pass --overwrite to replace it whole"]
    assert tree(tmp_path) == before
    status, _ = kbert_cli("predict", [cls, "--input", src, "--output", out, "--quiet", "--overwrite"])
    assert status == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["1", "2"] and all(r["label"] in ("negative", "positive") for r in rows)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]  # no temporary file left


@pytest.mark.parametrize("case", ["surrogate", "duplicate id", "empty label name"])
def test_odd_rows_are_one_line_naming_file_line_and_field(kbert_cli, csv_classifiers, tmp_path, case):
    src = tmp_path / "in.jsonl"
    if case == "surrogate":  # valid JSON, but no text: json.loads gives a str that cannot be encoded
        src.write_text('{"text": "fine"}\n{"text": "caf\\u00e9 \\ud800 bar"}\n', encoding="utf-8")
        model, extra = "cls", []
        expected = (f"{src}, line 2: field 'text': got 'café \\ud800 bar'; expected text without lone surrogates "
                    "(a \\ud800-\\udfff escape that is not half of a pair)")
    elif case == "duplicate id":
        write_jsonl_rows(src, [{"id": "q1", "text": "a"}, {"id": "q2", "text": "b"}, {"id": "q1", "text": "c"}])
        model, extra = "cls", ["--id-column", "id"]
        expected = f"{src}, line 3: field 'id': got 'q1'; expected a unique id (line 1 has the same one)"
    else:
        write_jsonl_rows(src, [{"text": "a", "labels": ["art"]}, {"text": "b", "labels": [""]}])
        model, extra = "multi", []
        expected = (f"{src}, line 2: field 'labels': got ''; expected a non-empty label name (an empty list [] "
                    "means none of the labels)")
    before = tree(tmp_path)
    status, err = kbert_cli("predict", [csv_classifiers / model, "--input", src, "--output", tmp_path / "out.jsonl",
                                        *extra])
    assert status == 1 and err == [f"kbert predict: error: {expected}"]
    assert tree(tmp_path) == before


def test_every_reader_refuses_two_rows_with_one_id(tmp_path):
    """Readers whose ids come from the file itself (here SQuAD-like rows through the generic check of
    kbert.predict): two rows with one id would be two predictions under one name."""
    from kbert.errors import DataError
    from kbert.tasks.core.predict import check_unique_ids as _check_unique_ids

    with pytest.raises(DataError, match=r"x\.jsonl \(whole file\): field 'id': got 'b'; expected a unique id per "
                                        r"row \(rows 2 and 4 share it\)"):
        _check_unique_ids(tmp_path / "x.jsonl", [{"id": "a"}, {"id": "b"}, {"id": "c"}, {"id": "b"}])
