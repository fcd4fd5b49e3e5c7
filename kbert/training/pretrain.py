"""Pre-training as a library function: ``pretrain(PretrainOptions(...)) -> results``.

BERT pre-training (masked LM + next sentence prediction) with model.fit over TFRecords written by
``pipelines.pretraining_data``; or, with ``objective="ltr"``, a left-to-right language model
(``kbert.BertLMPretrainer``: causal encoder, next-token prediction, no NSP; the paper's Table 5
"LTR & No NSP") over the same records, packed the same way and not masked. Running the same options again after a crash or SIGTERM resumes
from the last checkpoint in ``model_dir`` (weights, optimizer state, step).

The backend is the process's Keras backend. Under TensorFlow the batch is spread by a
tf.distribute strategy (``strategy`` / ``tpu``). Under JAX the records are still read, masked and
batched by tf.data on the host, and ``keras.distribution.DataParallel`` spreads each batch over
every local device, and over several processes when the options name a coordinator (or ``tpu`` on
a Cloud TPU VM; kbert.training.devices).

Failures a user acts on are raised: DataError / CorruptRecordError (damaged data, after the
steps done so far are checkpointed), TrainingDiverged, CheckpointWriteError,
CheckpointRestoreError, OptionsError; a SIGTERM stop raises TrainingStopped after its checkpoint.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time
from collections.abc import Callable

from kbert.errors import DataError, OptionsError, TrainingStopped
from kbert.options import PRECISIONS, option
from kbert.api_export import kbert_export

EVAL_SEED = 0  # the held-out masks' seed
PRESET_NAMES = ("tiny", "mini", "small", "medium", "base", "large")
OBJECTIVES = ("mlm", "ltr")
# The masked-LM recipe's options, which a left-to-right model has no use for.
MASKING_OPTIONS = ("max_predictions", "mask_rate", "mask_token_rate", "random_token_rate", "whole_word_masking")


@kbert_export("kbert.PretrainOptions")
@dataclasses.dataclass
class PretrainOptions:
    """The options of a pre-training run (``kbert pretrain`` has one flag per field).

    The fields not listed below (precision, XLA, checkpoints, seeds, strategies and devices) are
    documented by their flags: ``kbert pretrain --help``.

    Attributes:
        train_data: a glob of the TFRecords ``pipelines.pretraining_data`` writes.
        model_dir: where checkpoints, TensorBoard logs and the final model directory go.
        config: a preset name (``kbert.PRESETS``) or a ``bert_config.json``.
        vocab: the tokenizer's file (``vocab.txt`` for WordPiece), or ``tokenizer_dir``: a model
            directory whose tokenizer to use; ``cased`` and ``tokenizer`` (its type) refine it.
        seq_length: tokens per sequence; ``max_predictions``, ``mask_rate``, ``mask_token_rate``,
            ``random_token_rate``, ``whole_word_masking``, ``no_nsp``: the masked-LM recipe.
        objective: ``"mlm"`` (BERT's masked LM, with NSP unless ``no_nsp``) or ``"ltr"``: a
            left-to-right language model (causal encoder, next-token loss over every real
            position, no NSP; the masking options must keep their defaults).
        batch_size: the global batch; ``steps``, ``learning_rate``, ``warmup_steps``,
            ``weight_decay``, ``optimizer``, ``clip_norm``: the optimisation.
        eval_data: held-out TFRecords, evaluated ``eval_steps`` batches at the end.

    Examples:
        >>> import kbert
        >>> options = kbert.PretrainOptions(train_data="runs/records/*.tfrecord", model_dir="runs/pretrain",
        ...                                 config="tiny", vocab="runs/tiny/vocab.txt", steps=10)
        >>> options.seq_length, options.batch_size
        (128, 32)
    """

    train_data: str = option(help="glob of TFRecords from pipelines.pretraining_data")
    model_dir: str = option(help="checkpoints, TensorBoard logs and the final model directory")
    config: str = option("base", help="preset name or bert_config.json")
    vocab: str | None = option(None, help="the tokenizer's file (vocab.txt for WordPiece)")
    cased: bool = option(False, help="cased vocabulary (no lower-casing)")
    tokenizer: str | None = option(None, help="tokenizer type (default: wordpiece, or tokenizer_dir's)")
    tokenizer_dir: str | None = option(None, help="a model directory whose tokenizer to use instead of vocab")
    eval_data: str | None = option(None, help="glob of held-out TFRecords")
    skip_bad_records: bool = option(False, help="skip a damaged TFRecord file from its first bad record on")
    eval_steps: int = option(20, help="held-out batches evaluated at the end")
    seq_length: int = option(128, help="tokens per sequence")
    max_predictions: int = option(20, help="masked positions per sequence")
    mask_rate: float = option(0.15, help="share of tokens selected")
    mask_token_rate: float = option(0.8, help="share of the selected replaced by [MASK]")
    random_token_rate: float = option(0.1, help="share of the selected replaced by a random token")
    whole_word_masking: bool = option(False, help="mask whole words")
    no_nsp: bool = option(False, help="masked LM only (the paper's No-NSP ablation)")
    objective: str = option("mlm", help="mlm (BERT's masked LM) or ltr (a left-to-right LM: causal encoder, "
                                        "next-token loss, no NSP; the paper's 'LTR & No NSP')")
    batch_size: int = option(32, help="global batch size")
    steps: int = option(1000, help="optimizer steps")
    learning_rate: float = option(1e-4, help="peak learning rate")
    warmup_steps: int | None = option(None, type=int, help="default: 1% of steps")
    weight_decay: float = option(0.01, help="AdamW weight decay")
    optimizer: str = option("adamw", help="adamw or lamb")
    clip_norm: float = option(1.0, help="global gradient norm clip")
    mixed_precision: str = option("float32", help="float32, mixed_bfloat16 or mixed_float16")
    attention: str = option("auto", help="auto (the fastest faithful attention on the device: cuDNN flash attention under --backend jax on NVIDIA GPUs), plain or fused; any reads the same model directories")
    jit_compile: bool = option(False, help="XLA-compile the TensorFlow step (JAX always compiles)")
    steps_per_execution: int = option(1, help="steps per compiled call")
    checkpoint_every: int = option(500, help="steps between checkpoints")
    init_checkpoint: str | None = option(None, help="a kbert model directory to start from")
    seed: int | None = option(None, type=int, help="seed of the data order, masks and initialisation")
    strategy: str = option("auto", help="TensorFlow: auto, one_device, mirrored, multi_worker or tpu")
    tpu: str | None = option(None, help="TensorFlow: TPU name or grpc:// address (TPUStrategy); "
                                        "JAX: join the hosts of a Cloud TPU VM (any value)")
    coordinator_address: str | None = option(None, help="JAX over several processes: host:port of process 0")
    num_processes: int | None = option(None, type=int, help="JAX: number of processes of the run")
    process_id: int | None = option(None, type=int, help="JAX: this process's id, 0 .. N-1")


def build_config(options: PretrainOptions, vocab_size: int):
    from kbert.config import BertConfig

    config = BertConfig.from_name_or_path(options.config)
    if config.vocab_size != vocab_size:
        if options.config in PRESET_NAMES:
            config = BertConfig(**{**config.to_dict(), "vocab_size": vocab_size})
        else:
            raise OptionsError(f"{options.config} says vocab_size={config.vocab_size} but the tokenizer "
                               f"({options.vocab or options.tokenizer_dir}) has {vocab_size} tokens")
    if options.seq_length > config.max_position_embeddings:
        raise OptionsError(f"--seq-length {options.seq_length} exceeds max_position_embeddings "
                           f"{config.max_position_embeddings}")
    return config


def check_attention_and_precision(options) -> None:
    """OptionsError unless ``options.attention`` and ``options.mixed_precision`` name a choice."""
    from kbert.layers.accel import ATTENTION_IMPLS

    if options.attention not in ATTENTION_IMPLS:
        raise OptionsError(f"--attention {options.attention!r}; expected one of {', '.join(ATTENTION_IMPLS)}")
    if options.mixed_precision not in PRECISIONS:
        raise OptionsError(f"--mixed-precision {options.mixed_precision!r}; expected one of {', '.join(PRECISIONS)}")


def check_objective(options: PretrainOptions) -> None:
    """OptionsError unless ``options.objective`` is one of OBJECTIVES, or when ``"ltr"`` comes with a
    masking option other than its default (a left-to-right model masks nothing: refused rather than
    silently ignored)."""
    if options.objective not in OBJECTIVES:
        raise OptionsError(f"--objective {options.objective!r}; expected one of {', '.join(OBJECTIVES)}",
                           option="objective", value=options.objective)
    if options.objective == "ltr":
        defaults = {f.name: f.default for f in dataclasses.fields(PretrainOptions)}
        changed = [name for name in MASKING_OPTIONS if getattr(options, name) != defaults[name]]
        if changed:
            flags = ", ".join("--" + name.replace("_", "-") for name in changed)
            raise OptionsError(f"--objective ltr masks nothing (it predicts every next token), so {flags} "
                               "does not apply; leave it at its default", option=changed[0],
                               value=getattr(options, changed[0]))


def uses_nsp(options: PretrainOptions) -> bool:
    """Whether the run trains next-sentence prediction: ``mlm`` without ``no_nsp``."""
    return options.objective == "mlm" and not options.no_nsp


def check_options(options: PretrainOptions, backend: str) -> None:
    for name in ("train_data", "model_dir"):
        if not getattr(options, name):
            raise OptionsError(f"--{name.replace('_', '-')} is required")
    if not options.vocab and not options.tokenizer_dir:
        raise OptionsError("--vocab or --tokenizer-dir is required (the tokenizer)")
    check_attention_and_precision(options)
    check_objective(options)
    if options.optimizer not in ("adamw", "lamb"):
        raise OptionsError(f"--optimizer {options.optimizer!r}; expected adamw or lamb")
    if backend != "tensorflow" and options.strategy != "auto":
        raise OptionsError(f"--strategy {options.strategy} is a TensorFlow strategy; under {backend} the batch is "
                           "spread over every device (keras.distribution.DataParallel)")
    if backend == "tensorflow" and (options.coordinator_address or options.num_processes):
        raise OptionsError("--coordinator-address and --num-processes are for --backend jax (TensorFlow reads "
                           "its workers from TF_CONFIG: --strategy multi_worker)")


def build_pretrainer(options: PretrainOptions, config, replicas=None) -> tuple:
    """``(encoder, pretrainer, optimizer)`` as ``pretrain`` trains them: the encoder (new from
    ``config``, or ``options.init_checkpoint``'s with its heads) with ``options.attention`` (causal
    for ``objective="ltr"``), the pre-training heads and loss (``BertLMPretrainer`` for ``"ltr"``), the optimizer and its schedule, compiled with
    ``options.steps_per_execution`` and built by a symbolic call on the batches' shapes. Imports no
    TensorFlow under JAX (the accelerator bench builds its model here, as the command does)."""
    import keras

    from kbert.models import BertEncoder
    from kbert.models.lm_pretrainer import BertLMPretrainer
    from kbert.models.pretrainer import BertPretrainer
    from kbert.training.optimization import create_optimizer

    causal = options.objective == "ltr"
    if options.init_checkpoint:
        from kbert.model_dir import load_encoder, load_heads

        encoder = load_encoder(options.init_checkpoint, attention=options.attention, causal=causal)
        heads = load_heads(options.init_checkpoint, encoder.config)
    else:
        encoder, heads = BertEncoder(config, attention_impl=options.attention, causal=causal), {}
    if causal:
        pretrainer = BertLMPretrainer(encoder, heads.get("mlm"), replicas=replicas)
    else:
        pretrainer = BertPretrainer(encoder, heads.get("mlm"), heads.get("nsp"), use_nsp=uses_nsp(options),
                                    replicas=replicas)
    warmup = options.warmup_steps if options.warmup_steps is not None else options.steps // 100
    optimizer = create_optimizer(options.learning_rate, options.steps, warmup, options.weight_decay,
                                 options.optimizer, options.clip_norm)
    backend = keras.backend.backend()
    pretrainer.compile(optimizer=optimizer, jit_compile=options.jit_compile if backend == "tensorflow" else "auto",
                       steps_per_execution=options.steps_per_execution)
    # Build by a symbolic call on the batches' shapes: no data read (nor a second tf.data pipeline
    # traced), and no op run. An eager call on zeros built the same weights, but under JAX each of its
    # ~180 ops was compiled on its own, most of a small model's start (docs/bench/code-notes).
    names = ("input_word_ids", "input_mask", "input_type_ids") + (() if causal else ("masked_lm_positions",))
    pretrainer({name: keras.KerasTensor([1, options.max_predictions if name == "masked_lm_positions"
                                         else options.seq_length], "int32") for name in names})
    optimizer.build(pretrainer.trainable_variables)
    return encoder, pretrainer, optimizer


@dataclasses.dataclass
class Placement:
    """Where a run's replicas are: the TensorFlow strategy (None under JAX), the number of replicas,
    the scope the model is built in, the model's strategy helpers and whether it runs on a TPU."""

    strategy: object
    replicas: int
    scope: Callable
    replica_helpers: object
    on_tpu: bool


def place(options: PretrainOptions, backend: str) -> Placement:
    """The run's devices: a tf.distribute strategy under TensorFlow (``strategy``, ``tpu``), every
    local device (and the other processes) under JAX (kbert.training.devices)."""
    if backend == "tensorflow":
        import tensorflow as tf

        from kbert.training.distribute import StrategyReplicas, resolve_strategy

        strategy = resolve_strategy(options.strategy, options.tpu)
        return Placement(strategy, strategy.num_replicas_in_sync, strategy.scope, StrategyReplicas(),
                         isinstance(strategy, tf.distribute.TPUStrategy))
    import contextlib

    from kbert.training.devices import setup_devices

    devices = setup_devices(global_batch_size=options.batch_size, coordinator_address=options.coordinator_address,
                            num_processes=options.num_processes, process_id=options.process_id, tpu=options.tpu)
    if devices.processes > 1 and options.seed is None:
        raise OptionsError(f"--seed is required when {devices.processes} processes train together: each "
                           "creates the initial weights and the data order, which must be the same in all",
                           option="seed")
    return Placement(None, devices.count, contextlib.nullcontext, None, bool(options.tpu))


@dataclasses.dataclass
class TextPipeline:
    """The text side of a run: the tokenizer, the model's config (its vocabulary size), the
    preprocessor (tokenizer + packer) and the masked-LM masker (None for a left-to-right model)."""

    tokenizer: object
    config: object
    preprocessor: object
    masker: object


def text_pipeline(options: PretrainOptions) -> TextPipeline:
    from kbert.text import BertPreprocessor
    from kbert.text.masking import MlmMasker
    from kbert.text.registry import create_tokenizer, tokenizer_spec_for

    # Any type: one with a Python step (the mecab-* types' MeCab split) runs it in the tf.data map.
    tokenizer = create_tokenizer(*tokenizer_spec_for(options.vocab, cased=options.cased, tokenizer_type=options.tokenizer,
                                                     directory=options.tokenizer_dir, directory_flag="--tokenizer-dir"))
    config = build_config(options, tokenizer.vocab_size)
    masker = None if options.objective == "ltr" else MlmMasker.from_tokenizer(
        tokenizer, max_predictions=options.max_predictions, selection_rate=options.mask_rate,
        mask_token_rate=options.mask_token_rate, random_token_rate=options.random_token_rate,
        whole_word=options.whole_word_masking)
    return TextPipeline(tokenizer, config, BertPreprocessor(tokenizer, seq_length=options.seq_length), masker)


def train_dataset(options: PretrainOptions, placement: Placement, text: TextPipeline, bad_records):
    """The training batches: per replica from the strategy under TensorFlow; under JAX this
    process's rows of each global batch."""
    from kbert.data.pretraining import pretraining_dataset

    def dataset(batch_size, input_context=None):
        return pretraining_dataset(options.train_data, text.preprocessor, text.masker, batch_size, is_training=True,
                                   input_context=input_context, seed=options.seed, use_nsp=uses_nsp(options),
                                   skip_bad_records=options.skip_bad_records, bad_record_counter=bad_records)

    if placement.strategy is not None:
        return placement.strategy.distribute_datasets_from_function(
            lambda context: dataset(context.get_per_replica_batch_size(options.batch_size), context))
    from kbert.training.devices import process_share

    return process_share(dataset(options.batch_size))


def training_callbacks(options: PretrainOptions, state, step: int, log) -> list:
    """The run's callbacks: the checkpoint writer (first; it also handles SIGTERM), the training
    curves' scalars and one progress display for the whole run (from ``step``, where it resumes)."""
    from kbert.training.checkpoints import CheckpointCallback
    from kbert.training.progress import RunProgress
    from kbert.training.step_scalars import StepScalars

    every = min(options.checkpoint_every, options.steps)
    return [CheckpointCallback(state, log=log),
            StepScalars(pathlib.Path(options.model_dir) / "logs" / "train", every=min(10, every),
                        global_batch_size=options.batch_size),
            RunProgress(options.steps, initial_step=step)]


def train(options: PretrainOptions, pretrainer, train_ds, state, callbacks, checkpointer, step: int, log) -> int:
    """Trains from ``step`` to ``options.steps`` (or a SIGTERM) in whole checkpoint intervals;
    returns the step reached. On damaged data the steps done so far are checkpointed, then the
    error is raised."""
    from kbert.data.pretraining import CorruptRecordError, explain_data_errors

    every = min(options.checkpoint_every, options.steps)
    try:
        with explain_data_errors():
            while step < options.steps and not checkpointer.terminated:
                # After a resume from a checkpoint written off the interval (SIGTERM, damaged data),
                # the first call runs up to the next interval boundary.
                n = min(every - step % every, options.steps - step)
                if step % every == 0 and n == every:
                    # Whole checkpoint intervals as epochs: one fit call, resumable at any epoch.
                    epochs = (options.steps - step) // every
                    pretrainer.fit(train_ds, epochs=step // every + epochs, initial_epoch=step // every,
                                   steps_per_epoch=every, callbacks=callbacks, verbose=0,
                                   shuffle=False)  # tf.data shuffles
                else:
                    pretrainer.fit(train_ds, epochs=1, steps_per_epoch=n, callbacks=callbacks, verbose=0,
                                   shuffle=False)
                if state.step == step:
                    raise DataError(options.train_data, f"records for {options.steps} steps (no training step "
                                    f"ran from step {step}: the training data ran out)")
                step = state.step
    except CorruptRecordError:
        # The steps done so far are sound (the bad record never reached the model): keep them.
        if state.step and state.step != state.saved_step:
            log(f"damaged training data: checkpoint written at step {state.step}: {state.save()}", flush=True)
        raise
    return step


def evaluate(options: PretrainOptions, pretrainer, text: TextPipeline, bad_records, step: int,
             model_dir: pathlib.Path) -> dict:
    """``eval_steps`` held-out batches of ``options.eval_data``: ``{"eval_loss": ..., ...}``, also
    written as TensorBoard scalars under ``model_dir/logs/eval`` at ``step``."""
    import tensorflow as tf

    from kbert.data.pretraining import explain_data_errors, pretraining_dataset

    # Held-out masks from a fixed seed, whatever ran before in this process (training, or nothing
    # on a finished checkpoint): the same checkpoint gives the same numbers.
    tf.random.set_seed(EVAL_SEED)
    eval_ds = pretraining_dataset(options.eval_data, text.preprocessor, text.masker, options.batch_size,
                                  is_training=False, seed=0, use_nsp=uses_nsp(options),
                                  skip_bad_records=options.skip_bad_records, bad_record_counter=bad_records)
    with explain_data_errors():
        results = {f"eval_{k}": float(v) for k, v in pretrainer.evaluate(
            eval_ds.take(options.eval_steps), return_dict=True, verbose=0).items()}
    writer = tf.summary.create_file_writer(str(model_dir / "logs" / "eval"))
    with writer.as_default(step=step):
        for k, v in results.items():
            tf.summary.scalar(k[5:], v)
    return results


@kbert_export("kbert.pretrain")
def pretrain(options: PretrainOptions, *, callbacks_for: Callable | None = None, log=print) -> dict:
    """Pre-trains BERT (masked LM and next sentence) on TFRecords of raw text, with ``model.fit``.

    ``options.objective="ltr"`` trains a left-to-right language model instead (causal encoder,
    next-token loss, no NSP; metrics ``lm_loss``, ``lm_accuracy``); its model directory records
    the causal encoder in ``kbert.json``, so fine-tuning it attends left-only too.

    Checkpoints are written every ``checkpoint_every`` steps and a run resumes from the last one;
    the final model directory (encoder, heads, tokenizer) is written under ``options.model_dir``.
    The stages: ``place`` (devices), ``text_pipeline``, ``train_dataset``, ``build_pretrainer``,
    ``train``, ``evaluate``, then the model directory.

    Args:
        options: a ``kbert.PretrainOptions``.
        callbacks_for: ``callbacks_for(encoder, mlm_head, preprocessor, tokenizer) -> list``: extra
            Keras callbacks built on the run's own layers (the command's fill-mask logger).
        log: where the run's lines go (``print``).

    Returns:
        The results also written to ``model_dir/pretrain_results.json`` (losses, accuracies,
        steps, timings, the model directory).

    Examples:
        >>> import kbert
        >>> options = kbert.PretrainOptions(train_data="runs/no-records/*.tfrecord", model_dir="runs/pretrain",
        ...                                 config="tiny", vocab=str(kbert.random_model_dir("runs/tiny") / "vocab.txt"))
        >>> kbert.pretrain(options)    # the records come from ``python -m pipelines.pretraining_data``
        Traceback (most recent call last):
        ...
        FileNotFoundError: no pre-training files match runs/no-records/*.tfrecord
    """
    import keras

    from kbert.data.pretraining import BadRecordCounter, list_files
    from kbert.model_dir import save_model_dir
    from kbert.training.checkpoints import checkpoint_state

    backend = keras.backend.backend()
    check_options(options, backend)
    list_files(options.train_data)  # fail before any work when nothing matches or all files are empty
    if options.eval_data:
        list_files(options.eval_data)
    model_dir = pathlib.Path(options.model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    placement = place(options, backend)
    if options.seed is not None:
        keras.utils.set_random_seed(options.seed)
    if options.mixed_precision != "float32" or placement.on_tpu:
        keras.mixed_precision.set_dtype_policy("mixed_bfloat16" if placement.on_tpu else options.mixed_precision)
    text = text_pipeline(options)
    if options.batch_size % placement.replicas:
        raise OptionsError(f"--batch-size {options.batch_size} is not divisible by {placement.replicas} replicas",
                           option="batch_size", value=options.batch_size)
    bad_records = BadRecordCounter() if options.skip_bad_records else None  # outside strategy.scope()
    train_ds = train_dataset(options, placement, text, bad_records)
    with placement.scope():
        encoder, pretrainer, optimizer = build_pretrainer(options, text.config, replicas=placement.replica_helpers)
    state = checkpoint_state(model_dir / "checkpoints", pretrainer, optimizer, log=log)
    step = state.restore()
    if step:
        log(f"resuming from step {step} ({state.latest_checkpoint})", flush=True)
    callbacks = training_callbacks(options, state, step, log)
    checkpointer = callbacks[0]
    # The fill-mask logger shows masked-LM guesses, which a left-to-right model is not trained for.
    if callbacks_for is not None and not placement.on_tpu and options.objective == "mlm":
        callbacks += list(callbacks_for(encoder, pretrainer.mlm_head, text.preprocessor, text.tokenizer))
    start = time.time()
    step = train(options, pretrainer, train_ds, state, callbacks, checkpointer, step, log)
    if checkpointer.terminated:
        raise TrainingStopped(step, state.latest_checkpoint)
    results = {"steps": step, "train_seconds": round(time.time() - start, 1)}
    if backend != "tensorflow":
        results.update(backend=backend, devices=placement.replicas)
    if options.eval_data:
        results.update(evaluate(options, pretrainer, text, bad_records, step, model_dir))
    if bad_records is not None:
        results["skipped_bad_records"] = bad_records.count
        if bad_records.count:
            log(f"skipped {bad_records.count} damaged TFRecord region(s) (each a bad record and the rest of its "
                "file); the files are named in the log above", flush=True)
    save_model_dir(model_dir, encoder, tokenizer=text.tokenizer,
                   heads={name: (head, {"type": name}) for name, head in pretrainer.heads().items()})
    (model_dir / "pretrain_results.json").write_text(json.dumps(results, indent=2) + "\n")
    return results
