"""Fine-tuning as a library function: ``finetune(FinetuneOptions(...)) -> results``.

AdamW with linear warmup and decay (kbert.training.optimization), model.fit, evaluation on the
dev split after every epoch (metrics to TensorBoard under ``model_dir/logs`` and to
``model_dir/eval_results.json``); the best epoch's model is kept in ``model_dir`` as a model
directory together with its predictions in the benchmark's submission format.

The backend is the process's Keras backend. Under TensorFlow the task model tokenizes inside its
graph. Under JAX the same tokenizer and packer layers run in tf.data on the host and the model
gets int ids (kbert.tasks.core.base.TaskModel.fit); the batch is spread over every local device, and
over several processes when the options name a coordinator (kbert.training.devices).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time

from kbert.errors import OptionsError
from kbert.tasks.core.options import FinetuneOptions
from kbert.api_export import kbert_export


def resolve_options(options: FinetuneOptions) -> FinetuneOptions:
    """``options`` with the task's defaults filled in (seq_length, and doc_stride where the run reads
    windows) and checked against the task (its type's and its own options classes, the backends it
    runs on, the windows it can read): an OptionsError naming the option for one that cannot apply."""
    import keras

    from kbert.tasks.core.registry import get_task

    task = get_task(options.task)
    task_type = task.task_type
    task_type.options(options.task_options)  # an OptionsError naming both classes when they do not fit
    task.named_options(options.named_options)
    backend = keras.backend.backend()
    if backend not in task_type.backends:
        raise OptionsError(f"task {options.task!r} (task type {task_type.name!r}) cannot be fine-tuned under the "
                           f"{backend} backend yet; it runs under {', '.join(task_type.backends)}")
    if backend == "tensorflow" and (options.tpu or options.coordinator_address or options.num_processes):
        raise OptionsError("--tpu, --coordinator-address and --num-processes are for --backend jax: fine-tuning "
                           "under TensorFlow runs on one device")
    if pathlib.Path(options.init).resolve() == pathlib.Path(options.model_dir).resolve():
        raise OptionsError("--model-dir must differ from --init (the best epoch is saved there)")
    options = dataclasses.replace(options, seq_length=options.seq_length or task_type.default_seq_length)
    check_windows(task, options)
    check_sequence_options(task, options)
    return dataclasses.replace(options, doc_stride=task_type.doc_stride(options))


def check_windows(task, options: FinetuneOptions) -> None:
    """--long-documents and --doc-stride against the task and --seq-length (OptionsError): a mode
    the task's models cannot take, a stride where the run reads no windows, a stride not below
    --seq-length."""
    from kbert.tasks.core.windows import check_long_documents

    def check(doc_stride):
        try:
            check_long_documents(options.long_documents, doc_stride, options.seq_length)
        except ValueError as e:
            option = "long_documents" if str(e).startswith("--long-documents") else "doc_stride"
            raise OptionsError(str(e), option=option, value=getattr(options, option)) from None

    check(None)  # the mode itself first
    taken = task.long_documents
    if options.long_documents not in taken:
        raise OptionsError(f"--long-documents {options.long_documents}: task {options.task!r} (task type "
                           f"{task.type!r}) cannot combine windows into one answer; it takes {', '.join(taken)}",
                           option="long_documents", value=options.long_documents)
    if options.doc_stride is not None and not task.task_type.reads_windows(options.long_documents):
        how = ("under --long-documents truncate (add --long-documents windows)" if "windows" in taken
               else "(it reads whole texts only)")
        raise OptionsError(f"--doc-stride {options.doc_stride}: task {options.task!r} reads no windows {how}",
                           option="doc_stride", value=options.doc_stride)
    check(options.doc_stride)


def check_sequence_options(task, options: FinetuneOptions) -> None:
    """--bilstm and --features against the task (OptionsError): a layer between encoder and head that
    its task type's models do not take (``TaskType.sequence_options``), a --features name that is not
    one of ``kbert.features.COMBINATIONS``."""
    from kbert.models.layer_combinations import COMBINATIONS

    for name in ("bilstm", "features"):
        value = getattr(options, name)
        if value and name not in task.task_type.sequence_options:
            what = {"bilstm": "a BiLSTM between its encoder and its output layer (classification, tagging, "
                              "span_qa do)",
                    "features": "the feature-based approach (tagging only)"}[name]
            raise OptionsError(f"--{name} {value}: task {options.task!r} (task type {task.type!r}) does not take "
                               f"{what}", option=name, value=value)
    if options.features is not None and options.features not in COMBINATIONS:
        raise OptionsError(f"--features {options.features}: expected one of {', '.join(COMBINATIONS)}",
                           option="features", value=options.features)


@kbert_export("kbert.finetune")
def finetune(options: FinetuneOptions, *, progress_bar: bool = True, log=print) -> dict:
    """Fine-tunes ``options.init`` on ``options.task`` with ``model.fit`` and keeps the best epoch.

    Every epoch is evaluated with the task's metric; the best epoch's model directory, its
    predictions and ``eval_results.json`` are written to ``options.model_dir``. Errors are raised
    (``kbert.OptionsError``, ``kbert.DataError``, ...), never an exit.

    Args:
        options: a ``kbert.FinetuneOptions``.
        progress_bar: False prints Keras' one line per epoch instead of the progress display.
        log: where the run's lines go (``print``).

    Returns:
        The results also written to ``model_dir/eval_results.json``: the best epoch's metrics,
        the task, the number of examples, timings.

    Examples:
        >>> import contextlib, io, pathlib
        >>> import kbert
        >>> model_dir = kbert.random_model_dir("runs/tiny")
        >>> _ = pathlib.Path("runs/reviews.csv").write_text(
        ...     "text,label\\n" + "a good movie,positive\\na bad movie,negative\\n" * 4)
        >>> options = kbert.FinetuneOptions(
        ...     task="csv", init=str(model_dir), model_dir="runs/reviews", train_file="runs/reviews.csv",
        ...     eval_file="runs/reviews.csv", epochs=1, batch_size=4, seq_length=16,
        ...     task_options=kbert.TableOptions(text_columns=("text",)))
        >>> with contextlib.redirect_stdout(io.StringIO()):   # the run's progress lines
        ...     results = kbert.finetune(options, progress_bar=False)
        >>> type(kbert.load_task_model("runs/reviews")).__name__, "accuracy" in str(results)
        ('TextClassifier', True)
    """
    import keras

    from kbert.tasks.core.registry import get_task

    options = resolve_options(options)
    task = get_task(options.task)
    out_dir = pathlib.Path(options.model_dir)
    backend = keras.backend.backend()
    devices = None
    if backend == "jax":
        from kbert.training.devices import setup_devices

        devices = setup_devices(global_batch_size=options.batch_size, coordinator_address=options.coordinator_address,
                                num_processes=options.num_processes, process_id=options.process_id, tpu=options.tpu)
    keras.utils.set_random_seed(options.seed)
    policy = keras.config.dtype_policy()
    if options.mixed_precision != "float32":
        keras.config.set_dtype_policy(options.mixed_precision)
    try:
        return _finetune(options, task, out_dir, backend, devices, progress_bar, log)
    finally:
        keras.config.set_dtype_policy(policy)  # the process's policy as it was, for what runs next


def _finetune(options, task, out_dir, backend, devices, progress_bar, log) -> dict:
    from kbert.tasks.core.evaluation import EvaluateEachEpoch
    from kbert.training.optimization import create_optimizer
    from kbert.training.progress import RunProgress
    from kbert.training.step_scalars import StepScalars

    recipe = task.task_type.recipe(task, options)
    overrides = {} if options.hidden_dropout is None else {"hidden_dropout_prob": options.hidden_dropout}
    model = recipe.build_model(options.init, encoder_overrides=overrides)
    prepare_start, prepare_cpu = time.time(), time.process_time()
    train_ds = recipe.train_dataset(model)
    prepare_seconds, prepare_cpu_seconds = time.time() - prepare_start, time.process_time() - prepare_cpu
    steps_per_epoch = int(train_ds.cardinality().numpy())
    total_steps = steps_per_epoch * options.epochs
    optimizer = create_optimizer(options.learning_rate, total_steps, int(options.warmup_proportion * total_steps),
                                 weight_decay=options.weight_decay)
    model.compile(optimizer)
    out_dir.mkdir(parents=True, exist_ok=True)
    where = "" if devices is None else f" on {devices.count} {backend} device(s)"
    log(f"{options.task}: {recipe.num_train} training examples, {recipe.num_eval} eval examples, "
        f"{steps_per_epoch} steps/epoch x {options.epochs} epochs{where}", flush=True)
    for line in (*recipe.data_notes, *getattr(recipe, "long_document_notes", ())):  # rows left out; texts cut
        log(line, flush=True)
    evaluator = EvaluateEachEpoch(recipe, model, out_dir, log=log)
    # One progress line for the whole run; it ends at each epoch end so that the evaluator's
    # "epoch N: ..." line stands on its own (RunProgress comes before the evaluator).
    progress = [RunProgress(total_steps, newline_at_epoch_end=True)] if progress_bar else []
    # Curves on the optimizer's step axis (the evaluation too): the mean over each twentieth of an
    # epoch, and each epoch's mean as its own series. The scalars come first: the evaluator reuses
    # nothing of the training's metrics, but runs after the epoch's means are read.
    callbacks = [StepScalars(out_dir / "logs" / "train", every=max(1, steps_per_epoch // 20),
                             global_batch_size=options.batch_size, epoch_means=True),
                 *progress, evaluator]
    verbose = 0 if progress_bar else 2  # Keras' one line per epoch
    start, cpu_start = time.time(), time.process_time()
    history = model.fit(train_ds, epochs=options.epochs, callbacks=callbacks, verbose=verbose, shuffle=False)
    # Training time: model.fit's, less the evaluation and best-model saving done after each epoch.
    train_seconds = time.time() - start - evaluator.epoch_end_seconds
    # CPU seconds of this process (all threads): a measure of the work that other processes on a
    # shared machine do not inflate, unlike wall time.
    train_cpu_seconds = time.process_time() - cpu_start - evaluator.epoch_end_cpu_seconds
    results = {
        "task": options.task,
        "init": str(options.init),
        **recipe.summary(),
        "epochs": options.epochs, "batch_size": options.batch_size, "learning_rate": options.learning_rate,
        "seq_length": options.seq_length, "bucketing": options.bucketing, "dynamic_length": not options.fixed_length,
        "attention": options.attention, "mixed_precision": options.mixed_precision,
        "steps": total_steps,
        "prepare_seconds": round(prepare_seconds, 1),
        "prepare_cpu_seconds": round(prepare_cpu_seconds, 1),
        "train_seconds": round(train_seconds, 1),
        "train_cpu_seconds": round(train_cpu_seconds, 1),
        "train_examples_per_second": round(recipe.num_train * options.epochs / max(train_seconds, 1e-9), 1),
        "main_metric": recipe.main_metric,
        "best_epoch": evaluator.best_epoch,
        "best": evaluator.history[evaluator.best_epoch - 1],
        "history": evaluator.history,
        "train_loss": [float(v) for v in history.history.get("loss", [])],
        "predictions": evaluator.prediction_files,
        "model_dir": str(out_dir),
    }
    if backend != "tensorflow":
        results.update(backend=backend, devices=devices.count, processes=devices.processes)
    # The layers between encoder and head, where set (the paper's Table 5 "+ BiLSTM", Table 7's features).
    results.update({k: getattr(model, a) for k, a in (("bilstm", "bilstm"), ("features", "combination"))
                    if getattr(model, a, None)})
    from kbert.model_metadata import atomic_write

    # Whole or absent: a search (kbert.training.search) takes a run with this file as finished.
    text = json.dumps(results, indent=2) + "\n"
    atomic_write(out_dir / "eval_results.json", lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return results
