"""python -m kbert.finetune: fine-tune a BERT model directory on a task (the paper's §4).

    python -m kbert.finetune --task glue/sst2 --data-dir GLUE/SST-2 --init MODEL_DIR --model-dir OUT

The training loop is ``kbert.training.finetune.finetune(FinetuneOptions)``; this command parses the
flags into those options. ``--backend jax`` trains under Keras' JAX backend (every local device;
several hosts with --coordinator-address/--num-processes/--process-id, or --tpu).

AdamW with linear warmup and decay (kbert.training.optimization), model.fit with a progress bar,
evaluation on the dev split after every epoch (metrics to TensorBoard under OUT/logs and to
OUT/eval_results.json); the best epoch's model is kept in OUT as a model directory (encoder, task
head, kbert.json with the task settings: ``kbert.tasks.load_task_model(OUT)`` reloads it, the
export CLI serves it) together with its predictions in the benchmark's submission format.

Tasks (kbert.tasks.core.registry; a new task is a module in its family folder, see docs/finetuning.md, "Adding a task"):
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import sys


def parse_args(argv=None):
    from kbert.cli_support import ArgumentParser, add_arguments, add_backend_flag, prog
    from kbert.tasks.core.options import FinetuneOptions
    from kbert.tasks.core.registry import task_listing, task_types

    p = ArgumentParser(prog=prog("finetune"), description=__doc__ + task_listing(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_backend_flag(p)
    add_arguments(p, FinetuneOptions)
    p.add_argument("--quiet", action="store_true", help="one line per epoch instead of a progress bar")
    for task_type in task_types():
        if dataclasses.fields(task_type.Options):
            add_arguments(p, task_type.Options, title=f"{task_type.name} options ({task_type.Options.__doc__.strip().splitlines()[0]})")
    for options_class, names in named_task_options().items():
        add_arguments(p, options_class, title=f"{', '.join(names)} options "
                                              f"({options_class.__doc__.strip().splitlines()[0]})")
    return p.parse_args(argv)


def named_task_options() -> dict:
    """{options class: the names of the named tasks that take it}, in listing order."""
    from kbert.tasks.core.registry import tasks

    found = {}
    for task in tasks():
        if task.options is not None:
            found.setdefault(task.options, []).append(task.name)
    return found


def finetune_options(args):
    """FinetuneOptions (with the task type's options) from parsed arguments; FinetuneOptions pass
    through. The task's defaults (seq_length) are the library's to fill in
    (``kbert.training.finetune.resolve_options``)."""
    from kbert.cli_support import from_args
    from kbert.tasks.core.options import FinetuneOptions
    from kbert.tasks.core.registry import get_task

    if isinstance(args, FinetuneOptions):
        return args
    from kbert.cli_support import cli_fields

    named = get_task(args.task)
    for options_class, names in named_task_options().items():  # another task's flag: refused, not ignored
        if options_class is named.options:
            continue
        for f in cli_fields(options_class):
            if getattr(args, f.name, f.default) != f.default:
                raise ValueError(f"--{f.name.replace('_', '-')} is an option of the tasks {', '.join(names)}; "
                                 f"task {named.name!r} does not take it")
    named_options = from_args(named.options, args) if named.options is not None else None
    return from_args(FinetuneOptions, args, task_options=from_args(named.task_type.Options, args),
                     named_options=named_options)


def run(args) -> dict:
    """kbert.training.finetune.finetune for parsed arguments (or FinetuneOptions)."""
    from kbert.training.finetune import finetune

    return finetune(finetune_options(args), progress_bar=not getattr(args, "quiet", False))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from kbert.cli_support import require_dir, use_backend

    use_backend(args.backend)  # before anything imports Keras

    require_dir(args.init, "--init model directory")  # "does not exist" before any other work
    if args.data_dir:
        require_dir(args.data_dir, "--data-dir")
    results = run(args)
    best = results["best"]
    skip = ("epoch", "train_loss", "eval_seconds", "save_seconds")
    shown = ", ".join(f"{k} {v:.4f}" for k, v in best.items() if k not in skip)
    print(f"best epoch {results['best_epoch']}: {shown}")
    print(f"model directory: {results['model_dir']}  (metrics: eval_results.json, "
          f"predictions: {', '.join(pathlib.Path(p).name for p in results['predictions'])})")
    print(f"TensorBoard: tensorboard --logdir {pathlib.Path(results['model_dir']) / 'logs'}")
    from kbert.explore.curves import report_curves

    print(f"loss/accuracy curves: {report_curves(pathlib.Path(results['model_dir']) / 'logs')}")
    return 0
