"""python -m kbert.finetune: fine-tune a BERT model directory on a task (the paper's §4).

    python -m kbert.finetune --task glue/sst2 --data-dir GLUE/SST-2 --init MODEL_DIR --model-dir OUT

AdamW with linear warmup and decay (kbert.training.optimization), model.fit with a progress bar,
evaluation on the dev split after every epoch (metrics to TensorBoard under OUT/logs and to
OUT/eval_results.json); the best epoch's model is kept in OUT as a model directory (encoder, task
head, kbert.json with the task settings: ``kbert.tasks.load_task_model(OUT)`` reloads it, the
export CLI serves it) together with its predictions in the benchmark's submission format.

Tasks (kbert.tasks.registry; a new task is a plug-in module, see README "Adding a task"):
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
import time


def parse_args(argv=None):
    from kbert.tasks.options import FinetuneOptions, add_arguments
    from kbert.tasks.registry import task_listing, task_types

    from kbert.cli_support import add_verbose_flag, prog

    p = argparse.ArgumentParser(prog=prog("finetune"), description=__doc__ + task_listing(),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_verbose_flag(p)
    add_arguments(p, FinetuneOptions)
    p.add_argument("--quiet", action="store_true", help="one line per epoch instead of a progress bar")
    for task_type in task_types():
        if dataclasses.fields(task_type.Options):
            add_arguments(p, task_type.Options, title=f"{task_type.name} options ({task_type.Options.__doc__.strip()})")
    return p.parse_args(argv)


def finetune_options(args):
    """FinetuneOptions (with the task type's options) from parsed arguments; FinetuneOptions pass
    through. The task's default seq_length is filled in."""
    from kbert.tasks.options import FinetuneOptions, from_args
    from kbert.tasks.registry import get_task

    if isinstance(args, FinetuneOptions):
        options = args
        task_type = get_task(options.task).task_type
    else:
        task_type = get_task(args.task).task_type
        options = from_args(FinetuneOptions, args, task_options=from_args(task_type.Options, args))
    return dataclasses.replace(options, seq_length=options.seq_length or task_type.default_seq_length)


def run(args) -> dict:
    import keras

    from kbert.tasks.evaluation import EpochTensorBoard, EvaluateEachEpoch
    from kbert.tasks.registry import get_task
    from kbert.training.optimization import create_optimizer
    from kbert.training.progress import RunProgress

    quiet = getattr(args, "quiet", False)
    args = finetune_options(args)
    task = get_task(args.task)
    out_dir = pathlib.Path(args.model_dir)
    if pathlib.Path(args.init).resolve() == out_dir.resolve():
        raise SystemExit("error: --model-dir must differ from --init (the best epoch is saved there)")
    keras.utils.set_random_seed(args.seed)
    recipe = task.task_type.recipe(task, args)
    overrides = {} if args.hidden_dropout is None else {"hidden_dropout_prob": args.hidden_dropout}
    model = recipe.build_model(args.init, encoder_overrides=overrides)
    prepare_start, prepare_cpu = time.time(), time.process_time()
    train_ds = recipe.train_dataset(model)
    prepare_seconds, prepare_cpu_seconds = time.time() - prepare_start, time.process_time() - prepare_cpu
    steps_per_epoch = int(train_ds.cardinality().numpy())
    total_steps = steps_per_epoch * args.epochs
    optimizer = create_optimizer(args.learning_rate, total_steps, int(args.warmup_proportion * total_steps),
                                 weight_decay=args.weight_decay)
    model.compile(optimizer)
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"{args.task}: {recipe.num_train} training examples, {recipe.num_eval} eval examples, "
          f"{steps_per_epoch} steps/epoch x {args.epochs} epochs", flush=True)
    evaluator = EvaluateEachEpoch(recipe, model, out_dir)
    # One progress line for the whole run; it ends at each epoch end so that the evaluator's
    # "epoch N: ..." line stands on its own (RunProgress comes before the evaluator).
    progress = [] if quiet else [RunProgress(total_steps, newline_at_epoch_end=True)]
    callbacks = [EpochTensorBoard(log_dir=str(out_dir / "logs"), update_freq=max(1, steps_per_epoch // 20)),
                 *progress, evaluator]
    verbose = 2 if quiet else 0  # --quiet: Keras' one line per epoch
    start, cpu_start = time.time(), time.process_time()
    history = model.fit(train_ds, epochs=args.epochs, callbacks=callbacks, verbose=verbose, shuffle=False)
    # Training time: model.fit's, less the evaluation and best-model saving done after each epoch.
    train_seconds = time.time() - start - evaluator.epoch_end_seconds
    # CPU seconds of this process (all threads): a measure of the work that other processes on a
    # shared machine do not inflate, unlike wall time.
    train_cpu_seconds = time.process_time() - cpu_start - evaluator.epoch_end_cpu_seconds
    results = {
        "task": args.task,
        "init": str(args.init),
        **recipe.summary(),
        "epochs": args.epochs, "batch_size": args.batch_size, "learning_rate": args.learning_rate,
        "seq_length": args.seq_length, "bucketing": args.bucketing, "dynamic_length": not args.fixed_length,
        "steps": total_steps,
        "prepare_seconds": round(prepare_seconds, 1),
        "prepare_cpu_seconds": round(prepare_cpu_seconds, 1),
        "train_seconds": round(train_seconds, 1),
        "train_cpu_seconds": round(train_cpu_seconds, 1),
        "train_examples_per_second": round(recipe.num_train * args.epochs / max(train_seconds, 1e-9), 1),
        "main_metric": recipe.main_metric,
        "best_epoch": evaluator.best_epoch,
        "best": evaluator.history[evaluator.best_epoch - 1],
        "history": evaluator.history,
        "train_loss": [float(v) for v in history.history.get("loss", [])],
        "predictions": evaluator.prediction_files,
        "model_dir": str(out_dir),
    }
    (out_dir / "eval_results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return results


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from kbert.cli_support import require_dir

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

    steps_per_epoch = results["steps"] // max(results["epochs"], 1)  # eval is logged at step = epoch
    print(f"loss/accuracy curves: {report_curves(pathlib.Path(results['model_dir']) / 'logs', {'eval': steps_per_epoch})}")
    return 0


if __name__ == "__main__":
    from kbert.cli_support import run as run_cli

    # A bad input file (DataError: the message names file, line and field) is one line, exit 1.
    sys.exit(run_cli("finetune", main))
