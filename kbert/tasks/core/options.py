"""Fine-tuning options as typed dataclasses.

``FinetuneOptions`` holds what every task shares (data files, training hyper-parameters, long
documents' windows); each task type adds its own dataclass (``TaskType.Options``, e.g. the CSV
columns or SQuAD's answer selection), held in ``FinetuneOptions.task_options``, and a named task may
add one more (``NamedTask.options``, e.g. ``RowsOptions``), held in ``FinetuneOptions.named_options``.
Each option has one home: no two of the classes a run holds define the same field or flag
(tests/tasks/core/test_options.py walks them). From Python::

    from kbert.training.finetune import finetune
    from kbert.tasks.core.options import FinetuneOptions
    finetune(FinetuneOptions(task="glue/sst2", init="models/tiny", model_dir="runs/sst2", data_dir="glue/SST-2"))

On the command line, ``kbert.cli_support.add_arguments`` makes one flag per field (``--data-dir``
for ``data_dir``; help, type and flag name from the field's metadata) and
``kbert.cli_support.from_args`` builds the dataclass from the parsed namespace: ``kbert finetune``
and ``kbert bench finetune`` both build their parsers from these fields.
"""

from __future__ import annotations

import dataclasses
import re

from kbert.api_export import kbert_export
from kbert.errors import OptionsError
from kbert.options import ATTENTION_CHOICES, PRECISIONS, comma_list, option

# option and comma_list live in kbert.options (PretrainOptions uses them too); the task types' option
# classes import them from here as well. The one OptionsError is kbert.errors'.
__all__ = ["FinetuneOptions", "NoOptions", "RowsOptions", "check_slices", "comma_list", "option"]


@dataclasses.dataclass
class NoOptions:
    """A task type without options of its own."""


@kbert_export("kbert.tasks.RowsOptions")
@dataclasses.dataclass
class RowsOptions:
    """Rows of the files: a slice to train on, another to evaluate on.

    A named task's options where its benchmark publishes one labelled file for what others split in
    two (the KLUE tasks). The span-QA tasks slice a file by articles instead, which keeps an
    article's questions together (``kbert.tasks.ArticlesOptions``).

    Attributes:
        train_rows: ``START:END``, a Python slice of the training file's rows (e.g. ``:1500``).
        eval_rows: the same of the evaluation file's rows (e.g. ``1500:``).

    Examples:
        >>> import kbert
        >>> kbert.tasks.RowsOptions(train_rows=":1500", eval_rows="1500:").eval_rows
        '1500:'
    """

    train_rows: str | None = option(None, help="START:END slice of the training file's rows (e.g. :1500)")
    eval_rows: str | None = option(None, help="START:END slice of the evaluation file's rows (e.g. 1500:)")

    def __post_init__(self):
        check_slices(self, "rows", "1500")


def check_slices(options, unit: str, example: str) -> None:
    """An OptionsError for a ``train_<unit>`` / ``eval_<unit>`` field of ``options`` that is not a
    ``START:END`` slice (whole numbers, either side may be empty; ``example``: one for the message)."""
    for name in (f"train_{unit}", f"eval_{unit}"):
        value = getattr(options, name)
        parts = value.split(":") if isinstance(value, str) else []
        if value is not None and not (len(parts) == 2 and all(re.fullmatch(r"\s*(-?\d+)?\s*", p) for p in parts)):
            raise OptionsError(f"{name} (--{name.replace('_', '-')}) must be START:END (e.g. :{example} or "
                               f"{example}:), got {value!r}", option=name, value=value)


def check_bilstm(bilstm) -> int:
    """``bilstm`` (LSTM units per direction; 0: none) as an int; an OptionsError for anything but a
    whole number >= 0."""
    if isinstance(bilstm, bool) or not isinstance(bilstm, int) or bilstm < 0:
        raise OptionsError(f"bilstm (--bilstm) must be a whole number of LSTM units per direction (0: none), "
                           f"got {bilstm!r}", option="bilstm", value=bilstm)
    return int(bilstm)


@kbert_export("kbert.FinetuneOptions")
@dataclasses.dataclass
class FinetuneOptions:
    """The options of every fine-tuning run (``kbert finetune`` has one flag per field).

    The fields not listed below (batching, seeds, dropout, devices) are documented by their flags:
    ``kbert finetune --help``.

    Attributes:
        task: the task's name (``kbert.tasks.task_names()``: ``glue/sst2``, ``csv``, ``squad``, ...).
        init: the model directory to start from (``kbert.convert_hf``'s output, a pre-training run).
        model_dir: the output: the best epoch's model directory, metrics, predictions, logs.
        data_dir: the task's folder, or ``train_file`` and ``eval_file`` (``eval_split``: which split).
        epochs: passes over the training data; ``batch_size``, ``eval_batch_size``,
            ``learning_rate``, ``warmup_proportion``, ``weight_decay``: the optimisation (AdamW).
        seq_length: at most this many tokens per example (None: the task type's default).
        max_train_examples: train on a random subset of this size (``max_eval_examples`` likewise).
        long_documents: ``truncate``, ``windows`` or ``sentences`` (classification: each sentence
            read alone, kbert.text.sentences): how texts longer than ``seq_length`` are read.
        doc_stride: word pieces between the starts of a text's windows, for every task that reads
            windows (span QA's contexts always; other types under ``long_documents="windows"``, which
            refuse it otherwise); None: the task type's default (span QA 128, else half a window).
        task_options: the task type's own options (e.g. ``kbert.TableOptions`` for ``csv``).
        named_options: the named task's own options, where its ``NamedTask.options`` names a class
            (e.g. ``kbert.tasks.RowsOptions``); None: that class's defaults.
        bilstm: LSTM units per direction of a randomly initialised BiLSTM between the encoder and the
            output layer, trained with the rest (the paper's Table 5 "+ BiLSTM"); 0: none. Span QA,
            tagging and classification (not multiple choice); with ``features``, the units of its two
            BiLSTM layers.
        features: the feature-based approach of the paper's §5.4 (Table 7), tagging only: the encoder is
            frozen and this combination of its layers (``kbert.features.COMBINATIONS``, e.g.
            ``concat_last_four_hidden``) feeds a two-layer BiLSTM (``bilstm`` units per direction,
            default the encoder's hidden size), then the tagger's dense layer. None: fine-tuning.

    Examples:
        >>> import kbert
        >>> options = kbert.FinetuneOptions(task="glue/sst2", init="runs/tiny", model_dir="runs/sst2",
        ...                                 data_dir="glue/SST-2", epochs=1)
        >>> options.learning_rate, options.batch_size
        (5e-05, 32)
    """

    task: str = option(help="the task (see the list above)")
    init: str = option(help="model directory to start from (kbert.convert output)")
    model_dir: str = option(help="output: model directory, metrics, predictions, logs")
    data_dir: str | None = option(None, help="the task's folder (as the task names it: --help lists the tasks)")
    train_file: str | None = option(None, help="training file (instead of the task's file in --data-dir)")
    eval_file: str | None = option(None, help="evaluation file (instead of the task's file in --data-dir)")
    eval_split: str | None = option(None, help="split to evaluate on (default: the task's dev split)")
    epochs: int = option(3, help="passes over the training data")
    batch_size: int = option(32, help="training batch size")
    eval_batch_size: int = option(64, help="evaluation batch size")
    learning_rate: float = option(5e-5, help="peak learning rate (AdamW)")
    warmup_proportion: float = option(0.1, help="share of the steps spent warming up")
    weight_decay: float = option(0.01, help="AdamW weight decay (not on biases and LayerNorm)")
    seq_length: int | None = option(None, type=int, help="at most this many tokens per example "
                                                         "(default: the task type's: 128, span QA 384)")
    max_train_examples: int | None = option(None, type=int, help="train on this many examples (random, --seed)")
    max_eval_examples: int | None = option(None, type=int, help="evaluate on this many examples (random, --seed)")
    bucketing: bool = option(True, flag="--no-bucketing",
                             help="random batches instead of batches grouped by length")
    fixed_length: bool = option(False, help="always pad to --seq-length (no per-batch trimming; e.g. for XLA/TPU)")
    seed: int = option(0, help="seed of the subsets, shuffling and initialisation")
    hidden_dropout: float | None = option(None, type=float, help="override the encoder's hidden_dropout_prob")
    attention: str = option("auto", help="auto (the fastest faithful attention on the device: cuDNN flash "
                                         "attention under --backend jax on NVIDIA GPUs), plain or fused; the "
                                         "model directory is the same either way")
    mixed_precision: str = option("float32", help="float32, mixed_bfloat16 or mixed_float16 (Keras' dtype policy)")
    tpu: str | None = option(None, help="--backend jax on a Cloud TPU VM: join its hosts (jax.distributed finds "
                                        "them; give any value, e.g. local)")
    coordinator_address: str | None = option(None, help="--backend jax over several processes: host:port of "
                                                        "process 0 (jax.distributed.initialize)")
    num_processes: int | None = option(None, type=int, help="--backend jax: number of processes of the run")
    process_id: int | None = option(None, type=int, help="--backend jax: this process's id, 0 .. N-1")
    # Texts longer than --seq-length (kbert.tasks.core.windows); recorded in the model directory.
    long_documents: str = option("truncate", help="texts longer than --seq-length: truncate (cut them; the run "
                                                  "reports how many), windows (read each in overlapping windows, "
                                                  "one answer per text; classification, regression, multi-label) "
                                                  "or sentences (each sentence read alone, pooled by attention; "
                                                  "one-text classification, regression, multi-label)")
    # The one stride of every task's windows: span QA reads each context in windows whatever
    # long_documents says; other types read windows under long_documents="windows" only, and refuse a
    # stride otherwise (TaskType.doc_stride).
    doc_stride: int | None = option(None, type=int, help="word pieces between the starts of a text's windows, "
                                                         "below --seq-length: span QA's contexts, and texts under "
                                                         "--long-documents windows (default: span QA 128, "
                                                         "otherwise half a window)")
    # Layers between the encoder and the output layer (kbert.tasks.core.sequence_features, and the
    # classification models' RecurrentPooledHead); recorded in the model directory. The task type
    # says which it takes (TaskType.sequence_options).
    bilstm: int = option(0, help="LSTM units per direction of a BiLSTM between the encoder and the task's layer, "
                                 "trained with it (the paper's Table 5 \"+ BiLSTM\"; not multiple choice); "
                                 "0: none", metavar="UNITS")
    features: str | None = option(None, metavar="NAME", help="tagging: the feature-based approach (the paper's Table 7): a frozen "
                                             "encoder's layers, combined as NAME (kbert features' combinations: "
                                             "last_hidden, concat_last_four_hidden, ...), into a two-layer BiLSTM "
                                             "(--bilstm units, default the hidden size)")
    task_options: object = dataclasses.field(default=None, metadata={"cli": False})
    named_options: object = dataclasses.field(default=None, metadata={"cli": False})

    def __post_init__(self):
        if self.attention not in ATTENTION_CHOICES:
            raise OptionsError(f"attention (--attention) must be one of {', '.join(ATTENTION_CHOICES)}, "
                               f"got {self.attention!r}")
        if self.mixed_precision not in PRECISIONS:
            raise OptionsError(f"mixed_precision (--mixed-precision) must be one of {', '.join(PRECISIONS)}, "
                               f"got {self.mixed_precision!r}")
        check_bilstm(self.bilstm)
        # Checked here, not in the command line, so that every caller gets the same one-line error
        # (a count of 0 would reach tf.data as an empty shuffle buffer).
        for name in ("max_train_examples", "max_eval_examples", "batch_size", "eval_batch_size"):
            value = getattr(self, name)
            if value is None and name.startswith("max_"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                what = "leave it out to use every example" if name.startswith("max_") else "rows per batch"
                raise OptionsError(f"{name} (--{name.replace('_', '-')}) must be a positive whole number "
                                   f"({what}), got {value!r}")

    @property
    def dynamic_length(self) -> bool:
        return not self.fixed_length
