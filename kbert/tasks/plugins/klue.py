"""The KLUE tasks NLI, STS and NER (Park et al. 2021; KLUE-benchmark/KLUE) as named tasks.

  task      type            eval_results.json (KLUE's metrics)             predictions.jsonl (kbert predict's form)
  klue/nli  classification  accuracy                                       {"guid", "label"}
  klue/sts  classification  pearson (0-5 score), f1 (>= 3.0; x100)         {"guid", "score"} (0-5)
  klue/ner  tagging         entity_macro_f1, char_macro_f1 (x100)          {"guid", "tags"}: one tag per character

Files as KLUE distributes them (kbert.data.klue): ``--data-dir`` holds ``klue-<task>-v1.1_train``
and ``_dev`` (or their ``klue-<task>-v1.1/`` folder), ``--train-file``/``--eval-file`` name others,
and ``--train-rows``/``--eval-rows START:END`` take a slice of a file's rows, so that one file can
be split for training and evaluation. NLI and STS are sentence pairs, as KLUE's baseline feeds
them; STS is a regression on the 0-5 score, clipped to [0, 5] in evaluation and predictions alike.
NER tags word pieces and maps them back to every character (kbert.tasks.char_tagging).
"""

from __future__ import annotations

import os

import numpy as np

from kbert.data import klue
from kbert.tasks.metrics_cjk import klue_ner_metrics, klue_sts_metrics
from kbert.tasks.plugins.classification import ClassificationRecipe
from kbert.tasks.registry import register_task
from kbert.tasks.task_type import Recipe

STS_RANGE = klue.STS_RANGE


def klue_files(recipe, kind: str) -> tuple:
    """(train rows, eval rows) of task ``kind`` ("nli", "sts", "ner"): the files (--train-file /
    --eval-file, or the official names in --data-dir) sliced by --train-rows / --eval-rows."""
    o = recipe.options
    split = recipe.eval_split

    def path(name, override):
        if override:
            return os.fspath(override)
        if not o.data_dir:
            raise ValueError(f"task {recipe.task.name!r} needs --data-dir (KLUE's klue-{kind}-v1.1 folder) or "
                             "--train-file and --eval-file")
        return klue.split_path(o.data_dir, kind, name)

    train_path, eval_path = path("train", o.train_file), path(split, o.eval_file)
    read = klue.READERS[kind]
    train_all = read(train_path)
    eval_all = train_all if os.path.abspath(eval_path) == os.path.abspath(train_path) else read(eval_path)
    if eval_all is train_all and not (o.train_rows and o.eval_rows):
        raise ValueError("training and evaluating on the same KLUE file needs --train-rows and --eval-rows "
                         "(e.g. :1500 and 1500:)")
    train, dev = klue.select_rows(train_all, o.train_rows), klue.select_rows(eval_all, o.eval_rows)
    overlap = {e["id"] for e in train.examples} & {e["id"] for e in dev.examples}
    if overlap:
        raise ValueError(f"{len(overlap)} rows are in both the training and the evaluation rows "
                         f"(e.g. guid {sorted(overlap)[0]!r})")
    return train, dev


def write_jsonl(path, rows) -> list:
    from kbert.tasks.prediction import jsonl_text, write_text

    write_text(path, jsonl_text(rows))
    return [path]


class _KluePairRecipe(ClassificationRecipe):
    kind = ""
    selects_rows = True

    def read(self):
        train, dev = klue_files(self, self.kind)
        self.glue_task, self.split, self.num_segments = None, self.eval_split, 2
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
        return write_jsonl(self.out_path(out_dir, "predictions.jsonl"),
                           [{"guid": e["id"], "label": self.label_names[int(i)]} for e, i in zip(self.dev, ids)])


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
        return write_jsonl(self.out_path(out_dir, "predictions.jsonl"),
                           [{"guid": e["id"], "score": float(s)} for e, s in zip(self.dev, scores)])


class KlueNerRecipe(Recipe):
    selects_rows = True
    metric_names = ("entity_macro_f1", "char_macro_f1")
    main_metric = "entity_macro_f1"

    def read(self):
        train, dev = klue_files(self, "ner")
        self.label_names = klue.NER_LABELS
        self.subsets(train.examples, dev.examples)

    def build_model(self, init_dir, encoder_overrides=None):
        from kbert.tasks.tagger import TokenTagger

        # fill_label: O, for pieces cut off by truncation
        return TokenTagger.from_model_dir(init_dir, label_names=list(self.label_names),
                                          fill_label=self.label_names.index("O"), **self.build_kwargs(encoder_overrides))

    def train_dataset(self, model):
        from kbert.tasks.char_tagging import char_features
        from kbert.tasks.datasets import make_dataset

        inputs, labels, _ = char_features(model, [e["text"] for e in self.train], [e["tags"] for e in self.train],
                                          self.label_names)
        return make_dataset(inputs, labels, batch_size=self.options.batch_size, lengths=inputs["input_mask"].sum(1),
                            boundaries=self.boundaries(model.seq_length), shuffle=True, seed=self.options.seed)

    def evaluate(self, model):
        from kbert.tasks.char_tagging import predict_char_tags

        predicted = predict_char_tags(model, [e["text"] for e in self.dev], self.options.eval_batch_size)
        return klue_ner_metrics(predicted, [e["tags"] for e in self.dev], self.label_names), predicted

    def write_predictions(self, out_dir, predicted):
        return write_jsonl(self.out_path(out_dir, "predictions.jsonl"),
                           [{"guid": e["id"], "tags": t} for e, t in zip(self.dev, predicted)])


class KluePredictor:
    """kbert predict for models fine-tuned on a KLUE task: the official file in, JSON lines with
    ``guid`` and ``label`` / ``score`` / ``tags`` out (the same rows as the fine-tuning's
    predictions.jsonl)."""

    input_formats = ("klue",)

    def __init__(self, kind: str):
        self.kind = kind

    def output_formats(self, task_meta):
        return ("jsonl", "tsv")

    def signatures(self, module):
        """kbert export task: NER's serving_default tags every character of a sentence, as ``predict``
        does (the tagging type's would tag whitespace words); None for NLI and STS (the task type's)."""
        if self.kind != "ner":
            return None
        from kbert.tasks.char_tagging import char_tag_signatures
        from kbert.tasks.registry import task_type_for_model

        _, serve_ids = task_type_for_model(module.model.task_type).signatures(module)
        return char_tag_signatures(module, serve_ids)

    def read_prediction_input(self, task_meta, path, options):
        if options.task_format not in (None, "klue"):
            raise ValueError(f"--task-format {options.task_format!r}: a KLUE {self.kind.upper()} model reads "
                             "KLUE's own file ('klue')")
        if options.probabilities:
            raise ValueError(f"--probabilities: the KLUE {self.kind.upper()} prediction file has none")
        return klue.READERS[self.kind](path, labelled=False)

    def predict(self, model, data, options, progress=None):
        from kbert.tasks.prediction import RowProgress

        examples = data.examples
        progress = (progress or RowProgress(show=False)).start(len(examples))
        if self.kind == "ner":
            from kbert.tasks.char_tagging import predict_char_tags

            tags = predict_char_tags(model, [e["text"] for e in examples], options.batch_size, progress)
            return [{"guid": e["id"], "tags": t} for e, t in zip(examples, tags)]
        x = {"text_a": np.array([e["text_a"] for e in examples], dtype=object),
             "text_b": np.array([e["text_b"] for e in examples], dtype=object)}
        outputs = model.predict_logits(x, batch_size=options.batch_size, progress=progress)
        if self.kind == "sts":
            scores = np.clip(np.asarray(outputs, dtype=np.float64).reshape(-1), *STS_RANGE)
            return [{"guid": e["id"], "score": float(s)} for e, s in zip(examples, scores)]
        names = model.label_names
        return [{"guid": e["id"], "label": names[int(i)]} for e, i in zip(examples, np.asarray(outputs).argmax(-1))]

    def format_predictions(self, task_meta, data, predictions, fmt):
        from kbert.tasks.prediction import jsonl_text, tsv_text

        return jsonl_text(predictions) if fmt == "jsonl" else tsv_text(predictions)



_FILES = "--data-dir: klue-{0}-v1.1_train.json / _dev.json, or --train-file/--eval-file with --train-rows/--eval-rows"
register_task("klue/nli", "classification", recipe=KlueNliRecipe, tfrecords=False, predictor=KluePredictor("nli"),
              help="KLUE NLI, entailment/neutral/contradiction, accuracy (" + _FILES.format("nli") + ")")
register_task("klue/sts", "classification", recipe=KlueStsRecipe, tfrecords=False, predictor=KluePredictor("sts"),
              help="KLUE STS, similarity 0-5, Pearson r and F1 at 3.0 (" + _FILES.format("sts") + ")")
register_task("klue/ner", "tagging", recipe=KlueNerRecipe, tfrecords=False, predictor=KluePredictor("ner"),
              help="KLUE NER, a tag per character, entity and character macro F1 "
                   "(--data-dir: klue-ner-v1.1_train.tsv / _dev.tsv, or files and rows)")
