"""JGLUE's JCommonsenseQA (Kurihara et al., LREC 2022; yahoojapan/JGLUE) as a named task on the
multiple-choice type: five (question, choice) pairs per question, as JGLUE's run_swag.py patch builds
them; accuracy; predictions.jsonl {"id", "choice", "label"}, each row with the question's ``q_id``.
Files as for the other JGLUE tasks (kbert.tasks.classification.jglue).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from kbert.data import jglue
from kbert.tasks.core.prediction import write_jsonl
from kbert.tasks.core.registry import register_task
from kbert.tasks.multiple_choice.task import ChoiceRecipe


def _path(recipe, split: str, override) -> str:
    return jglue.task_path(recipe.options.data_dir, split, override, recipe.task.name)


class JcommonsenseqaRecipe(ChoiceRecipe):
    """Five (question, choice) pairs per question, as JGLUE's run_swag.py patch builds them."""

    def read(self):
        o = self.options
        train = jglue.read_jcommonsenseqa(_path(self, "train", o.train_file))
        dev = jglue.read_jcommonsenseqa(_path(self, self.eval_split, o.eval_file))
        self.subsets(train.examples, dev.examples)

    @staticmethod
    def inputs(examples):
        return {"text_a": np.array([e["question"] for e in examples], dtype=object),
                "choices": np.array([e["choices"] for e in examples], dtype=object)}

    def write_predictions(self, out_dir, logits):
        chosen = np.asarray(logits).argmax(axis=-1)
        return [write_jsonl(self.out_path(out_dir, "predictions.jsonl"),
                            ({"id": e["id"], "choice": int(c), "label": e["choices"][int(c)]}
                             for e, c in zip(self.dev, chosen)))]


def read_jcommonsenseqa_unlabelled(path):
    """JCommonsenseQA rows for kbert.predict (labels not required), in the multiple-choice type's
    example layout: the question as the context, the five choices as the endings."""
    data = jglue.read_jcommonsenseqa(path, labelled=False)
    examples = [{"id": e["id"], "context": e["question"], "start_ending": "", "endings": list(e["choices"]),
                 "label": None} for e in data.examples]
    return dataclasses.replace(data, examples=examples)


_FILES = "--data-dir: train*.json and valid*.json / dev*.json"
register_task("jglue/jcommonsenseqa", "multiple_choice", recipe=JcommonsenseqaRecipe, tfrecords=False,
              read_unlabelled=read_jcommonsenseqa_unlabelled,
              help=f"JGLUE JCommonsenseQA, 5-way multiple choice, accuracy ({_FILES})")
