"""Fine-tuning recipes: for each kind of task, how to read its data, build the task model, feed
it, evaluate it with the benchmark's metric and write its predictions. ``python -m
kbert.finetune`` is a loop around these (see kbert/finetune.py); they take its parsed arguments
(any object with the same attributes works).

  glue/<task>, table/csv   ClassificationRecipe  TextClassifier, or TextRegressor (STS-B, --regression)
  conll2003                TaggingRecipe         TokenTagger
  squad/v1.1, squad/v2.0   SquadRecipe           SpanQuestionAnswerer
  swag                     ChoiceRecipe          MultipleChoiceModel
"""

from __future__ import annotations

import os
import pathlib

import numpy as np

from kbert.data import conll, glue, squad, swag, table
from kbert.data.tasks import CONLL_FILES, SQUAD_FILES, SWAG_FILES
from kbert.tasks import submission
from kbert.tasks.classifier import TextClassifier, TextRegressor
from kbert.tasks.datasets import bucket_boundaries, make_dataset, token_lengths
from kbert.tasks.metrics import compute_metrics, squad_metrics, squad_v2_best_threshold
from kbert.tasks.multiple_choice import MultipleChoiceModel
from kbert.tasks.span_qa import SpanQuestionAnswerer
from kbert.tasks.tagger import TokenTagger

# The metric that picks the best epoch (the one GLUE's leaderboard reports first for the task).
GLUE_MAIN_METRIC = {"cola": "matthews_corrcoef", "mrpc": "f1", "qqp": "f1", "stsb": "spearman"}


def subsample(examples, n, seed):
    """(examples, their indices in the file): all of them, or n drawn without replacement
    (fixed seed), kept in file order."""
    if n is None or n >= len(examples):
        return list(examples), np.arange(len(examples))
    index = np.sort(np.random.default_rng(seed).choice(len(examples), size=n, replace=False))
    return [examples[i] for i in index], index


def select_articles(examples, spec, path):
    """SQuAD examples of the articles ``spec`` ("START:END", Python slice of the articles in
    file order), e.g. ":36" and "36:" to split the 48 dev articles into train and eval."""
    if not spec:
        return examples
    try:
        start, end = (int(p) if p else None for p in spec.split(":"))
    except ValueError:
        raise ValueError(f"articles must be START:END (e.g. :36 or 36:), got {spec!r}") from None
    titles = list(dict.fromkeys(e["title"] for e in examples))
    chosen = set(titles[start:end])
    if not chosen:
        raise ValueError(f"articles {spec!r} selects none of the {len(titles)} articles of {path}")
    return [e for e in examples if e["title"] in chosen]


class Recipe:
    metric_names: tuple = ()
    main_metric = ""

    def __init__(self, args):
        self.args = args
        self.boundaries = None
        self.read()

    @property
    def eval_split(self):
        return self.args.eval_split or "dev"

    def _file(self, files: dict, split: str, override):
        if override:
            return os.fspath(override)
        if not self.args.data_dir:
            raise ValueError(f"task {self.args.task!r} needs --data-dir or --train-file/--eval-file")
        if split not in files:
            raise ValueError(f"task {self.args.task!r} has no split {split!r}; expected one of {sorted(files)}")
        return os.path.join(os.fspath(self.args.data_dir), files[split])

    @property
    def dynamic_length(self) -> bool:
        return not getattr(self.args, "fixed_length", False)

    def _boundaries(self, seq_length):
        return bucket_boundaries(seq_length) if self.args.bucketing else None

    def summary(self) -> dict:
        return {"train_examples": self.num_train, "eval_examples": self.num_eval}

    def task_info(self) -> dict:
        return {"task_name": self.args.task, "metrics": list(self.metric_names), "main_metric": self.main_metric}


class ClassificationRecipe(Recipe):
    def read(self):
        a = self.args
        key = a.task.lower()
        if key.startswith("glue/"):
            self.glue_task = glue.get_task(key)
            split = a.eval_split or ("dev_matched" if self.glue_task.name == "mnli" else "dev")

            def read(split_name, override):
                if override:
                    return glue.read_glue(self.glue_task, split_name, path=override)
                if not a.data_dir:
                    raise ValueError(f"task {a.task!r} needs --data-dir (the GLUE task folder or GLUE root)")
                return glue.read_glue(self.glue_task, split_name, a.data_dir)

            train, dev = read("train", a.train_file), read(split, a.eval_file)
            self.regression = self.glue_task.is_regression
            self.metric_names = self.glue_task.metrics
            self.main_metric = GLUE_MAIN_METRIC.get(self.glue_task.name, self.metric_names[0])
            self.split = split
        else:  # table / csv: a generic file with named columns
            if not (a.train_file and a.eval_file and a.text_columns):
                raise ValueError(f"task {a.task!r} needs --train-file, --eval-file and --text-columns")
            self.glue_task = None
            self.regression = a.regression
            kwargs = dict(text_columns=a.text_columns.split(","), label_column=a.label_column,
                          regression=a.regression,
                          label_names=a.label_names.split(",") if a.label_names else None)
            train = table.read_table(a.train_file, **kwargs)
            if not a.regression and kwargs["label_names"] is None:
                kwargs["label_names"] = train.label_names  # the same ids in both files
            dev = table.read_table(a.eval_file, **kwargs)
            self.metric_names = ("pearson", "spearman") if a.regression else ("accuracy", "macro_f1")
            self.main_metric = self.metric_names[-1] if a.regression else "accuracy"
            self.split = "eval"
        self.label_names = None if self.regression else tuple(train.label_names)
        self.train, _ = subsample(train.examples, a.max_train_examples, a.seed)
        self.dev, self.dev_index = subsample(dev.examples, a.max_eval_examples, a.seed)
        self.num_train, self.num_eval = len(self.train), len(self.dev)
        self.num_segments = 2 if any(e["text_b"] is not None for e in train.examples) else 1

    def inputs(self, examples):
        text_a = np.array([e["text_a"] for e in examples], dtype=object)
        if self.num_segments == 1:
            return text_a, [text_a]
        text_b = np.array([e["text_b"] or "" for e in examples], dtype=object)
        return {"text_a": text_a, "text_b": text_b}, [text_a, text_b]

    def labels(self, examples):
        return np.array([e["label"] for e in examples], dtype=np.float32 if self.regression else np.int32)

    def build_model(self, init_dir, encoder_overrides=None):
        common = dict(seq_length=self.args.seq_length, num_segments=self.num_segments, load_head=False,
                      encoder_overrides=encoder_overrides, dynamic_length=self.dynamic_length)
        if self.regression:
            return TextRegressor.from_model_dir(init_dir, **common)
        return TextClassifier.from_model_dir(init_dir, label_names=self.label_names, **common)

    def train_dataset(self, model):
        x, segments = self.inputs(self.train)
        lengths = token_lengths(model.tokenizer, segments, model.seq_length)
        self.train_lengths = lengths
        return make_dataset(x, self.labels(self.train), batch_size=self.args.batch_size, lengths=lengths,
                            boundaries=self._boundaries(model.seq_length), shuffle=True, seed=self.args.seed)

    def evaluate(self, model):
        x, _ = self.inputs(self.dev)
        outputs = model.predict_logits(x, batch_size=self.args.eval_batch_size)
        return compute_metrics(self.metric_names, outputs, self.labels(self.dev)), outputs

    def write_predictions(self, out_dir, outputs):
        values = outputs if self.regression else outputs.argmax(axis=-1)
        name = (submission.glue_file_name(self.glue_task.name, self.split) if self.glue_task
                else "predictions.tsv")
        return [submission.write_glue(pathlib.Path(out_dir) / name, self.dev_index, values, self.label_names)]


class TaggingRecipe(Recipe):
    metric_names = ("ner_precision", "ner_recall", "ner_f1")
    main_metric = "ner_f1"

    def read(self):
        a = self.args
        train = conll.read_conll(self._file(CONLL_FILES, "train", a.train_file))
        dev = conll.read_conll(self._file(CONLL_FILES, self.eval_split, a.eval_file), tags=train.label_names)
        self.label_names = train.label_names
        self.train, _ = subsample(train.examples, a.max_train_examples, a.seed)
        self.dev, _ = subsample(dev.examples, a.max_eval_examples, a.seed)
        self.num_train, self.num_eval = len(self.train), len(self.dev)

    def build_model(self, init_dir, encoder_overrides=None):
        return TokenTagger.from_model_dir(init_dir, label_names=self.label_names, seq_length=self.args.seq_length,
                                          load_head=False, encoder_overrides=encoder_overrides,
                                          dynamic_length=self.dynamic_length)

    def train_dataset(self, model):
        return model.dataset([e["words"] for e in self.train], [e["labels"] for e in self.train],
                             batch_size=self.args.batch_size, shuffle=True, seed=self.args.seed,
                             boundaries=self._boundaries(model.seq_length))

    def evaluate(self, model):
        predicted = model.predict_words([e["words"] for e in self.dev], batch_size=self.args.eval_batch_size)
        return compute_metrics(self.metric_names, predicted, [e["tags"] for e in self.dev]), predicted

    def write_predictions(self, out_dir, predicted):
        return [submission.write_conll(pathlib.Path(out_dir) / "predictions.txt", [e["words"] for e in self.dev],
                                       [e["tags"] for e in self.dev], predicted)]


class SquadRecipe(Recipe):
    main_metric = "f1"

    def read(self):
        a = self.args
        version = "v2.0" if a.task.lower().endswith("v2.0") else "v1.1"
        train_path = self._file(SQUAD_FILES[version], "train", a.train_file)
        eval_path = self._file(SQUAD_FILES[version], self.eval_split, a.eval_file)
        train = squad.read_squad(train_path)
        dev = train if eval_path == train_path else squad.read_squad(eval_path)
        self.version_2 = version == "v2.0" or train.meta.get("version_2_with_negative", False)
        train_examples = select_articles(train.examples, a.train_articles, train_path)
        dev_examples = select_articles(dev.examples, a.eval_articles, eval_path)
        if eval_path == train_path and not (a.train_articles and a.eval_articles):
            raise ValueError("training and evaluating on the same SQuAD file needs --train-articles and "
                             "--eval-articles (e.g. :36 and 36:)")
        overlap = {e["id"] for e in train_examples} & {e["id"] for e in dev_examples}
        if overlap:
            raise ValueError(f"{len(overlap)} questions are in both the training and the evaluation articles")
        self.train, _ = subsample(train_examples, a.max_train_examples, a.seed)
        self.dev, _ = subsample(dev_examples, a.max_eval_examples, a.seed)
        self.num_train, self.num_eval = len(self.train), len(self.dev)
        self.metric_names = ("exact_match", "f1")

    def build_model(self, init_dir, encoder_overrides=None):
        a = self.args
        return SpanQuestionAnswerer.from_model_dir(
            init_dir, seq_length=a.seq_length, max_query_length=a.max_query_length, doc_stride=a.doc_stride,
            n_best_size=a.n_best_size, max_answer_length=a.max_answer_length,
            version_2_with_negative=self.version_2, null_score_diff_threshold=a.null_score_diff_threshold,
            load_head=False, encoder_overrides=encoder_overrides, dynamic_length=self.dynamic_length)

    def train_dataset(self, model):
        spans = [None if e["is_impossible"] else
                 (e["answers"][0]["answer_start"], e["answers"][0]["answer_start"] + len(e["answers"][0]["text"]))
                 for e in self.train]
        return model.dataset([e["question"] for e in self.train], [e["context"] for e in self.train], spans,
                             [e["is_impossible"] for e in self.train], batch_size=self.args.batch_size,
                             shuffle=True, seed=self.args.seed, boundaries=self._boundaries(model.seq_length))

    def evaluate(self, model):
        questions = [e["question"] for e in self.dev]
        contexts = [e["context"] for e in self.dev]
        if not hasattr(self, "_dev_windows"):  # the same windows every epoch
            self._dev_windows = model.windows(questions, contexts)
        predictions = model.predict_windows(contexts, self._dev_windows, batch_size=self.args.eval_batch_size)
        by_id = {e["id"]: p for e, p in zip(self.dev, predictions)}
        from kbert.tasks.f1_unit import f1_unit_for_tokenizer  # characters for Japanese/Chinese models

        result = squad_metrics({k: p.text for k, p in by_id.items()}, self.dev, self.version_2,
                               f1_unit=f1_unit_for_tokenizer(model.preprocessor.tokenizer))
        metrics = {"exact_match": result["exact_match"], "f1": result["f1"]}
        if self.version_2:
            metrics.update({k: v for k, v in result.items() if k.startswith(("has_ans", "no_ans"))})
            best_non_null = {k: (p.best_non_null.text if p.best_non_null else "") for k, p in by_id.items()}
            diffs = {k: p.score_diff for k, p in by_id.items()}
            metrics["best_f1"], metrics["best_f1_threshold"] = squad_v2_best_threshold(best_non_null, diffs, self.dev)
        return metrics, by_id

    def write_predictions(self, out_dir, by_id):
        return submission.write_squad(out_dir, by_id, self.version_2)


class ChoiceRecipe(Recipe):
    metric_names = ("accuracy",)
    main_metric = "accuracy"

    def read(self):
        a = self.args
        train = swag.read_swag(self._file(SWAG_FILES, "train", a.train_file))
        dev = swag.read_swag(self._file(SWAG_FILES, self.eval_split, a.eval_file), labelled=True)
        self.train, _ = subsample(train.examples, a.max_train_examples, a.seed)
        self.dev, _ = subsample(dev.examples, a.max_eval_examples, a.seed)
        self.num_train, self.num_eval = len(self.train), len(self.dev)

    @staticmethod
    def inputs(examples):
        # The paper's SWAG input: sentence A = the first sentence, B = the second's start + an ending.
        return {"text_a": np.array([e["context"] for e in examples], dtype=object),
                "choices": np.array([[f"{e['start_ending']} {end}".strip() for end in e["endings"]]
                                     for e in examples], dtype=object)}

    def build_model(self, init_dir, encoder_overrides=None):
        return MultipleChoiceModel.from_model_dir(init_dir, seq_length=self.args.seq_length, load_head=False,
                                                  encoder_overrides=encoder_overrides,
                                                  dynamic_length=self.dynamic_length)

    def train_dataset(self, model):
        x = self.inputs(self.train)
        lengths = np.max([token_lengths(model.tokenizer, [x["text_a"], x["choices"][:, i]], model.seq_length)
                          for i in range(x["choices"].shape[1])], axis=0)
        labels = np.array([e["label"] for e in self.train], dtype=np.int32)
        return make_dataset(x, labels, batch_size=self.args.batch_size, lengths=lengths,
                            boundaries=self._boundaries(model.seq_length), shuffle=True, seed=self.args.seed)

    def evaluate(self, model):
        logits = model.predict_logits(self.inputs(self.dev), batch_size=self.args.eval_batch_size)
        labels = np.array([e["label"] for e in self.dev])
        return compute_metrics(self.metric_names, logits, labels), logits

    def write_predictions(self, out_dir, logits):
        return [submission.write_swag(pathlib.Path(out_dir) / "predictions.csv", [e["id"] for e in self.dev],
                                      logits.argmax(axis=-1))]


def recipe_for(args) -> Recipe:
    key = args.task.lower()
    if key.startswith("glue/") or key in ("table", "csv"):
        return ClassificationRecipe(args)
    if key in ("conll2003", "conll"):
        return TaggingRecipe(args)
    if key in ("squad/v1.1", "squad/v2.0", "squad"):
        return SquadRecipe(args)
    if key == "swag":
        return ChoiceRecipe(args)
    raise ValueError(f"unknown task {args.task!r}; expected glue/<task> (one of {sorted(glue.TASKS)}), "
                     "squad/v1.1, squad/v2.0, conll2003, swag or csv")
