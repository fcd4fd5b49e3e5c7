"""The classification task type (kbert.tasks.classification.task): glue/stsb as regression and a CSV
task through kbert finetune on tiny subsets with BERT-Tiny; the scores of the submission file and
the metrics recomputed with scipy against the gold file."""

import json

import numpy as np
import pytest
import scipy.stats

from conftest import SHARED
from kbert.data.glue import read_glue
from kbert.commands.finetune import main
from kbert.tasks import load_task_model
from fixtures.task_runs import TINY_FLAGS


@pytest.mark.slow
def test_stsb_regression_writes_scores(tiny_model_dir, tmp_path):
    main(["--task", "glue/stsb", "--data-dir", str(SHARED / "glue"), "--init", str(tiny_model_dir),
          "--model-dir", str(tmp_path / "stsb"), "--max-train-examples", "32", "--max-eval-examples", "24",
          *TINY_FLAGS])
    results = json.loads((tmp_path / "stsb" / "eval_results.json").read_text())
    assert {"pearson", "spearman"} <= set(results["best"]) and results["main_metric"] == "spearman"
    rows = [r.split("\t") for r in (tmp_path / "stsb" / "STS-B.tsv").read_text().splitlines()[1:]]
    assert len(rows) == 24 and all(len(r[1].split(".")[1]) == 3 for r in rows)
    # The metrics recomputed with scipy against dev.tsv's gold scores, from the saved model's scores
    # at full precision (a barely trained model's scores differ in the 4th decimal, which the file's
    # 3 decimals drop), after checking that the file holds those scores.
    dev = read_glue("stsb", "dev", SHARED / "glue" / "STS-B").examples
    rows_dev = [dev[int(r[0])] for r in rows]
    model = load_task_model(tmp_path / "stsb")
    scores = np.ravel(model.predict_logits([[e["text_a"] for e in rows_dev], [e["text_b"] for e in rows_dev]]))
    np.testing.assert_allclose([float(r[1]) for r in rows], scores, atol=0.0005 + 1e-6)
    gold = [float(e["label"]) for e in rows_dev]
    assert results["best"]["pearson"] == pytest.approx(scipy.stats.pearsonr(scores, gold)[0], abs=1e-5)
    assert results["best"]["spearman"] == pytest.approx(scipy.stats.spearmanr(scores, gold)[0], abs=1e-5)
    assert model.num_segments == 2


@pytest.mark.slow
def test_csv_task(tiny_model_dir, tmp_path):
    lines = ["text,label"] + [f"sample {i} {'good' if i % 2 else 'bad'},{'pos' if i % 2 else 'neg'}"
                              for i in range(16)]
    (tmp_path / "train.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "csv"
    main(["--task", "csv", "--train-file", str(tmp_path / "train.csv"), "--eval-file", str(tmp_path / "train.csv"),
          "--text-columns", "text", "--init", str(tiny_model_dir), "--model-dir", str(out), *TINY_FLAGS])
    assert load_task_model(out).label_names == ["neg", "pos"]
    assert (out / "predictions.tsv").read_text().splitlines()[0] == "index\tprediction"


@pytest.mark.parametrize("task", ["glue/sst2", "jglue/jnli", "klue/sts"])
@pytest.mark.parametrize("field, value", [("text_columns", "a,b"), ("label_column", "y"), ("regression", True),
                                          ("multi_label", True), ("label_names", "x,y")])
def test_csv_columns_are_refused_by_the_tasks_that_know_their_files(task, field, value):
    from kbert.errors import OptionsError
    from kbert.tasks.classification.task import TableOptions
    from kbert.tasks.core.options import FinetuneOptions
    from kbert.tasks.core.registry import get_task

    named = get_task(task)
    options = FinetuneOptions(task=task, init="unused", model_dir="unused", task_options=TableOptions(**{field: value}))
    with pytest.raises(OptionsError, match=f"--{field.replace('_', '-')} is for a file with named columns") as info:
        named.task_type.recipe(named, options)
    assert info.value.option == field
