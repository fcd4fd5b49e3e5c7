"""Fine-tuning options as typed dataclasses, and the one place that turns them into command-line
arguments and back.

``FinetuneOptions`` holds what every task shares (data files, training hyper-parameters); each
task type adds its own dataclass (``TaskType.Options``, e.g. the CSV columns or SQuAD's window
settings), held in ``FinetuneOptions.task_options``. From Python::

    from kbert.training.finetune import finetune
    from kbert.tasks.options import FinetuneOptions
    finetune(FinetuneOptions(task="glue/sst2", init="models/tiny", model_dir="runs/sst2", data_dir="glue/SST-2"))

On the command line, ``add_arguments`` makes one flag per field (``--data-dir`` for
``data_dir``; help, type and flag name from the field's metadata) and ``from_args`` builds the
dataclass from the parsed namespace. ``kbert.finetune`` and ``kbert.bench finetune`` both build
their parsers from these fields.
"""

from __future__ import annotations

import argparse
import dataclasses


def comma_list(text) -> tuple:
    """ "a,b" -> ("a", "b"); a list/tuple is kept as a tuple."""
    if isinstance(text, (list, tuple)):
        return tuple(str(t) for t in text)
    return tuple(part.strip() for part in str(text).split(",") if part.strip())


def option(default=dataclasses.MISSING, *, help: str, type=None, flag: str | None = None):
    """A dataclass field with its command-line help (``type``: the argparse converter when the
    default does not say it; ``flag``: e.g. "--no-bucketing" for a True default)."""
    metadata = {"help": help, "type": type, "flag": flag}
    return dataclasses.field(default=default, metadata=metadata)


class OptionsError(ValueError):
    """An option value that cannot work (named with its flag)."""


@dataclasses.dataclass
class NoOptions:
    """A task type without options of its own."""


@dataclasses.dataclass
class FinetuneOptions:
    """The options of every fine-tuning run (``python -m kbert.finetune``)."""

    task: str = option(help="the task (see the list above)")
    init: str = option(help="model directory to start from (kbert.convert output)")
    model_dir: str = option(help="output: model directory, metrics, predictions, logs")
    data_dir: str | None = option(None, help="the task's folder (GLUE: the task folder or the GLUE root)")
    train_file: str | None = option(None, help="training file (instead of the task's file in --data-dir)")
    eval_file: str | None = option(None, help="evaluation file (instead of the task's file in --data-dir)")
    eval_split: str | None = option(None, help="split to evaluate on (default dev; MNLI dev_matched)")
    train_rows: str | None = option(None, help="START:END slice of the training file's rows (KLUE tasks; e.g. :1500)")
    eval_rows: str | None = option(None, help="START:END slice of the evaluation file's rows (KLUE tasks; e.g. 1500:)")
    epochs: int = option(3, help="passes over the training data")
    batch_size: int = option(32, help="training batch size")
    eval_batch_size: int = option(64, help="evaluation batch size")
    learning_rate: float = option(5e-5, help="peak learning rate (AdamW)")
    warmup_proportion: float = option(0.1, help="share of the steps spent warming up")
    weight_decay: float = option(0.01, help="AdamW weight decay (not on biases and LayerNorm)")
    seq_length: int | None = option(None, type=int, help="at most this many tokens per example "
                                                         "(default: the task type's, 128; SQuAD 384)")
    max_train_examples: int | None = option(None, type=int, help="train on this many examples (random, --seed)")
    max_eval_examples: int | None = option(None, type=int, help="evaluate on this many examples (random, --seed)")
    bucketing: bool = option(True, flag="--no-bucketing",
                             help="random batches instead of batches grouped by length")
    fixed_length: bool = option(False, help="always pad to --seq-length (no per-batch trimming; e.g. for XLA/TPU)")
    seed: int = option(0, help="seed of the subsets, shuffling and initialisation")
    hidden_dropout: float | None = option(None, type=float, help="override the encoder's hidden_dropout_prob")
    tpu: str | None = option(None, help="--backend jax on a Cloud TPU VM: join its hosts (jax.distributed finds "
                                        "them; give any value, e.g. local)")
    coordinator_address: str | None = option(None, help="--backend jax over several processes: host:port of "
                                                        "process 0 (jax.distributed.initialize)")
    num_processes: int | None = option(None, type=int, help="--backend jax: number of processes of the run")
    process_id: int | None = option(None, type=int, help="--backend jax: this process's id, 0 .. N-1")
    task_options: object = dataclasses.field(default=None, metadata={"cli": False})

    def __post_init__(self):
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


def _flag(field) -> str:
    return field.metadata.get("flag") or "--" + field.name.replace("_", "-")


def cli_fields(cls) -> list:
    return [f for f in dataclasses.fields(cls) if f.metadata.get("cli", True)]


def add_arguments(parser, cls, *, only=None, defaults=None, helps=None, title=None):
    """One flag per field of dataclass ``cls`` (``only``: these field names, in that order);
    ``defaults``/``helps`` override a field's default/help for this parser (a field without a
    default is a required flag unless ``defaults`` gives one). ``title``: an argument group."""
    defaults, helps = defaults or {}, helps or {}
    fields = {f.name: f for f in cli_fields(cls)}
    target = parser.add_argument_group(title) if title else parser
    for name in (only or list(fields)):
        field = fields[name]
        default = defaults.get(name, field.default)
        help_text = helps.get(name, field.metadata.get("help"))
        kwargs = {"dest": name, "help": help_text}
        if isinstance(default, bool):
            kwargs["action"] = "store_false" if default else "store_true"
        else:
            converter = field.metadata.get("type") or (type(default) if default not in (None, dataclasses.MISSING)
                                                       else None)
            if converter is not None:
                kwargs["type"] = converter
            if default is dataclasses.MISSING:
                kwargs["required"] = True
            else:
                kwargs["default"] = default
                if default is not None and kwargs["help"]:
                    kwargs["help"] += f" (default {default})"
        target.add_argument(_flag(field), **kwargs)
    return parser


def from_args(cls, args: argparse.Namespace, **extra):
    """``cls`` from the parsed namespace (fields it lacks keep their defaults)."""
    values = {f.name: getattr(args, f.name) for f in cli_fields(cls) if hasattr(args, f.name)}
    return cls(**values, **extra)
