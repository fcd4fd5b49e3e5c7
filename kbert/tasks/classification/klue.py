"""The KLUE tasks NLI and STS (Park et al. 2021; KLUE-benchmark/KLUE) as named tasks on the
classification type (KLUE NER is kbert.tasks.tagging.klue).

  task      eval_results.json (KLUE's metrics)             predictions.jsonl (kbert predict's form)
  klue/nli  accuracy                                       {"guid", "label"}
  klue/sts  pearson (0-5 score), f1 (>= 3.0; x100)         {"guid", "score"} (0-5)

Files as KLUE distributes them (kbert.data.klue): ``--data-dir`` holds ``klue-<task>-v1.1_train``
and ``_dev`` (or their ``klue-<task>-v1.1/`` folder), ``--train-file``/``--eval-file`` name others,
and ``--train-rows``/``--eval-rows START:END`` (the tasks' options, ``kbert.tasks.RowsOptions``)
take a slice of a file's rows, so that one file can be split for training and evaluation. NLI and
STS are sentence pairs, as KLUE's baseline feeds them; STS is a regression on the 0-5 score,
clipped to [0, 5] in evaluation and predictions alike. The metrics are those of KLUE's baseline
code (KLUE-benchmark/KLUE-baseline, ``klue_baseline/metrics/functional.py``): sklearn and scipy
called with the same arguments.
"""

from __future__ import annotations

import numpy as np

from kbert.data import klue
from kbert.tasks.classification.task import ClassificationRecipe
from kbert.tasks.core.metrics import pearson
from kbert.tasks.core.options import RowsOptions
from kbert.tasks.core.prediction import FilePredictor, write_jsonl
from kbert.tasks.core.registry import register_task
from kbert.tasks.core.task_type import Recipe

STS_RANGE = klue.STS_RANGE


KLUE_STS_THRESHOLD = 3.0


def klue_sts_f1(predictions, labels) -> float:
    """F1 (x100) of "similar" (score >= 3.0): predicted scores against gold 0-5 scores or the
    file's 0/1 ``binary-label`` (which is the gold score cut at 3.0)."""
    import sklearn.metrics

    predictions = np.asarray(predictions, dtype=np.float64).reshape(-1)
    labels = np.asarray(labels, dtype=np.float64).reshape(-1)
    gold = labels if np.isin(labels, (0.0, 1.0)).all() else labels >= KLUE_STS_THRESHOLD
    return 100.0 * float(sklearn.metrics.f1_score(np.asarray(gold, dtype=np.int64),
                                                  (predictions >= KLUE_STS_THRESHOLD).astype(np.int64),
                                                  average="binary"))


def klue_sts_metrics(predictions, scores, binary_labels) -> dict:
    """{"pearson": r on the 0-5 scores, "f1": klue_sts_f1 on the binary labels}."""
    return {"pearson": pearson(predictions, scores), "f1": klue_sts_f1(predictions, binary_labels)}


def klue_splits(recipe, kind: str) -> tuple:
    """(training rows, evaluation rows) of a KLUE task's files, by the run's options."""
    o, rows = recipe.options, recipe.named_options
    return klue.task_splits(kind, data_dir=o.data_dir, eval_split=recipe.eval_split, train_file=o.train_file,
                            eval_file=o.eval_file, train_rows=rows.train_rows, eval_rows=rows.eval_rows,
                            task_name=recipe.task.name)


class _KluePairRecipe(ClassificationRecipe):
    kind = ""

    def read(self):
        train, dev = klue_splits(self, self.kind)
        self.split, self.num_segments = self.eval_split, 2
        self.file_labels = self.label_names
        self.subsets(train.examples, dev.examples)

    def task_info(self) -> dict:
        return {**Recipe.task_info(self), "text_columns": ["premise", "hypothesis"] if self.kind == "nli"
                else ["sentence1", "sentence2"]}


class KlueNliRecipe(_KluePairRecipe):
    kind = "nli"
    regression = False
    label_names = klue.NLI_LABELS
    metric_names = ("accuracy",)
    main_metric = "accuracy"

    def write_predictions(self, out_dir, outputs):
        ids = np.asarray(outputs).argmax(axis=-1)
        return [write_jsonl(self.out_path(out_dir, "predictions.jsonl"),
                           [{"guid": e["id"], "label": self.label_names[int(i)]} for e, i in zip(self.dev, ids)])]


class KlueStsRecipe(_KluePairRecipe):
    kind = "sts"
    regression = True
    label_names = None
    metric_names = ("pearson", "f1")
    main_metric = "pearson"

    def evaluate(self, model):
        x, _ = self.inputs(self.dev)
        scores = np.clip(np.asarray(model.predict_logits(x, batch_size=self.options.eval_batch_size),
                                    dtype=np.float64).reshape(-1), *STS_RANGE)
        gold = [e["label"] for e in self.dev]
        return klue_sts_metrics(scores, gold, [e["binary_label"] for e in self.dev]), scores

    def write_predictions(self, out_dir, scores):
        return [write_jsonl(self.out_path(out_dir, "predictions.jsonl"),
                           [{"guid": e["id"], "score": float(s)} for e, s in zip(self.dev, scores)])]


class KluePairPredictor(FilePredictor):
    """kbert predict for models fine-tuned on KLUE NLI or STS: the official file in, JSON lines with
    ``guid`` and ``label`` / ``score`` out (the rows of the fine-tuning's predictions.jsonl)."""

    def __init__(self, kind: str):
        super().__init__(klue.READERS[kind], "klue", f"KLUE {kind.upper()}")
        self.kind = kind

    def predict(self, model, data, options, progress=None):
        from kbert.tasks.core.prediction import RowProgress

        examples = data.examples
        progress = (progress or RowProgress(show=False)).start(len(examples))
        x = {"text_a": np.array([e["text_a"] for e in examples], dtype=object),
             "text_b": np.array([e["text_b"] for e in examples], dtype=object)}
        outputs = model.predict_logits(x, batch_size=options.batch_size, progress=progress)
        if self.kind == "sts":
            scores = np.clip(np.asarray(outputs, dtype=np.float64).reshape(-1), *STS_RANGE)
            return [{"guid": e["id"], "score": float(s)} for e, s in zip(examples, scores)]
        names = model.label_names
        return [{"guid": e["id"], "label": names[int(i)]} for e, i in zip(examples, np.asarray(outputs).argmax(-1))]


_FILES = "--data-dir: klue-{0}-v1.1_train.json / _dev.json, or --train-file/--eval-file with --train-rows/--eval-rows"
register_task("klue/nli", "classification", recipe=KlueNliRecipe, tfrecords=False, predictor=KluePairPredictor("nli"),
              options=RowsOptions,
              help="KLUE NLI, entailment/neutral/contradiction, accuracy (" + _FILES.format("nli") + ")")
register_task("klue/sts", "classification", recipe=KlueStsRecipe, tfrecords=False, predictor=KluePairPredictor("sts"),
              options=RowsOptions, help="KLUE STS, similarity 0-5, Pearson r and F1 at 3.0 (" + _FILES.format("sts") + ")")
