"""Task type "classification": one label (or a score) for a text or a text pair, from the pooled
[CLS] output (kbert.tasks.classification.model: TextClassifier, TextRegressor, MultiLabelClassifier).

Tasks: the GLUE tasks (glue/<task>: GlueRecipe with the task's GlueSettings, read by kbert.data.glue,
labels named as in the task definition, predictions in the GLUE server's TSV) and csv (aliases table,
jsonl: TableRecipe, a CSV/TSV/JSONL file with named columns, kbert.data.table; single-label,
regression or multi-label). Both are subclasses of ClassificationRecipe, as the JGLUE and KLUE tasks'
recipes are. kbert.predict runs the models: kbert.tasks.classification.predict.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from kbert.data import glue, table
from kbert.errors import OptionsError
from kbert.tasks.classification import submission
from kbert.tasks.core.metrics import compute_metrics
from kbert.tasks.core.options import comma_list, option
from kbert.api_export import kbert_export
from kbert.tasks.classification.predict import ClassificationPrediction
from kbert.tasks.core.registry import register_task, register_task_type
from kbert.tasks.core.task_type import WARMUP_TEXTS, DataSource, Recipe, TaskType

WINDOW_TRAINING = ("documents", "windows")

# The metric that picks the best epoch (the one GLUE's leaderboard reports first for the task).
GLUE_MAIN_METRIC = {"cola": "matthews_corrcoef", "mrpc": "f1", "qqp": "f1", "stsb": "spearman"}


@kbert_export("kbert.TableOptions")
@dataclasses.dataclass
class TableOptions:
    """csv / jsonl: a generic file with named columns

    Attributes:
        text_columns: one or two column names (default: ``text``, or ``text_a``/``text_b``).
        label_column: the label's column.
        label_names: the label vocabulary (default: the training file's labels).
        regression: the label is a number (``kbert.TextRegressor``).
        multi_label: each row's label is a list (``kbert.MultiLabelClassifier``).
        threshold: multi-label: the probability above which a label is predicted.
        at_least_one_label: multi-label: a row with no label above the threshold gets its best one.
        window_training: ``--long-documents windows``: ``documents`` (a batch of documents, each
            document's windows pooled into its one answer, one loss per document) or ``windows``
            (each window an example with its document's label).
        window_pooling: how a document's windows' logits become its answer, in training, prediction
            and exports: ``logmeanexp``, ``mean`` or ``max`` (None: logmeanexp for classes, mean for
            regression, max for multi-label); ``attention`` pools the tokens of all the document's
            windows by a learned score instead of their [CLS] (a text of one window too), for labels
            that one passage of a long page carries.
        max_windows: document-level training: at most this many windows of a document per epoch,
            drawn afresh each epoch (None: all).
        max_sentences: ``--long-documents sentences``: at most this many sentences (sentence
            windows) of a training document per epoch, drawn afresh each epoch (None: all);
            evaluation and prediction read them all.

    Examples:
        >>> import kbert
        >>> kbert.TableOptions(text_columns="question,answer").text_columns
        ('question', 'answer')
    """

    text_columns: tuple | None = option(None, type=comma_list, help="one or two column names, comma-separated")
    label_column: str = option("label", help="the label's column")
    label_names: tuple | None = option(None, type=comma_list,
                                       help="comma-separated label vocabulary (default: the training file's)")
    regression: bool = option(False, help="the label is a number")
    multi_label: bool = option(False, help="each row's label is a list of labels (a string: one label; [] none): "
                                           "sigmoid outputs, micro/macro-F1 and exact match")
    threshold: float = option(0.5, help="multi-label: a label is predicted when its probability exceeds this")
    at_least_one_label: bool = option(False, help="multi-label: a row with no label above the threshold gets "
                                                  "its most probable label")
    window_training: str = option("documents", help="--long-documents windows: train on documents (their windows "
                                                    "pooled, one loss each) or on windows (each with its "
                                                    "document's label)")
    window_pooling: str | None = option(None, help="--long-documents windows: logmeanexp, mean or max of a "
                                                   "document's windows' logits (default logmeanexp; regression: "
                                                   "mean; multi-label: max), or attention over every token of "
                                                   "its windows (learned; for one deciding passage)")
    max_windows: int | None = option(None, type=int, help="document-level training: at most this many windows "
                                                          "of a document per epoch, drawn afresh each epoch")
    max_sentences: int | None = option(None, type=int, help="--long-documents sentences: at most this many "
                                                            "sentences of a training document per epoch, drawn "
                                                            "afresh each epoch (evaluation reads all)")

    def __post_init__(self):
        self.text_columns = comma_list(self.text_columns) if self.text_columns else None
        self.label_names = comma_list(self.label_names) if self.label_names else None
        if not 0.0 < float(self.threshold) < 1.0:
            raise OptionsError(f"--threshold must be between 0 and 1, got {self.threshold}", option="threshold",
                               value=self.threshold)
        if self.multi_label and self.regression:
            raise OptionsError("--multi-label and --regression exclude each other", option="multi_label", value=True)
        from kbert.tasks.classification.window_inputs import POOLINGS

        if self.window_training not in WINDOW_TRAINING:
            raise OptionsError(f"--window-training must be one of {', '.join(WINDOW_TRAINING)}, "
                               f"got {self.window_training!r}", option="window_training", value=self.window_training)
        if self.window_pooling is not None and self.window_pooling not in POOLINGS:
            raise OptionsError(f"--window-pooling must be one of {', '.join(POOLINGS)}, got {self.window_pooling!r}",
                               option="window_pooling", value=self.window_pooling)
        for name in ("max_windows", "max_sentences"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise OptionsError(f"--{name.replace('_', '-')} must be a positive whole number, got {value!r}",
                                   option=name, value=value)


@dataclasses.dataclass(frozen=True)
class GlueSettings:
    """A GLUE task's fixed setting (``NamedTask.settings`` of glue/<task>).

    Attributes:
        glue_task: the task's name in kbert.data.glue (``sst2``, ``mnli``, ...).
    """

    glue_task: str

    @property
    def task(self):
        """The kbert.data.glue task (files, labels, metrics)."""
        return glue.get_task(self.glue_task)


class ClassificationRecipe(Recipe):
    """The model, training, evaluation and predictions of every classification task. A subclass
    reads its files (``read``: the examples, and regression, label_names, file_labels, metric_names,
    main_metric, split and num_segments): TableRecipe (csv), GlueRecipe, and the JGLUE and KLUE tasks'."""

    multi_label = False  # only TableRecipe reads multi-label files
    # The TableOptions fields that only a file with named columns reads (TableRecipe's): the other
    # recipes know their files' texts and labels and refuse them rather than ignore them.
    TABLE_FIELDS = ("text_columns", "label_column", "label_names", "regression", "multi_label", "threshold",
                    "at_least_one_label")
    reads_table_fields = False

    def __init__(self, task, options):
        if not self.reads_table_fields:
            given, defaults = task.task_type.options(options.task_options), TableOptions()
            for name in self.TABLE_FIELDS:
                if getattr(given, name) != getattr(defaults, name):
                    raise OptionsError(f"--{name.replace('_', '-')} is for a file with named columns (csv); task "
                                       f"{task.name!r} reads its own files", option=name, value=getattr(given, name))
        super().__init__(task, options)

    def finish_read(self, train, dev) -> None:
        """Subsets of the examples read (--max-*-examples) and the number of texts a row holds."""
        if self.regression:
            self.label_names = self.file_labels = None
        self.subsets(train.examples, dev.examples)
        self.num_segments = 2 if any(e["text_b"] is not None for e in train.examples) else 1

    def predictions_file_name(self) -> str:
        return "predictions.tsv"


    def inputs(self, examples):
        text_a = np.array([e["text_a"] for e in examples], dtype=object)
        if self.num_segments == 1:
            return text_a, [text_a]
        text_b = np.array([e["text_b"] or "" for e in examples], dtype=object)
        return {"text_a": text_a, "text_b": text_b}, [text_a, text_b]

    def labels(self, examples):
        if self.multi_label:  # [n, L] 0/1 indicators (float: binary cross-entropy's targets)
            indicators = np.zeros((len(examples), len(self.label_names)), dtype=np.float32)
            for row, e in enumerate(examples):
                indicators[row, list(e["label"])] = 1.0
            return indicators
        return np.array([e["label"] for e in examples], dtype=np.float32 if self.regression else np.int32)

    def build_model(self, init_dir, encoder_overrides=None):
        from kbert.tasks.classification.model import MultiLabelClassifier, TextClassifier, TextRegressor

        o = self.options
        common = dict(num_segments=self.num_segments, long_documents=o.long_documents, doc_stride=self.doc_stride,
                      window_pooling=self.task_options.window_pooling, **self.build_kwargs(encoder_overrides))
        if self.regression:
            return TextRegressor.from_model_dir(init_dir, **common)
        if self.multi_label:
            t = self.task_options
            return MultiLabelClassifier.from_model_dir(init_dir, label_names=self.label_names, threshold=t.threshold,
                                                       at_least_one=t.at_least_one_label, **common)
        return TextClassifier.from_model_dir(init_dir, label_names=self.label_names, **common)

    def train_dataset(self, model):
        from kbert.tasks.core.datasets import make_dataset, token_lengths

        x, segments = self.inputs(self.train)
        full = token_lengths(model.tokenizer, segments, 2 ** 62)
        self.truncated, self.long_document_notes = long_document_report(model.seq_length, full, model.units,
                                                                         "training", model.long_documents)
        _, dev_segments = self.inputs(self.dev)
        self.long_document_notes += long_document_report(model.seq_length,
                                                         token_lengths(model.tokenizer, dev_segments, 2 ** 62),
                                                         model.units, "evaluation", model.long_documents)[1]
        labels = self.labels(self.train)
        if model.sentences and self.task_options.window_training != "documents":
            raise OptionsError("--window-training windows: --long-documents sentences trains on documents only "
                               "(a sentence labelled with its document's label is mostly noise)",
                               option="window_training", value=self.task_options.window_training)
        if model.units:
            try:
                x, document = model.window_ids(x)
            except ValueError as e:  # a text A that leaves no room: name the file
                raise OptionsError(f"{self.options.train_file or self.options.data_dir}: {e}",
                                   option="seq_length") from None
            self.num_windows = len(document)
            unit = "sentences (a long one in windows)" if model.sentences else "windows"
            self.long_document_notes.append(f"{model.long_documents}: {len(document)} training {unit} of "
                                            f"{len(full)} texts (--doc-stride {model.doc_stride})")
            if self.task_options.window_training == "documents":
                return self._document_batches(model, x, document, labels)
            labels, lengths = labels[document], x["input_mask"].sum(axis=1)  # every window an example
            self.long_document_notes.append("windows: trained window by window (--window-training windows), "
                                            "each with its document's label")
        else:
            lengths = np.minimum(full, model.seq_length)
        self.train_lengths = lengths
        return make_dataset(x, labels, batch_size=self.options.batch_size, lengths=lengths,
                            boundaries=self.boundaries(model.seq_length), shuffle=True, seed=self.options.seed)

    def _document_batches(self, model, x, document, labels):
        """Document-level training: batches of --batch-size documents, each document's windows
        pooled by the model's rule, one loss per document (kbert.tasks.classification.window_inputs)."""
        from kbert.tasks.core.host_batches import host_packing
        from kbert.tasks.classification.window_inputs import document_batches

        unit, cap_name = ("sentences", "max_sentences") if model.sentences else ("windows", "max_windows")
        cap = getattr(self.task_options, cap_name)
        counts = np.bincount(document, minlength=len(labels))
        over = int((counts > cap).sum()) if cap else 0
        self.window_training = {"window_training": "documents", "window_pooling": model.window_pooling,
                                cap_name: cap, f"documents_over_{cap_name}": over}
        note = (f"{model.long_documents}: trained on documents, {self.options.batch_size} a batch, each document's "
                f"{unit} pooled by {model.window_pooling} (up to {int(counts.max(initial=0))} {unit} a document)")
        if over:
            note += (f"; {over} documents have more than --{cap_name.replace('_', '-')} {cap}: {cap} of theirs drawn "
                     "each epoch")
        self.long_document_notes.append(note)
        host = None
        if host_packing():
            from kbert.tasks.core.host_batches import jax_processes

            if jax_processes()[0] > 1:
                raise OptionsError(f"--long-documents {model.long_documents} trains on documents in one process; "
                                   "over several processes use --long-documents windows --window-training windows",
                                   option="window_training")
            host = (model.row_multiple(), model.WIDTH_MULTIPLE)
        return document_batches(x, document, labels, batch_size=self.options.batch_size, max_windows=cap,
                                shuffle=True, seed=self.options.seed, host=host)

    def summary(self) -> dict:
        summary = super().summary()
        if getattr(self, "truncated", None) is not None:
            summary.update(long_documents=self.options.long_documents, **self.truncated)
        if getattr(self, "num_windows", None) is not None:
            summary["train_windows"] = self.num_windows
            summary.update(getattr(self, "window_training", None) or {"window_training": "windows"})
        return summary

    def evaluate(self, model):
        x, _ = self.inputs(self.dev)
        outputs = model.predict_logits(x, batch_size=self.options.eval_batch_size)
        if self.multi_label:  # the model's own decisions (threshold, at least one label): [n, L] 0/1
            outputs = model.indicators(outputs)
            return compute_metrics(self.metric_names, outputs, self.labels(self.dev).astype(np.int64)), outputs
        return compute_metrics(self.metric_names, outputs, self.labels(self.dev)), outputs

    def write_predictions(self, out_dir, outputs):
        if self.multi_label:  # as kbert.predict writes them: {"id", "labels": [...]} a line
            from kbert.tasks.core.prediction import jsonl_text, write_text

            rows = [{"id": e["id"], "labels": [self.label_names[j] for j in np.flatnonzero(row)]}
                    for e, row in zip(self.dev, outputs)]
            path = self.out_path(out_dir, "predictions.jsonl")
            write_text(path, jsonl_text(rows))
            return [path]
        values = outputs if self.regression else outputs.argmax(axis=-1)
        return [submission.write_glue(self.out_path(out_dir, self.predictions_file_name()), self.dev_index, values,
                                      self.file_labels)]


class TableRecipe(ClassificationRecipe):
    """csv / jsonl: a generic file with named columns (TableOptions: columns, labels, regression or
    multi-label); single-label, regression or multi-label metrics."""

    reads_table_fields = True

    def read(self):
        o, t = self.options, self.task_options
        if not (o.train_file and o.eval_file and t.text_columns):
            raise OptionsError(f"task {self.task.name!r} needs --train-file, --eval-file and --text-columns",
                               option="text_columns")
        self.regression, self.multi_label = t.regression, t.multi_label
        kwargs = dict(text_columns=list(t.text_columns), label_column=t.label_column, regression=t.regression,
                      multi_label=t.multi_label, label_names=list(t.label_names) if t.label_names else None)
        train = table.read_table(o.train_file, **kwargs)
        if not t.regression and kwargs["label_names"] is None:
            kwargs["label_names"] = train.label_names  # the same ids in both files
        dev = table.read_table(o.eval_file, **kwargs)
        if t.multi_label:
            self.metric_names, self.main_metric = ("micro_f1", "macro_f1", "exact_match"), "micro_f1"
        else:
            self.metric_names = ("pearson", "spearman") if t.regression else ("accuracy", "macro_f1")
            self.main_metric = self.metric_names[-1] if t.regression else "accuracy"
        self.split = "eval"
        self.label_names = self.file_labels = None if t.regression else tuple(train.label_names)
        self.finish_read(train, dev)

    def task_info(self) -> dict:
        t = self.task_options  # what kbert.predict reads by default
        return {**super().task_info(), "text_columns": list(t.text_columns)[:self.num_segments],
                "label_column": t.label_column}


class GlueRecipe(ClassificationRecipe):
    """A GLUE task (``GlueSettings``): its TSVs in --data-dir (the task's folder or the GLUE root),
    its metrics, and the GLUE server's submission TSV."""

    Settings = GlueSettings

    def read(self):
        o, self.glue_task = self.options, self.task.settings.task
        split = o.eval_split or ("dev_matched" if self.glue_task.name == "mnli" else "dev")

        def read(split_name, override):
            if override:
                return glue.read_glue(self.glue_task, split_name, path=override)
            if not o.data_dir:
                raise OptionsError(f"task {self.task.name!r} needs --data-dir (the GLUE task folder or GLUE root)",
                                   option="data_dir")
            return glue.read_glue(self.glue_task, split_name, o.data_dir)

        train, dev = read("train", o.train_file), read(split, o.eval_file)
        for name, data in (("train", train), ("eval", dev)):  # MNLI's no-consensus "-" rows
            self.leave_out(name, data.meta.get("left_out", ()), "rows",
                           f"gold label {self.glue_task.no_consensus!r}: no consensus, not scored by GLUE")
        self.regression = self.glue_task.is_regression
        self.metric_names = self.glue_task.metrics
        self.main_metric = GLUE_MAIN_METRIC.get(self.glue_task.name, self.metric_names[0])
        self.split = split
        self.label_names = self.glue_task.class_names
        self.file_labels = self.glue_task.labels  # what the GLUE server's TSV holds
        self.finish_read(train, dev)

    def predictions_file_name(self) -> str:
        return submission.glue_file_name(self.glue_task.name, self.split)


def long_document_report(seq_length, lengths, windows: bool, what: str, mode: str = "windows") -> tuple:
    """(stats, notes) on texts longer than ``seq_length`` (``lengths``: their packed lengths uncut):
    how many, and under truncate by how many word pieces they are cut (mean, max); ``windows``: they
    are read whole, in ``mode`` (windows or sentences)."""
    lengths = np.asarray(lengths)
    cut = lengths[lengths > seq_length] - seq_length
    stats = {"texts_over_seq_length": int(len(cut)), "pieces_cut_mean": round(float(cut.mean()), 1) if len(cut) else 0.0,
             "pieces_cut_max": int(cut.max()) if len(cut) else 0}
    if not len(cut):
        return stats, []
    if windows:
        return stats, [f"{mode}: {len(cut)} of {len(lengths)} {what} texts are longer than --seq-length {seq_length} "
                       f"(up to {int(lengths.max())} positions) and are read in {mode}"]
    return stats, [f"truncate: {len(cut)} of {len(lengths)} {what} texts were cut at --seq-length {seq_length} (by "
                   f"{stats['pieces_cut_mean']} word pieces on average, {stats['pieces_cut_max']} at most); "
                   "--long-documents windows reads them whole"]


# -- serving ---------------------------------------------------------------------------------------
def _pooled_outputs(model, logits):
    import tensorflow as tf

    kind = model.task_type
    if kind == "text_regressor":
        return {"scores": tf.squeeze(logits, -1) if logits.shape.rank == 2 else logits}
    if kind == "multi_label_classifier":
        from kbert.tasks.classification.model import multi_label_decisions

        p = tf.sigmoid(logits)
        return {"probabilities": p, "predictions": multi_label_decisions(p, model.threshold, model.at_least_one)}
    out = {"logits": logits, "probabilities": tf.nn.softmax(logits),
           "class_ids": tf.argmax(logits, axis=-1, output_type=tf.int32)}
    names = model.label_names or [str(i) for i in range(model.num_classes)]
    out["labels"] = tf.gather(tf.constant(names), out["class_ids"])
    return out


@register_task_type
class Classification(ClassificationPrediction, TaskType):
    name = "classification"
    model_types = ("text_classifier", "text_regressor", "multi_label_classifier")
    recipe_class = TableRecipe  # csv's; the GLUE, JGLUE and KLUE tasks name their own
    Options = TableOptions
    signature_docs = {
        "text_classifier": "text | text_a, text_b -> probabilities [b, C], class_ids [b], labels [b], logits [b, C]",
        "text_regressor": "text | text_a, text_b -> scores [b]",
        "multi_label_classifier": "text | text_a, text_b -> probabilities [b, L], predictions [b, L] (0/1)",
    }

    def model_class(self, model_type):
        from kbert.tasks.classification import model

        return {"text_classifier": model.TextClassifier, "text_regressor": model.TextRegressor,
                "multi_label_classifier": model.MultiLabelClassifier}[model_type]

    def data_source(self, task, split, options):
        if isinstance(task.settings, GlueSettings):
            glue_task = task.settings.task
            kind = "regression" if glue_task.is_regression else "classification"
            return DataSource(kind, glue_task.file(split), functools.partial(_read_glue, glue_task, split),
                              glue_task.metrics)
        if not options.text_columns:
            raise OptionsError(f"task {task.name!r} needs text_columns", option="text_columns")
        read = functools.partial(_read_table, tuple(options.text_columns), options.label_column,
                                 tuple(options.label_names) if options.label_names else None, options.regression)
        kind = "regression" if options.regression else "classification"
        metrics = ("pearson", "spearman") if options.regression else ("accuracy",)
        return DataSource(kind, None, read, metrics)

    def signatures(self, module):
        import tensorflow as tf

        from kbert.tasks.core.signatures import IDS_SPEC

        model = module.model
        names = ["text"] if model.num_segments == 1 else ["text_a", "text_b"]

        @tf.function(input_signature=[{n: tf.TensorSpec([None], tf.string, name=n) for n in names}])
        def serve(inputs):
            segments = inputs["text"] if model.num_segments == 1 else {"text_a": inputs["text_a"],
                                                                       "text_b": inputs["text_b"]}
            logits = model(segments, training=False)
            if model.task_type == "text_regressor":
                logits = logits[:, None]
            return _pooled_outputs(model, logits)

        @tf.function(input_signature=[IDS_SPEC])
        def serve_ids(inputs):
            return _pooled_outputs(model, model.head_logits(model.encode(dict(inputs), training=False), training=False))

        return serve, serve_ids

    long_documents = ("truncate", "windows", "sentences")
    sequence_options = ("bilstm",)

    def warmup_inputs(self, model):
        keys = ["text"] if model.num_segments == 1 else ["text_a", "text_b"]
        requests = [{k: WARMUP_TEXTS[:1] for k in keys}, {k: (WARMUP_TEXTS * 4)[:8] for k in keys}]
        if getattr(model, "units", False):  # a document of several windows (sentences) beside a short text
            long_text = " ".join(WARMUP_TEXTS * (model.seq_length // 4 + 1))
            requests.append({k: [WARMUP_TEXTS[0] if k == "text_a" else long_text, WARMUP_TEXTS[1]] for k in keys})
        return requests


# Module-level readers (picklable, so a Beam worker can receive them).
def _read_glue(task, split, path, data=None):
    return glue.read_glue(task, split, path=path, data=data)


def _read_table(text_columns, label_column, label_names, regression, path, data=None):
    return table.read_table(path, text_columns, label_column, label_names=label_names,
                            regression=regression, data=data)


for _glue_task in glue.TASKS.values():
    _aliases = {f"glue/{_glue_task.directory.lower()}"} - {f"glue/{_glue_task.name}"}
    register_task(f"glue/{_glue_task.name}", "classification", recipe=GlueRecipe,
                  settings=GlueSettings(_glue_task.name), aliases=tuple(_aliases), help=f"GLUE {_glue_task.directory}")
register_task("csv", "classification", aliases=("table", "jsonl"),
              help="a CSV/TSV/JSONL file (format from the extension): --train-file, --eval-file, --text-columns, "
                   "--label-column [--multi-label]")
