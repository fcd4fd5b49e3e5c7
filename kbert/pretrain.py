"""python -m kbert.pretrain: BERT pre-training (masked LM + next sentence prediction) with model.fit.

With no arguments it runs the built-in demo: from the small public-domain corpus shipped in
``kbert/resources/corpus`` it learns a vocab, writes pre-training TFRecords (Beam), pre-trains
BERT-Tiny for a few minutes on the CPU, and exports the encoder and preprocessor to
``saved_models/``. ``--demo ja [--tokenizer TYPE]`` is the Japanese main job (``kbert.pretrain_demo_ja``).

Re-running the same command after a crash resumes from the last checkpoint in ``--model-dir``
(weights, optimizer state, step).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

DEMO_DIR = pathlib.Path("runs/pretrain_demo")
EVAL_SEED = 0  # the held-out masks' seed


def parse_args(argv=None):
    from kbert.cli_support import add_verbose_flag, prog
    from kbert.text.cli_args import add_tokenizer_arguments

    p = argparse.ArgumentParser(prog=prog("pretrain"), description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_verbose_flag(p)
    p.add_argument("--tpu", default=None, help="TPU name or grpc:// address (selects TPUStrategy)")
    p.add_argument("--strategy", default="auto", choices=("auto", "one_device", "mirrored", "multi_worker", "tpu"))
    p.add_argument("--config", default="base", help="preset name or bert_config.json")
    add_tokenizer_arguments(p, dir_flag="--tokenizer-dir")  # --vocab, --cased, --tokenizer TYPE
    p.add_argument("--train-data", help="glob of TFRecords from pipelines.pretraining_data")
    p.add_argument("--eval-data", help="glob of held-out TFRecords")
    p.add_argument("--skip-bad-records", action="store_true",
                   help="skip a damaged TFRecord file from its first bad record on (logged and counted) "
                        "instead of stopping with an error that names the file and offset")
    p.add_argument("--eval-steps", type=int, default=20)
    p.add_argument("--seq-length", type=int, default=128)
    p.add_argument("--max-predictions", type=int, default=20)
    p.add_argument("--mask-rate", type=float, default=0.15, help="share of tokens selected")
    p.add_argument("--mask-token-rate", type=float, default=0.8)
    p.add_argument("--random-token-rate", type=float, default=0.1)
    p.add_argument("--whole-word-masking", action="store_true",
                   help="mask whole words: the tokenizer's (MeCab words for mecab-*; WordPiece: a token and its "
                        "## pieces; sentencepiece: from a piece with the word mark to the next)")
    p.add_argument("--no-nsp", action="store_true", help="masked LM only (the paper's No-NSP ablation)")
    p.add_argument("--batch-size", type=int, default=32, help="global batch size")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--learning-rate", type=float, default=1e-4)
    p.add_argument("--warmup-steps", type=int, default=None, help="default: 1%% of --steps")
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--optimizer", choices=("adamw", "lamb"), default="adamw")
    p.add_argument("--clip-norm", type=float, default=1.0)
    p.add_argument("--mixed-precision", choices=("float32", "mixed_bfloat16", "mixed_float16"), default="float32")
    p.add_argument("--jit-compile", action="store_true")
    p.add_argument("--steps-per-execution", type=int, default=1)
    p.add_argument("--checkpoint-every", type=int, default=500, help="steps between checkpoints")
    p.add_argument("--model-dir", help="checkpoints, TensorBoard logs and the final model directory")
    p.add_argument("--init-checkpoint", help="a kbert model directory to start from")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--export", action="store_true", help="also export encoder + preprocessor SavedModels")
    p.add_argument("--fill-mask-every", type=int, default=100,
                   help="log the MLM's guesses for a few --eval-data sentences to TensorBoard every N steps (0: off)")
    return p.parse_args(argv)


# -- demo -----------------------------------------------------------------------------------------
def demo_corpus_dir() -> pathlib.Path:
    """The public-domain corpus shipped inside the package (``kbert/resources/corpus``)."""
    corpus = pathlib.Path(__file__).parent / "resources" / "corpus"
    if not list(corpus.glob("*.txt")):
        raise FileNotFoundError(f"the demo corpus is missing from the installed package: no *.txt in {corpus} "
                                "(reinstall kbert; its wheel ships kbert/resources/corpus)")
    return corpus


def demo_args():
    """The built-in default: tiny BERT on the shipped corpus, a few minutes on 2 CPU cores."""
    from kbert.text.vocab_learning import learn_vocab, write_vocab

    corpus = demo_corpus_dir()
    # KBERT_DEMO_STEPS shortens the demo (the README-commands test runs it with a few steps).
    steps = int(os.environ.get("KBERT_DEMO_STEPS", "1000"))
    data = DEMO_DIR / "data"
    data.mkdir(parents=True, exist_ok=True)
    vocab = data / "vocab.txt"
    if not vocab.exists():
        print(f"[1/4] learning a WordPiece vocab from {corpus}", flush=True)
        write_vocab(learn_vocab([str(corpus / "*.txt")], 8000), vocab)
    else:
        print(f"[1/4] vocab: {vocab} (already learned)")
    train = data / "train"
    if not list(data.glob("train-*.tfrecord")):
        print("[2/4] writing pre-training TFRecords (Apache Beam, DirectRunner)", flush=True)
        from pipelines.pretraining_data import run

        # Persuasion is held out for evaluation.
        run(["--input", str(corpus / "[np]*.txt"), "--output", str(train), "--vocab", str(vocab), "--format", "prose", "--num-shards", "2"])
        run(["--input", str(corpus / "persuasion.txt"), "--output", str(data / "eval"), "--vocab", str(vocab),
             "--format", "prose", "--num-shards", "1"])
    else:
        print(f"[2/4] TFRecords: {data} (already written)")
    return parse_args([
        "--config", "tiny", "--vocab", str(vocab), "--train-data", str(data / "train-*.tfrecord"),
        "--eval-data", str(data / "eval-*.tfrecord"), "--model-dir", str(DEMO_DIR / "model"),
        "--steps", str(steps), "--batch-size", "32", "--seq-length", "128", "--learning-rate", "5e-4",
        "--warmup-steps", str(steps // 10), "--checkpoint-every", str(min(250, steps)), "--export", "--seed", "0",
    ])


# -- training -------------------------------------------------------------------------------------
def build_config(args, vocab_size):
    from kbert import BertConfig

    config = BertConfig.from_name_or_path(args.config)
    if config.vocab_size != vocab_size:
        if args.config in ("tiny", "mini", "small", "medium", "base", "large"):
            config = BertConfig(**{**config.to_dict(), "vocab_size": vocab_size})
        else:
            raise ValueError(f"{args.config} says vocab_size={config.vocab_size} but the tokenizer "
                             f"({args.vocab or args.tokenizer_dir}) has {vocab_size} tokens")
    if args.seq_length > config.max_position_embeddings:
        raise ValueError(f"--seq-length {args.seq_length} exceeds max_position_embeddings {config.max_position_embeddings}")
    return config


def train(args) -> dict:
    import keras
    import tensorflow as tf

    from kbert.data.pretraining import BadRecordCounter, CorruptRecordError, explain_data_errors, list_files, \
        pretraining_dataset
    from kbert.model_dir import load_encoder, load_heads, save_model_dir
    from kbert.models import BertEncoder
    from kbert.models.pretrainer import BertPretrainer
    from kbert.text import BertPreprocessor
    from kbert.text.cli_args import tokenizer_from_args
    from kbert.text.masking import MlmMasker
    from kbert.training.checkpoints import CheckpointCallback, CheckpointState, StepLogger
    from kbert.training.distribute import StrategyReplicas, resolve_strategy
    from kbert.training.optimization import create_optimizer
    from kbert.training.progress import RunProgress

    for flag in ("train_data", "model_dir"):
        if not getattr(args, flag):
            raise SystemExit(f"error: --{flag.replace('_', '-')} is required (or run with no arguments for the demo)")
    list_files(args.train_data)  # fail before any work when nothing matches or all files are empty
    if args.eval_data:
        list_files(args.eval_data)
    if args.seed is not None:
        keras.utils.set_random_seed(args.seed)
    model_dir = pathlib.Path(args.model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    strategy = resolve_strategy(args.strategy, args.tpu)
    if args.mixed_precision != "float32" or args.tpu:
        keras.mixed_precision.set_dtype_policy("mixed_bfloat16" if args.tpu else args.mixed_precision)

    # Any type: one with a Python step (the mecab-* types' MeCab split) runs it in the tf.data map.
    tokenizer = tokenizer_from_args(args, "tokenizer_dir")
    config = build_config(args, tokenizer.vocab_size)
    preprocessor = BertPreprocessor(tokenizer, seq_length=args.seq_length)
    masker = MlmMasker.from_tokenizer(tokenizer, max_predictions=args.max_predictions, selection_rate=args.mask_rate,
                                      mask_token_rate=args.mask_token_rate, random_token_rate=args.random_token_rate,
                                      whole_word=args.whole_word_masking)
    use_nsp = not args.no_nsp
    bad_records = BadRecordCounter() if args.skip_bad_records else None  # outside strategy.scope()
    replicas = strategy.num_replicas_in_sync
    if args.batch_size % replicas:
        raise ValueError(f"--batch-size {args.batch_size} is not divisible by {replicas} replicas")

    def dataset_fn(input_context, pattern=args.train_data, training=True):
        per_replica = input_context.get_per_replica_batch_size(args.batch_size)
        return pretraining_dataset(pattern, preprocessor, masker, per_replica, is_training=training,
                                   input_context=input_context, seed=args.seed, use_nsp=use_nsp,
                                   skip_bad_records=args.skip_bad_records, bad_record_counter=bad_records)

    train_ds = strategy.distribute_datasets_from_function(dataset_fn)
    with strategy.scope():
        if args.init_checkpoint:
            encoder = load_encoder(args.init_checkpoint)
            heads = load_heads(args.init_checkpoint, encoder.config)
        else:
            encoder, heads = BertEncoder(config), {}
        pretrainer = BertPretrainer(encoder, heads.get("mlm"), heads.get("nsp"), use_nsp=use_nsp,
                                    replicas=StrategyReplicas())
        warmup = args.warmup_steps if args.warmup_steps is not None else args.steps // 100
        optimizer = create_optimizer(args.learning_rate, args.steps, warmup, args.weight_decay,
                                     args.optimizer, args.clip_norm)
        pretrainer.compile(optimizer=optimizer, jit_compile=args.jit_compile,
                           steps_per_execution=args.steps_per_execution)
        # Build on zeros of the batches' shapes: no data read (nor a second tf.data pipeline traced).
        pretrainer({name: tf.zeros([1, args.max_predictions if name == "masked_lm_positions" else args.seq_length],
                                   tf.int32)
                    for name in ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")})
        optimizer.build(pretrainer.trainable_variables)
    state = CheckpointState(model_dir / "checkpoints", pretrainer, optimizer)
    step = state.restore()
    if step:
        print(f"resuming from step {step} ({state.manager.latest_checkpoint})", flush=True)
    every = min(args.checkpoint_every, args.steps)
    checkpointer = CheckpointCallback(state)
    callbacks = [checkpointer, StepLogger(model_dir / "logs" / "train", args.batch_size, every=min(10, every)),
                 RunProgress(args.steps, initial_step=step)]  # one display for the whole run
    start = time.time()
    if args.eval_data and args.fill_mask_every > 0 and not isinstance(strategy, tf.distribute.TPUStrategy):
        from kbert.explore.fill_mask_callback import FillMaskLogger, held_out_sentences

        callbacks.append(FillMaskLogger(model_dir / "logs" / "fill_mask", encoder, pretrainer.mlm_head, preprocessor,
                                        held_out_sentences(args.eval_data, tokenizer.get_vocabulary(), tokenizer.lower_case),
                                        every=args.fill_mask_every))
    try:
        with explain_data_errors():
            while step < args.steps and not checkpointer.terminated:
                # After a resume from a checkpoint written off the interval (SIGTERM, damaged data),
                # the first call runs up to the next interval boundary.
                n = min(every - step % every, args.steps - step)
                if step % every == 0 and n == every:
                    # Whole checkpoint intervals as epochs: one fit call, resumable at any epoch.
                    epochs = (args.steps - step) // every
                    pretrainer.fit(train_ds, epochs=step // every + epochs, initial_epoch=step // every,
                                   steps_per_epoch=every, callbacks=callbacks, verbose=0,
                                   shuffle=False)  # tf.data shuffles
                else:
                    pretrainer.fit(train_ds, epochs=1, steps_per_epoch=n, callbacks=callbacks, verbose=0,
                                   shuffle=False)
                if state.step == step:
                    raise RuntimeError(f"no training step ran from step {step}: the training data ran out")
                step = state.step
    except CorruptRecordError:
        # The steps done so far are sound (the bad record never reached the model): keep them.
        if state.step and state.step != state.saved_step:
            print(f"damaged training data: checkpoint written at step {state.step}: {state.save()}", flush=True)
        raise
    if checkpointer.terminated:
        print(f"stopped by SIGTERM at step {step}; rerun the same command to resume", flush=True)
        sys.exit(143)
    elapsed = time.time() - start
    results = {"steps": step, "train_seconds": round(elapsed, 1)}
    if args.eval_data:
        # Held-out masks from a fixed seed, whatever ran before in this process (training, or
        # nothing on a finished checkpoint): the same checkpoint gives the same numbers.
        tf.random.set_seed(EVAL_SEED)
        eval_ds = pretraining_dataset(args.eval_data, preprocessor, masker, args.batch_size, is_training=False,
                                      seed=0, use_nsp=use_nsp, skip_bad_records=args.skip_bad_records,
                                      bad_record_counter=bad_records)
        with explain_data_errors():
            results.update({f"eval_{k}": float(v) for k, v in pretrainer.evaluate(
                eval_ds.take(args.eval_steps), return_dict=True, verbose=0).items()})
        writer = tf.summary.create_file_writer(str(model_dir / "logs" / "eval"))
        with writer.as_default(step=step):
            for k, v in results.items():
                if k.startswith("eval_"):
                    tf.summary.scalar(k[5:], v)
    if bad_records is not None:
        results["skipped_bad_records"] = bad_records.count
        if bad_records.count:
            print(f"skipped {bad_records.count} damaged TFRecord region(s) (each a bad record and the rest of its "
                  "file); the files are named in the log above", flush=True)
    save_model_dir(model_dir, encoder, tokenizer=tokenizer,
                   heads={name: (head, {"type": name}) for name, head in pretrainer.heads().items()})
    (model_dir / "pretrain_results.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


def run_training(args) -> dict:
    """``train`` with the failures a user has to act on (damaged data, divergence, a checkpoint that
    cannot be written) reported as one ``error: ...`` line and exit status 1 instead of a traceback."""
    from kbert.data.pretraining import CorruptRecordError
    from kbert.errors import DataError
    from kbert.training.checkpoints import CheckpointRestoreError, CheckpointWriteError, TrainingDiverged

    try:
        return train(args)
    except (CorruptRecordError, DataError, TrainingDiverged, CheckpointWriteError, CheckpointRestoreError) as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def export(model_dir: pathlib.Path, name: str):
    from kbert.export.encoder import export_encoder
    from kbert.export.preprocessor import export_preprocessor

    enc = export_encoder(model_dir, pathlib.Path("saved_models") / f"{name}_encoder" / "1")
    pre = export_preprocessor(model_dir, pathlib.Path("saved_models") / f"{name}_preprocessor" / "1")
    return enc, pre


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--demo"] or any(a.startswith("--demo=") for a in argv[:1]):
        from kbert.pretrain_demo_ja import main as demo_main

        return demo_main(argv)
    demo = not argv
    t0 = time.time()
    args = demo_args() if demo else parse_args(argv)
    if demo:
        print("[3/4] pre-training BERT-Tiny (masked LM + next sentence prediction)", flush=True)
    results = run_training(args)
    print(json.dumps(results, indent=2))
    if args.export:
        if demo:
            print("[4/4] exporting SavedModels", flush=True)
        enc, pre = export(pathlib.Path(args.model_dir), "kbert_demo" if demo else pathlib.Path(args.model_dir).name)
        print(f"encoder SavedModel:      {enc}\npreprocessor SavedModel: {pre}")
    print(f"model directory:         {args.model_dir}")
    print(f"TensorBoard:             tensorboard --logdir {pathlib.Path(args.model_dir) / 'logs'}")
    from kbert.explore.curves import report_curves

    print(f"loss/accuracy curves:    {report_curves(pathlib.Path(args.model_dir) / 'logs')}")
    print(f"done in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    from kbert.cli_support import run as run_cli

    sys.exit(run_cli("pretrain", main))
