"""python -m kbert.finetune end to end on tiny subsets with BERT-Tiny: metrics JSON, predictions in
the submission format, a model directory that reloads and reproduces the saved predictions, the
metrics in TensorBoard, and malformed data reported with file and line (a --max-train-examples below
one: one line, nothing written). Each task type's own runs (its Recipe's files and metrics) are in
tests/tasks/<family>/test_task.py."""

import json

import numpy as np
import pytest

from kbert.data.glue import read_glue
from kbert.errors import DataError, OptionsError
from kbert.commands.finetune import main
from kbert.tasks import load_task_model
from fixtures.file_tree import tree
from fixtures.task_runs import write_jsonl_rows
from conftest import SHARED, read_scalars
from fixtures.cli import run_command

COMMON = ["--epochs", "1", "--batch-size", "8", "--learning-rate", "1e-3", "--seq-length", "32", "--quiet"]


def test_sst2_command_line_end_to_end(sst2_finetune_run):
    out, stdout = sst2_finetune_run  # conftest: 64 training sentences, 40 held out, 2 epochs, --quiet
    assert "best epoch" in stdout
    results = json.loads((out / "eval_results.json").read_text())
    assert results["train_examples"] == 64 and results["eval_examples"] == 40
    assert [h["epoch"] for h in results["history"]] == [1, 2]
    assert 0.0 <= results["best"]["accuracy"] <= 1.0
    assert results["best"]["accuracy"] == max(h["accuracy"] for h in results["history"])
    assert list((out / "logs" / "eval").glob("events.out.tfevents.*"))

    # GLUE submission file: index = row in dev.tsv, prediction = label string.
    rows = (out / "SST-2.tsv").read_text().splitlines()
    assert rows[0] == "index\tprediction" and len(rows) == 41
    indices = [int(r.split("\t")[0]) for r in rows[1:]]
    predicted = [r.split("\t")[1] for r in rows[1:]]
    assert set(predicted) <= {"0", "1"} and indices == sorted(indices)

    # The saved model is the best epoch's: reloaded, it reproduces the file and its accuracy.
    model = load_task_model(out)
    assert model.saved_task_info["task_name"] == "glue/sst2"
    assert model.saved_task_info["epoch"] == results["best_epoch"]
    dev = read_glue("sst2", "dev", SHARED / "glue" / "SST-2").examples
    texts = [dev[i]["text_a"] for i in indices]
    # The model answers with SST-2's label names; the submission file holds the GLUE server's 0/1.
    assert model.label_names == ["negative", "positive"]
    assert model.predict_labels(texts) == [model.label_names[int(p)] for p in predicted]
    accuracy = np.mean([int(p) == dev[i]["label"] for p, i in zip(predicted, indices)])
    assert accuracy == pytest.approx(results["best"]["accuracy"])


@pytest.mark.slow
def test_ner_metrics_reach_tensorboard(tiny_model_dir, tmp_path):
    # 41 steps, a point every 41 // 20 = 2 steps: the last point is the run's odd last step, and the
    # evaluation and the epoch's means are at step 41, on the same axis as the training's points.
    out = tmp_path / "ner"
    main(["--task", "conll2003", "--data-dir", str(SHARED / "conll2003"), "--init", str(tiny_model_dir),
          "--model-dir", str(out), "--max-train-examples", "41", "--max-eval-examples", "8", *COMMON,
          "--batch-size", "1"])
    results = json.loads((out / "eval_results.json").read_text())
    assert results["steps"] == 41
    evaluation = read_scalars(out / "logs" / "eval")
    assert set(evaluation) == {"precision", "recall", "f1"}
    for name, values in evaluation.items():
        assert values == [(41, pytest.approx(results["history"][0][name], abs=1e-6))]
    train = read_scalars(out / "logs" / "train")
    assert train["epoch_mean/loss"] == [(41, pytest.approx(results["train_loss"][0], rel=1e-5))]
    assert len(train["epoch_mean/token_accuracy"]) == 1
    for tag in ("train/loss", "train/token_accuracy", "train/learning_rate"):
        assert [step for step, _ in train[tag]] == [*range(2, 41, 2), 41], tag


def test_malformed_data_names_file_and_line(tiny_model_dir, tmp_path):
    glue_dir = tmp_path / "SST-2"
    glue_dir.mkdir()
    (glue_dir / "train.tsv").write_text("sentence\tlabel\ngood film \t1\nbad film \tpositive\n")
    (glue_dir / "dev.tsv").write_text("sentence\tlabel\nfine \t1\n")
    args = ["--task", "glue/sst2", "--data-dir", str(glue_dir), "--init", str(tiny_model_dir),
            "--model-dir", str(tmp_path / "out")]
    with pytest.raises(DataError, match=r"train\.tsv, line 3: field 'label': got 'positive'"):
        main(args)
    # As `kbert finetune` reports it: a one-line error naming the file and line, exit status 1, no traceback.
    result = run_command("finetune", *args)
    assert result.status == 1 and "Traceback" not in result.err
    assert f"error: {glue_dir / 'train.tsv'}, line 3: field 'label'" in result.err
    conll_dir = tmp_path / "conll"
    conll_dir.mkdir()
    (conll_dir / "train.txt").write_text("EU NNP B-NP B-ORG\nrejects VBZ B-VP\n")
    (conll_dir / "valid.txt").write_text("EU NNP B-NP B-ORG\n")
    with pytest.raises(DataError, match=r"train\.txt, line 2"):
        main(["--task", "conll2003", "--data-dir", str(conll_dir), "--init", str(tiny_model_dir),
              "--model-dir", str(tmp_path / "out")])
    assert not (tmp_path / "out" / "kbert.json").exists()


@pytest.mark.parametrize("value", ["0", "-1"])
def test_finetune_max_train_examples_below_one_is_one_line(kbert_cli, tiny_model_dir, tmp_path, value):
    train = write_jsonl_rows(tmp_path / "train.jsonl", [{"text": "a", "label": "x"}, {"text": "b", "label": "y"}])
    before = tree(tmp_path)
    status, err = kbert_cli("finetune", ["--task", "jsonl", "--init", tiny_model_dir, "--model-dir", tmp_path / "run",
                                         "--train-file", train, "--eval-file", train, "--max-train-examples", value])
    assert status == 1 and err == [
        f"kbert finetune: error: max_train_examples (--max-train-examples) must be a positive whole number "
        f"(leave it out to use every example), got {value}"]
    assert tree(tmp_path) == before


@pytest.mark.parametrize("task, flags, option, message", [
    ("glue/sst2", ["--max-query-length", "16"], "max_query_length",
     "--max-query-length is an option of the span_qa tasks; task 'glue/sst2' does not take it"),
    ("squad/v1.1", ["--text-columns", "a"], "text_columns",
     "--text-columns is an option of the classification tasks; task 'squad/v1.1' does not take it"),
    ("klue/nli", ["--train-articles", ":3"], "train_articles",
     "--train-articles is an option of the tasks squad/v1.1, squad/v2.0, jglue/jsquad, korquad/v1.0, cmrc2018; "
     "task 'klue/nli' does not take it"),
    ("squad/v2.0", ["--train-rows", ":3"], "train_rows",
     "--train-rows is an option of the tasks klue/nli, klue/sts, klue/ner; task 'squad/v2.0' does not take it"),
])
def test_another_tasks_flag_is_refused_not_ignored(task, flags, option, message):
    from kbert.commands.finetune import finetune_options, parse_args

    with pytest.raises(OptionsError) as info:
        finetune_options(parse_args(["--task", task, "--init", "i", "--model-dir", "m", *flags]))
    assert str(info.value) == message and info.value.option == option


def test_each_flag_has_one_home_in_the_parser():
    """--doc-stride is FinetuneOptions' alone (span QA's stride too); --train-articles the span-QA
    tasks' own options, as --train-rows are KLUE's."""
    from kbert.commands.finetune import finetune_options, parse_args
    from kbert.tasks.core.options import RowsOptions
    from kbert.tasks.span_qa.task import ArticlesOptions, SquadOptions

    options = finetune_options(parse_args(["--task", "korquad/v1.0", "--init", "i", "--model-dir", "m",
                                           "--doc-stride", "64", "--train-articles", ":2", "--eval-articles", "139:"]))
    assert options.doc_stride == 64 and options.task_options == SquadOptions()
    assert options.named_options == ArticlesOptions(train_articles=":2", eval_articles="139:")
    options = finetune_options(parse_args(["--task", "klue/ner", "--init", "i", "--model-dir", "m",
                                           "--train-rows", ":10"]))
    assert options.named_options == RowsOptions(train_rows=":10") and options.doc_stride is None
