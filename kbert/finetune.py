"""python -m kbert.finetune: fine-tune a BERT model directory on a task (the paper's §4).

    python -m kbert.finetune --task glue/sst2 --data-dir GLUE/SST-2 --init MODEL_DIR --model-dir OUT

AdamW with linear warmup and decay (kbert.training.optimization), model.fit with a progress bar,
evaluation on the dev split after every epoch (metrics to TensorBoard under OUT/logs and to
OUT/eval_results.json); the best epoch's model is kept in OUT as a model directory (encoder, task
head, kbert.json with the task settings: ``kbert.tasks.load_task_model(OUT)`` reloads it, the
export CLI serves it) together with its predictions in the benchmark's submission format.

Tasks: glue/<cola|sst2|mrpc|stsb|qqp|mnli|qnli|rte|wnli>, squad/v1.1, squad/v2.0, conll2003, swag,
csv (a CSV/TSV/JSONL file: --train-file, --eval-file, --text-columns, --label-column).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time


def parse_args(argv=None):
    from kbert.cli_support import add_verbose_flag, prog

    p = argparse.ArgumentParser(prog=prog("finetune"), description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_verbose_flag(p)
    p.add_argument("--task", required=True, help="glue/<task>, squad/v1.1, squad/v2.0, conll2003, swag or csv")
    p.add_argument("--data-dir", help="the task's folder (GLUE: the task folder or the GLUE root)")
    p.add_argument("--init", required=True, help="model directory to start from (kbert.convert output)")
    p.add_argument("--model-dir", required=True, help="output: model directory, metrics, predictions, logs")
    p.add_argument("--train-file", help="training file (instead of the task's file in --data-dir)")
    p.add_argument("--eval-file", help="evaluation file (instead of the task's file in --data-dir)")
    p.add_argument("--eval-split", help="split to evaluate on (default dev; MNLI dev_matched)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--eval-batch-size", type=int, default=64)
    p.add_argument("--learning-rate", type=float, default=5e-5)
    p.add_argument("--warmup-proportion", type=float, default=0.1, help="share of the steps spent warming up")
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--seq-length", type=int, default=None, help="default 128 (SQuAD 384)")
    p.add_argument("--max-train-examples", type=int, help="train on this many examples (random, --seed)")
    p.add_argument("--max-eval-examples", type=int, help="evaluate on this many examples (random, --seed)")
    p.add_argument("--no-bucketing", dest="bucketing", action="store_false",
                   help="random batches instead of batches grouped by length")
    p.add_argument("--fixed-length", action="store_true",
                   help="always pad to --seq-length (no per-batch trimming; e.g. for XLA/TPU)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hidden-dropout", type=float, help="override the encoder's hidden_dropout_prob")
    p.add_argument("--quiet", action="store_true", help="one line per epoch instead of a progress bar")
    g = p.add_argument_group("csv tasks")
    g.add_argument("--text-columns", help="one or two column names, comma-separated")
    g.add_argument("--label-column", default="label")
    g.add_argument("--label-names", help="comma-separated label vocabulary (default: the training file's)")
    g.add_argument("--regression", action="store_true", help="the label is a number")
    g = p.add_argument_group("SQuAD")
    g.add_argument("--train-articles", help="START:END slice of the training file's articles, e.g. :36")
    g.add_argument("--eval-articles", help="START:END slice of the evaluation file's articles, e.g. 36:")
    g.add_argument("--doc-stride", type=int, default=128)
    g.add_argument("--max-query-length", type=int, default=64)
    g.add_argument("--n-best-size", type=int, default=20)
    g.add_argument("--max-answer-length", type=int, default=30)
    g.add_argument("--null-score-diff-threshold", type=float, default=0.0)
    args = p.parse_args(argv)
    if args.seq_length is None:
        args.seq_length = 384 if args.task.lower().startswith("squad") else 128
    return args


def run(args) -> dict:
    import keras

    from kbert.tasks.evaluation import EvaluateEachEpoch
    from kbert.tasks.recipes import recipe_for
    from kbert.training.optimization import create_optimizer
    from kbert.training.progress import RunProgress

    out_dir = pathlib.Path(args.model_dir)
    if pathlib.Path(args.init).resolve() == out_dir.resolve():
        raise SystemExit("error: --model-dir must differ from --init (the best epoch is saved there)")
    keras.utils.set_random_seed(args.seed)
    recipe = recipe_for(args)
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
    progress = [] if args.quiet else [RunProgress(total_steps, newline_at_epoch_end=True)]
    callbacks = [keras.callbacks.TensorBoard(log_dir=str(out_dir / "logs"), update_freq=max(1, steps_per_epoch // 20)),
                 *progress, evaluator]
    verbose = 2 if args.quiet else 0  # --quiet: Keras' one line per epoch
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
    return 0


if __name__ == "__main__":
    from kbert.cli_support import run as run_cli

    # A bad input file (DataError: the message names file, line and field) is one line, exit 1.
    sys.exit(run_cli("finetune", main))
