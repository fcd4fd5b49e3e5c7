"""The plug-in interface of a task type (see kbert.tasks.core.registry) and the fine-tuning Recipe base.

A task type module defines a ``TaskType`` subclass and a ``Recipe`` subclass, registers the
type and its named tasks::

    @register_task_type
    class MyType(TaskType):
        name = "my_type"
        model_types = ("text_classifier",)       # the kbert.json task.type values it serves
        Options = MyOptions                      # a dataclass (kbert.tasks.core.options.option fields)
        def model_class(self, model_type): ...   # the Keras TaskModel class
        recipe_class = MyRecipe                  # reads data, builds, trains, evaluates, writes predictions
        def data_source(self, task, split, options): ...   # for the TFRecord pipeline
        def signatures(self, module): ...        # serving_default / serving_ids tf.functions
        def warmup_inputs(self, model): ...      # TF Serving warm-up requests

    register_task("my_task", "my_type", help="...")   # recipe=, settings=, options=: the task's own

Nothing here imports TensorFlow: the methods that need it import it when called.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Callable

import numpy as np

from kbert.api_export import kbert_export
from kbert.errors import OptionsError
from kbert.tasks.core.options import FinetuneOptions, NoOptions
from kbert.tasks.core.windows import default_stride


@dataclasses.dataclass(frozen=True)
class DataSource:
    """How the TFRecord pipeline reads a task split (see kbert.tasks.core.task_files.resolve_task).

    Attributes:
      kind: the TFRecord layout (kbert.data.tfrecord.KINDS).
      file: the split's file name inside the data folder (None: the caller must name the file).
      read: read(path, data=None) -> TaskData; module-level (picklable for Beam workers).
      metrics: metric names for kbert.tasks.core.metrics.compute_metrics.
    """

    kind: str
    file: str | None
    read: Callable
    metrics: tuple = ()


@kbert_export("kbert.tasks.TaskType")
class TaskType:
    """One kind of task; subclasses fill in the attributes and methods below.

    Attributes:
        name: the type's name (``kbert.tasks.register_task`` refers to it).
        model_types: the ``kbert.json`` ``task.type`` values whose models it rebuilds.
        Options: the dataclass of its own fine-tuning options (``FinetuneOptions.task_options``).
        recipe_class: its fine-tuning ``kbert.tasks.Recipe``.
        default_seq_length: the sequence length when ``FinetuneOptions.seq_length`` is None.
        long_documents: the ``FinetuneOptions.long_documents`` values its models take.
        default_doc_stride: the stride of its windows when ``FinetuneOptions.doc_stride`` is None
            (None: half a window).
        backends: the Keras backends its models run under.
        sequence_options: the ``FinetuneOptions`` fields of layers between encoder and head that its
            models take (``bilstm``, ``features``: kbert.tasks.core.sequence_features); others refuse them.

    Examples:
        >>> import kbert
        >>> task_type = kbert.tasks.get_task("squad").task_type
        >>> isinstance(task_type, kbert.tasks.TaskType), task_type.default_seq_length
        (True, 384)
    """

    name = ""
    model_types: tuple = ()
    Options = NoOptions
    recipe_class = None  # the Recipe subclass
    default_seq_length = 128
    # The Keras backends its models train and predict under (TensorFlow: strings in the graph;
    # others: ids packed on the host, see TaskModel.pack).
    backends: tuple = ("tensorflow", "jax")
    # How its models may read texts longer than seq_length (FinetuneOptions.long_documents):
    # "windows" only where the type can combine the windows' outputs into one answer.
    long_documents: tuple = ("truncate",)
    default_doc_stride: int | None = None
    # The FinetuneOptions fields of layers between the encoder and the head ("bilstm", "features") that
    # its models take (kbert.tasks.core.sequence_features; classification's RecurrentPooledHead).
    sequence_options: tuple = ()
    # What serving_default takes and returns, per model type (docs/serving.md documents the same).
    signature_docs: dict = {}

    def model_class(self, model_type: str):
        """The TaskModel class that kbert.json ``task.type`` == model_type rebuilds."""
        raise NotImplementedError

    def options(self, task_options=None):
        """``task_options`` checked against this type's Options (None: the defaults); another class
        is an OptionsError."""
        if task_options is None:
            return self.Options()
        if not isinstance(task_options, self.Options):
            raise OptionsError(f"task_options: task type {self.name!r} takes {self.Options.__name__} options, "
                               f"got {type(task_options).__name__}", option="task_options", value=task_options)
        return task_options

    def reads_windows(self, long_documents: str) -> bool:
        """Whether a run with ``long_documents`` reads its texts in windows (and so has a stride):
        ``windows``, and ``sentences``, whose sentences longer than one input are read in windows."""
        return long_documents in ("windows", "sentences")

    def doc_stride(self, options: FinetuneOptions) -> int | None:
        """The stride of a run's windows: ``options.doc_stride``, else ``default_doc_stride``, else
        half a window; None where the run reads no windows (kbert.training.finetune refuses a stride there)."""
        if not self.reads_windows(options.long_documents):
            return None
        if options.doc_stride is not None:
            return options.doc_stride
        return self.default_doc_stride or default_stride(options.seq_length or self.default_seq_length)

    def recipe(self, task, options: FinetuneOptions):
        """The fine-tuning Recipe of ``task``: the named task's own (``NamedTask.recipe``, a subclass of
        this type's Recipe that reads another file format) or this type's ``recipe_class``."""
        return task.recipe_class(task, options)

    def data_source(self, task, split: str, options) -> DataSource:
        raise NotImplementedError(f"task type {self.name!r} has no TFRecord pipeline")

    @staticmethod
    def split_file(task, files: dict, split: str) -> str:
        """The file name of ``split`` in ``files``; an unknown split is an error listing them."""
        if split not in files:
            raise OptionsError(f"task {task.name!r} has no split {split!r}; expected one of {sorted(files)}",
                               option="eval_split", value=split)
        return files[split]

    def signatures(self, module) -> tuple:
        """(serve, serve_ids) tf.functions with input signatures over ``module.model``."""
        raise NotImplementedError

    def warmup_inputs(self, model) -> list:
        """Small representative requests (dicts of lists) for TF Serving's warm-up."""
        raise NotImplementedError

    # -- prediction on unlabelled rows (python -m kbert.predict, kbert.tasks.core.prediction) ---------
    # Input formats (--task-format) and output formats (--format) of the type's models.
    input_formats: tuple = ()

    def output_formats(self, task_meta: dict) -> tuple:
        """The ``--format`` values for a model whose kbert.json ``task`` object is ``task_meta``."""
        return ("jsonl", "tsv")

    def read_prediction_input(self, task_meta: dict, path, options):
        """The rows to predict (a kbert.data TaskData, file order) from ``path``; labels are not
        required. ``options``: kbert.tasks.core.prediction.PredictOptions. Raises a DataError naming
        file and line for a bad row (before any prediction is made)."""
        raise NotImplementedError(f"task type {self.name!r} does not implement prediction "
                                  "(TaskType.read_prediction_input, predict)")

    def predict(self, model, data, options, progress=None) -> list:
        """One JSON-ready dict per row of ``data``, in its order (``progress(n)`` after each batch)."""
        raise NotImplementedError(f"task type {self.name!r} does not implement prediction")

    def format_predictions(self, task_meta: dict, data, predictions: list, fmt: str) -> str:
        """The output file's text in format ``fmt`` (jsonl and tsv here; types add their own)."""
        from kbert.tasks.core.prediction import jsonl_text, tsv_text

        if fmt == "jsonl":
            return jsonl_text(predictions)
        if fmt == "tsv":
            return tsv_text(predictions)
        raise OptionsError(f"format {fmt!r} is not available for {task_meta.get('type')!r} models; "
                           f"expected one of {', '.join(self.output_formats(task_meta))}", option="format", value=fmt)


# How many ids of left-out rows a run's log line and summary name (Recipe.leave_out).
LEFT_OUT_SHOWN = 5

# Example texts for warm-up requests: short and long, with non-ASCII characters.
WARMUP_TEXTS = ["kbert warms up this model.", "A second, longer sentence — with ünïcode and 字 — to warm up."]


def subsample(examples, n, seed):
    """(examples, their indices in the file): all of them, or n drawn without replacement
    (fixed seed), kept in file order."""
    if n is None or n >= len(examples):
        return list(examples), np.arange(len(examples))
    index = np.sort(np.random.default_rng(seed).choice(len(examples), size=n, replace=False))
    return [examples[i] for i in index], index


@kbert_export("kbert.tasks.Recipe")
class Recipe:
    """How ``kbert.finetune`` runs a task: read the data (``read``, called by the constructor), build
    the model, feed it, evaluate it with the benchmark's metric and write its predictions.

    Subclasses set metric_names, main_metric, num_train, num_eval and implement read, build_model,
    train_dataset, evaluate and write_predictions. A recipe that several named tasks share with
    different fixed settings (which GLUE task, which SQuAD version) declares them as a dataclass,
    ``Settings``; each task registers an instance (``register_task(..., settings=...)``), read as
    ``self.task.settings``.

    Args:
        task: the ``NamedTask`` (``kbert.tasks.get_task``).
        options: the run's ``kbert.FinetuneOptions`` (``task_options`` checked against the type's,
            ``named_options`` against the named task's: ``self.task_options``, ``self.named_options``).

    Examples:
        >>> import kbert
        >>> recipe_class = kbert.tasks.get_task("csv").task_type.recipe_class
        >>> issubclass(recipe_class, kbert.tasks.Recipe)
        True
    """

    Settings = None  # the dataclass of a named task's fixed settings (NamedTask.settings); None: none
    # The FinetuneOptions.long_documents values its models take, where fewer than its type's (None:
    # the type's), e.g. a recipe whose model reads no windows.
    long_documents: tuple | None = None
    metric_names: tuple = ()
    main_metric = ""
    # Lines kbert.finetune logs before training: what read() did with the files that the user should
    # know (e.g. training questions left out, with their ids); summary() gives the same in numbers.
    data_notes: tuple = ()

    def __init__(self, task, options: FinetuneOptions):
        self.task = task
        self.options = options
        self.task_options = task.task_type.options(options.task_options)
        self.named_options = task.named_options(options.named_options)  # the named task's own (or None)
        self.read()

    @property
    def seq_length(self) -> int:
        return self.options.seq_length or self.task.task_type.default_seq_length

    @property
    def doc_stride(self) -> int | None:
        """The stride of the run's windows (``TaskType.doc_stride``); None where it reads none."""
        return self.task.task_type.doc_stride(self.options)

    @property
    def eval_split(self) -> str:
        return self.options.eval_split or "dev"

    def data_file(self, files: dict, split: str, override) -> str:
        """``override`` (--train-file / --eval-file), or the split's file (``files``) in --data-dir."""
        if override:
            return os.fspath(override)
        if not self.options.data_dir:
            raise OptionsError(f"task {self.task.name!r} needs --data-dir or --train-file/--eval-file",
                               option="data_dir")
        return os.path.join(os.fspath(self.options.data_dir), TaskType.split_file(self.task, files, split))

    def subsets(self, train_examples, eval_examples):
        """Sets train, dev (the --max-*-examples subsets), dev_index, num_train and num_eval."""
        o = self.options
        self.train, _ = subsample(train_examples, o.max_train_examples, o.seed)
        self.dev, self.dev_index = subsample(eval_examples, o.max_eval_examples, o.seed)
        self.num_train, self.num_eval = len(self.train), len(self.dev)

    def build_kwargs(self, encoder_overrides=None) -> dict:
        """The from_model_dir arguments every task model takes."""
        kwargs = dict(seq_length=self.seq_length, load_head=False, encoder_overrides=encoder_overrides,
                      dynamic_length=self.options.dynamic_length,
                      attention=getattr(self.options, "attention", "auto"))
        # Only where set, so that the models of types without them never see them (finetune refuses them there).
        for name in ("bilstm", "features"):
            if getattr(self.options, name, None):
                kwargs[name] = getattr(self.options, name)
        return kwargs

    def boundaries(self, seq_length):
        from kbert.tasks.core.datasets import bucket_boundaries

        return bucket_boundaries(seq_length) if self.options.bucketing else None

    def leave_out(self, split: str, ids, what: str, why: str) -> None:
        """Records the rows of ``split`` ("train" or "eval") that read() left out and why (e.g. a
        question with no answer in its context): a line of data_notes, which kbert.finetune logs,
        and ``<split>_left_out`` (how many) and ``<split>_left_out_ids`` (the first few) in summary()."""
        ids = list(ids)
        if not ids:
            return
        shown = ", ".join(map(str, ids[:LEFT_OUT_SHOWN])) + (", ..." if len(ids) > LEFT_OUT_SHOWN else "")
        self.data_notes = (*self.data_notes, f"{len(ids)} {split} {what} left out ({why}): {shown}")
        self.left_out = {**getattr(self, "left_out", {}), split: ids}

    def summary(self) -> dict:
        summary = {"train_examples": self.num_train, "eval_examples": self.num_eval}
        for split, ids in getattr(self, "left_out", {}).items():
            summary.update({f"{split}_left_out": len(ids), f"{split}_left_out_ids": ids[:LEFT_OUT_SHOWN]})
        return summary

    def task_info(self) -> dict:
        return {"task_name": self.task.name, "metrics": list(self.metric_names), "main_metric": self.main_metric}

    def read(self):
        raise NotImplementedError

    def build_model(self, init_dir, encoder_overrides=None):
        raise NotImplementedError

    def train_dataset(self, model):
        raise NotImplementedError

    def evaluate(self, model) -> tuple:
        """(metrics dict, predictions for write_predictions)."""
        raise NotImplementedError

    def write_predictions(self, out_dir, predictions) -> list:
        raise NotImplementedError

    @staticmethod
    def out_path(out_dir, name) -> pathlib.Path:
        return pathlib.Path(out_dir) / name
