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

The paper's protocol (kbert.training.search): several values of --learning-rate, --batch-size or
--epochs (comma-separated, e.g. --learning-rate 5e-5,4e-5,3e-5,2e-5) and --restarts N train every
combination N times under OUT/runs/ and keep the best on dev in OUT; a killed search resumes.

Tasks (kbert.tasks.core.registry; a new task is a module in its family folder, see docs/finetuning.md, "Adding a task"):
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import sys


def parse_args(argv=None):
    from kbert.cli_support import ArgumentParser, add_arguments, add_backend_flag, number_list, prog
    from kbert.tasks.core.options import FinetuneOptions
    from kbert.tasks.core.registry import task_listing
    from kbert.training.search import SearchOptions

    p = ArgumentParser(prog=prog("finetune"), description=__doc__ + task_listing(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_backend_flag(p)
    # One value: one run, as ever; several: the search (SearchOptions' axes).
    add_arguments(p, FinetuneOptions, types={name: number_list(kind) for name, kind in GRID_FLAGS.items()},
                  helps={name: f"{FinetuneOptions.__dataclass_fields__[name].metadata['help']}; several, "
                               "comma-separated: one run each, the best on dev kept" for name in GRID_FLAGS})
    add_arguments(p, SearchOptions)
    p.add_argument("--quiet", action="store_true", help="one line per epoch instead of a progress bar")
    for options_class, (title, _) in task_options_classes().items():
        summary = options_class.__doc__.strip().splitlines()[0].rstrip(".")
        add_arguments(p, options_class, title=f"{title} options ({summary})")
    return p.parse_args(argv)


# The flags that take several values, and each one's type; SearchOptions' axis for each.
GRID_FLAGS = {"learning_rate": float, "batch_size": int, "epochs": int}
GRID_AXES = {"learning_rate": "learning_rates", "batch_size": "batch_sizes", "epochs": "epochs"}


def search_options(args):
    """SearchOptions from the grid flags and --restarts, or None for one run; ``args`` is left
    with one value per grid flag (the flag's own for one value, the default for several)."""
    from kbert.tasks.core.options import FinetuneOptions
    from kbert.training.search import SearchOptions

    axes = {}
    for name in GRID_FLAGS:
        values = getattr(args, name, None)
        if not isinstance(values, tuple):
            continue
        if len(values) == 1:
            setattr(args, name, values[0])
        else:
            axes[GRID_AXES[name]] = values
            setattr(args, name, FinetuneOptions.__dataclass_fields__[name].default)
    restarts = getattr(args, "restarts", 1)
    return SearchOptions(**axes, restarts=restarts) if axes or restarts != 1 else None


def task_options_classes() -> dict:
    """{options class: (its group's title, the tasks that take it)} of every task type's options and
    every named task's own (``NamedTask.options``), in listing order: one flag group each. An option
    has one home, so each flag belongs to one group (tests/tasks/core/test_options.py)."""
    from kbert.tasks.core.registry import task_types, tasks

    found = {t.Options: (t.name, f"the {t.name} tasks") for t in task_types() if dataclasses.fields(t.Options)}
    named = {}
    for task in tasks():
        if task.options is not None:
            named.setdefault(task.options, []).append(task.name)
    found.update({cls: (", ".join(names), f"the tasks {', '.join(names)}") for cls, names in named.items()})
    return found


def finetune_options(args):
    """FinetuneOptions (with the task type's and the named task's options) from parsed arguments;
    FinetuneOptions pass through. A flag of another task's options is an OptionsError, not ignored.
    The task's defaults (seq_length, doc_stride) are the library's to fill in
    (``kbert.training.finetune.resolve_options``)."""
    from kbert.cli_support import cli_fields, from_args
    from kbert.errors import OptionsError
    from kbert.tasks.core.options import FinetuneOptions
    from kbert.tasks.core.registry import get_task

    if isinstance(args, FinetuneOptions):
        return args
    for name in GRID_FLAGS:  # several values are a search's (search_options), not one run's
        values = getattr(args, name, None)
        if isinstance(values, tuple):
            if len(values) != 1:
                raise OptionsError(f"--{name.replace('_', '-')} {','.join(map(str, values))}: several values are "
                                   "a search; run it with kbert finetune (kbert.finetune_search)",
                                   option=name, value=values)
            setattr(args, name, values[0])
    named = get_task(args.task)
    for options_class, (_, takers) in task_options_classes().items():
        if options_class in (named.task_type.Options, named.options):
            continue
        for f in cli_fields(options_class):
            value = getattr(args, f.name, f.default)
            if value != f.default:
                flag = f.metadata.get("flag") or "--" + f.name.replace("_", "-")
                raise OptionsError(f"{flag} is an option of {takers}; task {named.name!r} does not take it",
                                   option=f.name, value=value)
    named_options = from_args(named.options, args) if named.options is not None else None
    return from_args(FinetuneOptions, args, task_options=from_args(named.task_type.Options, args),
                     named_options=named_options)


def run(args) -> dict:
    """kbert.training.finetune.finetune for parsed arguments (or FinetuneOptions), or
    kbert.training.search.finetune_search where the flags ask for several runs."""
    from kbert.training.finetune import finetune
    from kbert.training.search import finetune_search

    search = search_options(args) if isinstance(args, argparse.Namespace) else None
    progress_bar = not getattr(args, "quiet", False)
    if search is not None:
        return finetune_search(finetune_options(args), search, progress_bar=progress_bar)
    return finetune(finetune_options(args), progress_bar=progress_bar)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from kbert.cli_support import require_dir, use_backend

    use_backend(args.backend)  # before anything imports Keras

    require_dir(args.init, "--init model directory")  # "does not exist" before any other work
    if args.data_dir:
        require_dir(args.data_dir, "--data-dir")
    results = run(args)
    best = results["best"]
    skip = ("epoch", "train_loss", "eval_seconds", "save_seconds", "learning_rate", "batch_size", "epochs", "seed")
    if "runs" in results:
        from kbert.training.search import describe

        spread = results["spread"]
        print(f"kept run {results['selected'] + 1} of {len(results['runs'])} ({describe(best)}): "
              f"{spread['metric']} {best[spread['metric']]:.4f}; over the runs {spread['min']:.4f} to "
              f"{spread['max']:.4f}, mean {spread['mean']:.4f} +- {spread['stdev']:.4f}")
    shown = ", ".join(f"{k} {v:.4f}" for k, v in best.items() if k not in skip)
    print(f"best epoch {results['best_epoch']}: {shown}")
    print(f"model directory: {results['model_dir']}  (metrics: eval_results.json, "
          f"predictions: {', '.join(pathlib.Path(p).name for p in results['predictions'])})")
    print(f"TensorBoard: tensorboard --logdir {pathlib.Path(results['model_dir']) / 'logs'}")
    from kbert.explore.curves import report_curves

    print(f"loss/accuracy curves: {report_curves(pathlib.Path(results['model_dir']) / 'logs')}")
    return 0
