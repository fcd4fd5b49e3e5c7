"""The JGLUE tasks (Kurihara et al., LREC 2022; yahoojapan/JGLUE) as named tasks on the built-in task types.

  task                  type             metrics (JGLUE's)          predictions file
  jglue/jsts            classification   pearson, spearman          predictions.jsonl {"id", "score"}
  jglue/jnli            classification   accuracy                   predictions.jsonl {"id", "label"}
  jglue/jcommonsenseqa  multiple_choice  accuracy                   predictions.jsonl {"id", "choice", "label"}
  jglue/jsquad          span_qa          exact_match, f1 (chars)    predictions.json {id: answer}, nbest

Files as JGLUE publishes them (kbert.data.jglue): ``--data-dir`` holds ``train*.json`` and a
``valid*.json``/``dev*.json``; ``--train-file``/``--eval-file`` name others. Inputs are those of
JGLUE's fine-tuning scripts (transformers' run_glue / run_swag / run_qa): JSTS and JNLI the pair
(sentence1, sentence2); JCommonsenseQA the pairs (question, choice_i); JSQuAD (question, context).
Each prediction row carries the example's id (JSTS/JNLI ``sentence_pair_id``, JCommonsenseQA
``q_id``), so the metric can be recomputed from the file and the gold file.

JSQuAD contexts are ``"<title> [SEP] <paragraph>"`` (JGLUE writes the article title and a literal
``[SEP]`` in front of each paragraph). JGLUE's fine-tuning hands that string to the tokenizer as it
is, and transformers' tokenizers turn the literal ``[SEP]`` into the [SEP] token. kbert does the
same: the ``mecab-wordpiece`` and ``mecab-character`` tokenizers cut a text at special tokens written
in it (id 3 = [SEP] where the text says ``[SEP]``, spanning those five characters, so an answer can
never start inside it). The ``sentencepiece`` tokenizer follows the sentencepiece package, whose
control symbols never match text: there ``[SEP]`` is the pieces of the characters ``[``, ``SEP``, ``]``
(the model sees the title and the paragraph separated by ordinary text). The ``wordpiece`` tokenizer
follows google-research/bert's, which also reads ``[SEP]`` as ``[``, ``sep``, ``]``. Answers are
mapped back to the context through the tokenizer's character offsets, so the predicted text is
written exactly as in the context (full-width characters included, whatever NFKC did for the model).
F1 is JGLUE's character F1 (``kbert.tasks.metrics.squad_char_f1``) whatever the tokenizer.
Answers are read as for every span-QA task (kbert.data.squad): evaluation scores every answer's
text; training takes a question's first answer whose ``answer_start`` points at its text (or is at
most 2 characters off) and leaves out, naming them, the questions with none.
"""

from __future__ import annotations

import dataclasses

import json
import os

import numpy as np

from kbert.data import jglue
from kbert.model_dir import atomic_write
from kbert.tasks.plugins.classification import ClassificationRecipe
from kbert.tasks.plugins.multiple_choice import ChoiceRecipe
from kbert.tasks.plugins.span_qa import SquadRecipe
from kbert.tasks.task_type import Recipe
from kbert.tasks.registry import register_task


def jglue_path(recipe, split: str, override) -> str:
    """``override`` (--train-file / --eval-file) or the split's file in --data-dir."""
    if override:
        return os.fspath(override)
    if not recipe.options.data_dir:
        raise ValueError(f"task {recipe.task.name!r} needs --data-dir (a folder with train*.json and "
                         "valid*.json or dev*.json) or --train-file and --eval-file")
    return jglue.split_path(recipe.options.data_dir, split)


def write_jsonl(path, rows) -> str:
    """One JSON object per line, UTF-8 (Japanese as it is), written atomically."""
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return path


class _PairRecipe(ClassificationRecipe):
    """JSTS / JNLI: ClassificationRecipe's model, training and evaluation on JGLUE's JSON lines."""

    read_file = None  # kbert.data.jglue reader

    def read(self):
        o = self.options
        train = self.read_file(jglue_path(self, "train", o.train_file))
        dev = self.read_file(jglue_path(self, self.eval_split, o.eval_file))
        self.glue_task, self.split, self.num_segments = None, self.eval_split, 2
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


class JcommonsenseqaRecipe(ChoiceRecipe):
    """Five (question, choice) pairs per question, as JGLUE's run_swag.py patch builds them."""

    def read(self):
        o = self.options
        train = jglue.read_jcommonsenseqa(jglue_path(self, "train", o.train_file))
        dev = jglue.read_jcommonsenseqa(jglue_path(self, self.eval_split, o.eval_file))
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


class JsquadRecipe(SquadRecipe):
    """SQuAD 1.1 rules (every question answerable) with JGLUE's character F1."""

    f1_unit = "char"

    def paths(self):
        o = self.options
        return jglue_path(self, "train", o.train_file), jglue_path(self, self.eval_split, o.eval_file)

    def read_file(self, path):
        return jglue.read_jsquad(path)

    def is_version_2(self, train) -> bool:
        return False  # JSQuAD's files say is_impossible: false everywhere; read_jsquad refuses true


def read_jcommonsenseqa_unlabelled(path):
    """JCommonsenseQA rows for kbert.predict (labels not required), in the multiple-choice type's
    example layout: the question as the context, the five choices as the endings."""
    data = jglue.read_jcommonsenseqa(path, labelled=False)
    examples = [{"id": e["id"], "context": e["question"], "start_ending": "", "endings": list(e["choices"]),
                 "label": None} for e in data.examples]
    return dataclasses.replace(data, examples=examples)


_FILES = "--data-dir: train*.json and valid*.json / dev*.json"
register_task("jglue/jsts", "classification", recipe=JstsRecipe, tfrecords=False,
              help=f"JGLUE JSTS, sentence-pair similarity 0-5, Pearson/Spearman ({_FILES})")
register_task("jglue/jnli", "classification", recipe=JnliRecipe, tfrecords=False,
              help=f"JGLUE JNLI, entailment/contradiction/neutral, accuracy ({_FILES})")
register_task("jglue/jcommonsenseqa", "multiple_choice", recipe=JcommonsenseqaRecipe, tfrecords=False,
              read_unlabelled=read_jcommonsenseqa_unlabelled,
              help=f"JGLUE JCommonsenseQA, 5-way multiple choice, accuracy ({_FILES})")
register_task("jglue/jsquad", "span_qa", recipe=JsquadRecipe, tfrecords=False,
              help=f"JGLUE JSQuAD, span QA, exact match and character F1 ({_FILES})")
