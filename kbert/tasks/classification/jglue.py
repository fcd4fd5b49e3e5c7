"""The JGLUE tasks JSTS and JNLI (Kurihara et al., LREC 2022; yahoojapan/JGLUE) as named tasks on the
classification type (JCommonsenseQA: kbert.tasks.multiple_choice.jglue; JSQuAD: kbert.tasks.span_qa.jglue).

  task        metrics (JGLUE's)   predictions file
  jglue/jsts  pearson, spearman   predictions.jsonl {"id", "score"}
  jglue/jnli  accuracy            predictions.jsonl {"id", "label"}

Files as JGLUE publishes them (kbert.data.jglue): ``--data-dir`` holds ``train*.json`` and a
``valid*.json``/``dev*.json``; ``--train-file``/``--eval-file`` name others. Inputs are those of
JGLUE's fine-tuning scripts (transformers' run_glue): the pair (sentence1, sentence2). Each
prediction row carries the example's id (``sentence_pair_id``), so the metric can be recomputed
from the file and the gold file.
"""

from __future__ import annotations

import numpy as np

from kbert.data import jglue
from kbert.tasks.classification.task import ClassificationRecipe
from kbert.tasks.core.prediction import write_jsonl
from kbert.tasks.core.registry import register_task
from kbert.tasks.core.task_type import Recipe


def _path(recipe, split: str, override) -> str:
    return jglue.task_path(recipe.options.data_dir, split, override, recipe.task.name)


class _PairRecipe(ClassificationRecipe):
    """JSTS / JNLI: ClassificationRecipe's model, training and evaluation on JGLUE's JSON lines."""

    read_file = None  # kbert.data.jglue reader

    def read(self):
        o = self.options
        train = self.read_file(_path(self, "train", o.train_file))
        dev = self.read_file(_path(self, self.eval_split, o.eval_file))
        self.split, self.num_segments = self.eval_split, 2
        self.file_labels = self.label_names
        self.subsets(train.examples, dev.examples)

    def task_info(self) -> dict:
        # JGLUE's own field names: kbert.predict reads unlabelled JSTS/JNLI rows by them
        return {**Recipe.task_info(self), "text_columns": ["sentence1", "sentence2"], "label_column": "label"}


class JstsRecipe(_PairRecipe):
    read_file = staticmethod(jglue.read_jsts)
    regression = True
    label_names = None
    metric_names = ("pearson", "spearman")
    main_metric = "pearson"

    def write_predictions(self, out_dir, outputs):
        scores = np.asarray(outputs, dtype=np.float64).reshape(-1)
        return [write_jsonl(self.out_path(out_dir, "predictions.jsonl"),
                            ({"id": e["id"], "score": float(s)} for e, s in zip(self.dev, scores)))]


class JnliRecipe(_PairRecipe):
    read_file = staticmethod(jglue.read_jnli)
    regression = False
    label_names = jglue.JNLI_LABELS
    metric_names = ("accuracy",)
    main_metric = "accuracy"

    def write_predictions(self, out_dir, outputs):
        ids = np.asarray(outputs).argmax(axis=-1)
        return [write_jsonl(self.out_path(out_dir, "predictions.jsonl"),
                            ({"id": e["id"], "label": self.label_names[int(i)]} for e, i in zip(self.dev, ids)))]


_FILES = "--data-dir: train*.json and valid*.json / dev*.json"
register_task("jglue/jsts", "classification", recipe=JstsRecipe, tfrecords=False,
              help=f"JGLUE JSTS, sentence-pair similarity 0-5, Pearson/Spearman ({_FILES})")
register_task("jglue/jnli", "classification", recipe=JnliRecipe, tfrecords=False,
              help=f"JGLUE JNLI, entailment/contradiction/neutral, accuracy ({_FILES})")
