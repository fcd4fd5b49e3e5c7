"""Task type "span_qa": an answer span in a context for each question (SQuAD 1.1 / 2.0,
kbert.tasks.span_qa.model.SpanQuestionAnswerer), with run_squad.py's windows and answer selection;
served by one graph from raw strings (kbert.tasks.span_qa.graph); for mecab-* models from words,
answering in word indices (kbert.tasks.span_qa.words_answers).

Tasks: squad/v1.1 (alias squad) and squad/v2.0 (kbert.data.squad), evaluated with the official
exact match / F1 (2.0 also the best threshold); predictions as run_squad.py writes them. Every span-QA
task (these, jglue/jsquad, korquad/v1.0, cmrc2018) evaluates on every answer's text and trains on each
question's first answer that is a span of its context (kbert.data.squad.training_span); a question
with none is left out of training and named in the run's log and summary (Recipe.leave_out). Each
of them takes ``ArticlesOptions`` (``--train-articles``/``--eval-articles``: some articles of a file
for training, others for evaluation); the windows' stride is every task's ``--doc-stride``
(``FinetuneOptions.doc_stride``, 128 here when not given).
"""

from __future__ import annotations

import dataclasses

from kbert.data import squad
from kbert.errors import DataError, OptionsError
from kbert.tasks.span_qa import submission
from kbert.tasks.span_qa.metrics import squad_metrics, squad_v2_best_threshold
from kbert.api_export import kbert_export
from kbert.tasks.core.options import check_slices, option
from kbert.tasks.core.registry import register_task, register_task_type
from kbert.tasks.core.task_type import WARMUP_TEXTS, DataSource, Recipe, TaskType

SQUAD_FILES = {
    "v1.1": {"train": "train-v1.1.json", "dev": "dev-v1.1.json"},
    "v2.0": {"train": "train-v2.0.json", "dev": "dev-v2.0.json"},
}


@dataclasses.dataclass
class SquadOptions:
    """span QA: answer selection as run_squad.py; the windows' stride is --doc-stride"""

    max_query_length: int = option(64, help="question tokens kept")
    n_best_size: int = option(20, help="start/end candidates per window")
    max_answer_length: int = option(30, help="longest answer, in tokens")
    null_score_diff_threshold: float = option(0.0, help="SQuAD 2.0: predict no answer above this score difference")


@kbert_export("kbert.tasks.ArticlesOptions")
@dataclasses.dataclass
class ArticlesOptions:
    """Articles of a SQuAD-style file: a slice to train on, another to evaluate on.

    The span-QA tasks' own options: one file's articles split for training and evaluation, each
    article's questions on one side (``kbert.tasks.RowsOptions`` slices the KLUE tasks' rows).

    Attributes:
        train_articles: ``START:END``, a Python slice of the training file's articles in file
            order (e.g. ``:36``).
        eval_articles: the same of the evaluation file's articles (e.g. ``36:``).

    Examples:
        >>> import kbert
        >>> kbert.tasks.ArticlesOptions(train_articles=":36", eval_articles="36:").train_articles
        ':36'
    """

    train_articles: str | None = option(None, help="START:END slice of the training file's articles, e.g. :36")
    eval_articles: str | None = option(None, help="START:END slice of the evaluation file's articles, e.g. 36:")

    def __post_init__(self):
        check_slices(self, "articles", "36")


@dataclasses.dataclass(frozen=True)
class SquadSettings:
    """A SQuAD task's fixed setting (``NamedTask.settings`` of squad/v1.1 and squad/v2.0).

    Attributes:
        version: ``v1.1`` or ``v2.0``: the files' names, and whether questions may have no answer.
    """

    version: str

    def __post_init__(self):
        if self.version not in SQUAD_FILES:
            raise OptionsError(f"SQuAD version must be one of {', '.join(SQUAD_FILES)}, got {self.version!r}")


def select_articles(examples, spec, path, option: str = "train_articles"):
    """SQuAD examples of the articles ``spec`` ("START:END", Python slice of the articles in
    file order, checked by ArticlesOptions), e.g. ":36" and "36:" to split the 48 dev articles
    into train and eval; a slice that selects none is an OptionsError naming ``option``."""
    if not spec:
        return examples
    start, end = (int(p) if p.strip() else None for p in spec.split(":"))
    titles = list(dict.fromkeys(e["title"] for e in examples))
    chosen = set(titles[start:end])
    if not chosen:
        raise OptionsError(f"--{option.replace('_', '-')} {spec} selects none of the {len(titles)} articles of {path}",
                           option=option, value=spec)
    return [e for e in examples if e["title"] in chosen]


class SquadRecipe(Recipe):
    """SQuAD's files (the version's names in --data-dir) and metric; the span-QA reading, training
    and evaluation every span-QA task shares (subclasses change paths, read_file, is_version_2 and
    the metric). Articles of a file are chosen by the named task's ``ArticlesOptions``."""

    Settings = SquadSettings
    main_metric = "f1"
    metric_names = ("exact_match", "f1")
    f1_unit = None  # "word" or "char"; None: from the model's tokenizer (kbert.text.registry.f1_unit)

    def paths(self) -> tuple:
        """(training file, evaluation file)."""
        o, files = self.options, SQUAD_FILES[self.task.settings.version]
        return self.data_file(files, "train", o.train_file), self.data_file(files, self.eval_split, o.eval_file)

    def read_file(self, path):
        return squad.read_squad(path)

    def is_version_2(self, train) -> bool:
        return self.task.settings.version == "v2.0" or train.meta.get("version_2_with_negative", False)

    def read(self):
        t = self.named_options or ArticlesOptions()  # a plug-in task without them reads whole files
        train_path, eval_path = self.paths()
        train = self.read_file(train_path)
        dev = train if eval_path == train_path else self.read_file(eval_path)
        self.version_2 = self.is_version_2(train)
        train_examples = select_articles(train.examples, t.train_articles, train_path, "train_articles")
        dev_examples = select_articles(dev.examples, t.eval_articles, eval_path, "eval_articles")
        if eval_path == train_path and not (t.train_articles and t.eval_articles):
            missing = "train_articles" if not t.train_articles else "eval_articles"
            raise OptionsError("training and evaluating on the same SQuAD file needs --train-articles and "
                               "--eval-articles (e.g. :36 and 36:)", option=missing, value=None)
        overlap = {e["id"] for e in train_examples} & {e["id"] for e in dev_examples}
        if overlap:
            raise OptionsError(f"{len(overlap)} questions are in both the training and the evaluation articles "
                               f"(--train-articles {t.train_articles}, --eval-articles {t.eval_articles})",
                               option="eval_articles", value=t.eval_articles)
        # Evaluation keeps every question and every answer's text (the official scorers' view);
        # training needs a span: a question none of whose answers is one is left out, and named.
        train_examples, left_out = squad.left_out_of_training(train_examples)
        if not train_examples:
            raise DataError(train_path, "training questions with an answer that is a span of its context",
                            record=f"none of its {len(left_out)} training questions has one (answer_start -1 or off "
                                   f"its text), e.g. question id {left_out[0]!r}")
        self.leave_out("train", left_out, "questions",
                       "none of their answers is a span of the context: answer_start -1 or off its text")
        self.subsets(train_examples, dev_examples)

    def build_model(self, init_dir, encoder_overrides=None):
        from kbert.tasks.span_qa.model import SpanQuestionAnswerer

        t = self.task_options
        return SpanQuestionAnswerer.from_model_dir(
            init_dir, max_query_length=t.max_query_length, doc_stride=self.doc_stride, n_best_size=t.n_best_size,
            max_answer_length=t.max_answer_length, version_2_with_negative=self.version_2,
            null_score_diff_threshold=t.null_score_diff_threshold, **self.build_kwargs(encoder_overrides))

    def train_dataset(self, model):
        spans = [squad.training_span(e) for e in self.train]
        return model.dataset([e["question"] for e in self.train], [e["context"] for e in self.train], spans,
                             [e["is_impossible"] for e in self.train], batch_size=self.options.batch_size,
                             shuffle=True, seed=self.options.seed, boundaries=self.boundaries(model.seq_length))

    def dev_predictions(self, model) -> dict:
        """{question id: SquadPrediction} of the dev examples (their windows made once, reused every epoch)."""
        questions = [e["question"] for e in self.dev]
        contexts = [e["context"] for e in self.dev]
        if not hasattr(self, "_dev_windows"):  # the same windows every epoch
            self._dev_windows = model.windows(questions, contexts)
        predictions = model.predict_windows(contexts, self._dev_windows, batch_size=self.options.eval_batch_size)
        return {e["id"]: p for e, p in zip(self.dev, predictions)}

    def evaluate(self, model):
        by_id = self.dev_predictions(model)
        from kbert.text.registry import f1_unit as tokenizer_f1_unit  # characters for Japanese/Chinese

        result = squad_metrics({k: p.text for k, p in by_id.items()}, self.dev, self.version_2,
                               f1_unit=self.f1_unit or tokenizer_f1_unit(model.preprocessor.tokenizer))
        metrics = {"exact_match": result["exact_match"], "f1": result["f1"]}
        if self.version_2:
            metrics.update({k: v for k, v in result.items() if k.startswith(("has_ans", "no_ans"))})
            best_non_null = {k: (p.best_non_null.text if p.best_non_null else "") for k, p in by_id.items()}
            diffs = {k: p.score_diff for k, p in by_id.items()}
            metrics["best_f1"], metrics["best_f1_threshold"] = squad_v2_best_threshold(best_non_null, diffs, self.dev)
        return metrics, by_id

    def write_predictions(self, out_dir, by_id):
        return submission.write_squad(out_dir, by_id, self.version_2)


@register_task_type
class SpanQA(TaskType):
    name = "span_qa"
    long_documents = ("truncate", "windows")  # its contexts are always read in windows (--doc-stride)
    default_doc_stride = 128  # run_squad.py's
    sequence_options = ("bilstm",)  # the paper's Table 5 "+ BiLSTM" is on SQuAD
    model_types = ("span_qa",)
    recipe_class = SquadRecipe
    Options = SquadOptions
    default_seq_length = 384
    signature_docs = {
        "span_qa": "question, context -> answer_text, answer_start, answer_end, score, null_score_diff [b]; "
                   "mecab-* models (words in): question_words, context_words [b, words] -> answer_text (its words "
                   "joined with \"\": Japanese writes no spaces), answer_start_word, answer_end_word (inclusive "
                   "indices into context_words, -1: no answer), answer_start_in_word, answer_end_in_word "
                   "(characters of those words, for an answer that starts or ends inside a word), score, "
                   "null_score_diff [b]",
    }

    def reads_windows(self, long_documents):
        return True  # a context longer than one input is read in windows whatever --long-documents says

    def model_class(self, model_type):
        from kbert.tasks.span_qa.model import SpanQuestionAnswerer

        return SpanQuestionAnswerer

    def data_source(self, task, split, options):
        file = self.split_file(task, SQUAD_FILES[task.settings.version], split)
        return DataSource("squad", file, _read_squad, ("squad_exact_match", "squad_f1"))

    def signatures(self, module):
        import tensorflow as tf

        from kbert.tasks.core.signatures import IDS_SPEC, valid_utf8
        from kbert.tasks.span_qa.graph import build_answer_fn
        from kbert.tasks.core.words_inputs import takes_words, words_name

        model = module.model
        if takes_words(model.tokenizer):  # mecab-*: words in, answers in word indices
            from kbert.tasks.span_qa.words_answers import build_words_answer_fn

            answer = build_words_answer_fn(model)
            names = [words_name("question"), words_name("context")]
            spec = {name: tf.TensorSpec([None, None], tf.string, name=name) for name in names}
        else:
            answer = build_answer_fn(model)
            names = ["question", "context"]
            spec = {name: tf.TensorSpec([None], tf.string, name=name) for name in names}

        @tf.function(input_signature=[spec])
        def serve(inputs):
            return answer(*(valid_utf8(inputs[name]) for name in names))

        @tf.function(input_signature=[IDS_SPEC])
        def serve_ids(inputs):
            return dict(model(dict(inputs), training=False))

        return serve, serve_ids

    def warmup_inputs(self, model):
        # raw text; kbert.export.task turns it into words for a words-in tokenizer
        return [{"question": ["What warms up?"], "context": WARMUP_TEXTS[:1]}]

    # -- kbert.predict: a SQuAD JSON file (answers, if any, are not read) ----------------------
    input_formats = ("squad",)

    def output_formats(self, task_meta):
        return ("jsonl", "tsv", "squad")

    def read_prediction_input(self, task_meta, path, options):
        if options.task_format not in (None, "squad"):
            raise OptionsError(f"--task-format {options.task_format!r}: a span QA model reads SQuAD JSON ('squad')",
                               option="task_format")
        return squad.read_squad(path, labelled=False)

    def predict(self, model, data, options, progress=None):
        """{"id", "answer"} (+ "probability": the answer's share of the n-best scores); SQuAD 2.0
        models answer "" when they predict no answer."""
        from kbert.tasks.core.prediction import RowProgress

        questions = [e["question"] for e in data.examples]
        contexts = [e["context"] for e in data.examples]
        windows = model.windows(questions, contexts)
        progress = (progress or RowProgress(show=False)).start(len(windows), unit="window")
        answers = model.predict_windows(contexts, windows, batch_size=options.batch_size, progress=progress)
        rows = []
        for e, answer in zip(data.examples, answers):
            rows.append({"id": e["id"], "answer": answer.text})
            if options.probabilities:
                rows[-1]["probability"] = answer.probability
        return rows

    def format_predictions(self, task_meta, data, predictions, fmt):
        if fmt == "squad":  # {question id: answer}, as evaluate-v1.1.py / -v2.0.py read it
            import json

            return json.dumps({p["id"]: p["answer"] for p in predictions}, indent=2, ensure_ascii=False) + "\n"
        return super().format_predictions(task_meta, data, predictions, fmt)


def _read_squad(path, data=None):  # module-level: picklable for Beam workers
    return squad.read_squad(path, data=data)


register_task("squad/v1.1", "span_qa", settings=SquadSettings("v1.1"), options=ArticlesOptions, aliases=("squad",),
              help="SQuAD 1.1 (--data-dir: train-v1.1.json, dev-v1.1.json)")
register_task("squad/v2.0", "span_qa", settings=SquadSettings("v2.0"), options=ArticlesOptions,
              help="SQuAD 2.0 (--data-dir: train-v2.0.json, dev-v2.0.json)")
