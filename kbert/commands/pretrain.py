"""python -m kbert.pretrain: BERT pre-training (masked LM + next sentence prediction) with model.fit.

With no arguments it runs the built-in demo: from the small public-domain corpus shipped in
``kbert/resources/corpus`` it learns a vocab, writes pre-training TFRecords (Beam), pre-trains
BERT-Tiny for a few minutes on the CPU, and exports the encoder and preprocessor to
``saved_models/``. ``--demo ja [--tokenizer TYPE]`` is the Japanese main job (``kbert.commands.pretrain_demo_ja``).

Re-running the same command after a crash resumes from the last checkpoint in ``--model-dir``
(weights, optimizer state, step). The training loop is ``kbert.training.pretrain.pretrain
(PretrainOptions)``; this command parses the flags into those options. ``--backend jax`` trains
under Keras' JAX backend over every local device (several hosts: --coordinator-address,
--num-processes, --process-id; or --tpu on a Cloud TPU VM).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import sys
import time

DEMO_DIR = pathlib.Path("runs/pretrain_demo")


def parse_args(argv=None):
    from kbert.cli_support import ArgumentParser, add_backend_flag, add_tokenizer_arguments, prog
    from kbert.text.registry import tokenizer_types

    p = ArgumentParser(prog=prog("pretrain"), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_backend_flag(p)
    p.add_argument("--tpu", default=None,
                   help="tensorflow: TPU name or grpc:// address (selects TPUStrategy); jax: on a Cloud TPU VM, "
                        "join its hosts through jax.distributed (any value, e.g. local)")
    p.add_argument("--strategy", default="auto", choices=("auto", "one_device", "mirrored", "multi_worker", "tpu"),
                   help="tensorflow only (jax spreads the batch over every device)")
    p.add_argument("--coordinator-address", default=None,
                   help="jax over several processes: host:port of process 0 (jax.distributed.initialize)")
    p.add_argument("--num-processes", type=int, default=None, help="jax: number of processes of the run")
    p.add_argument("--process-id", type=int, default=None, help="jax: this process's id, 0 .. N-1")
    p.add_argument("--config", default="base", help="preset name or bert_config.json")
    add_tokenizer_arguments(p, tokenizer_types(), dir_flag="--tokenizer-dir")  # --vocab, --cased, --tokenizer TYPE
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
    p.add_argument("--objective", choices=("mlm", "ltr"), default="mlm",
                   help="mlm (BERT's masked LM, with NSP unless --no-nsp) or ltr: a left-to-right LM (causal "
                        "encoder, next-token loss, no NSP; the paper's Table 5 'LTR & No NSP'); fine-tuning its "
                        "model directory attends left-only too")
    p.add_argument("--batch-size", type=int, default=32, help="global batch size")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--learning-rate", type=float, default=1e-4)
    p.add_argument("--warmup-steps", type=int, default=None, help="default: 1%% of --steps")
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--optimizer", choices=("adamw", "lamb"), default="adamw")
    p.add_argument("--clip-norm", type=float, default=1.0)
    p.add_argument("--mixed-precision", choices=("float32", "mixed_bfloat16", "mixed_float16"), default="float32")
    p.add_argument("--attention", choices=("auto", "plain", "fused"), default="auto",
                   help="auto (default: the fastest faithful attention on the device, cuDNN flash attention under "
                        "--backend jax on NVIDIA GPUs), plain or fused; the model directory is the same either way")
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
    corpus = pathlib.Path(__file__).parents[1] / "resources" / "corpus"
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


# -- the library call ------------------------------------------------------------------------------
def options_from_args(args):
    """PretrainOptions from the parsed flags (one flag per field)."""
    from kbert.training.pretrain import PretrainOptions

    return PretrainOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(PretrainOptions)})


def fill_mask_callbacks(args):
    """The TensorBoard fill-mask logger (--fill-mask-every) as ``pretrain``'s ``callbacks_for``."""
    if not args.eval_data or args.fill_mask_every <= 0:
        return None

    def build(encoder, mlm_head, preprocessor, tokenizer):
        from kbert.explore.fill_mask_callback import FillMaskLogger, held_out_sentences

        return [FillMaskLogger(pathlib.Path(args.model_dir) / "logs" / "fill_mask", encoder, mlm_head, preprocessor,
                               held_out_sentences(args.eval_data, tokenizer.get_vocabulary(), tokenizer.lower_case),
                               every=args.fill_mask_every)]

    return build


def run_training(args) -> dict:
    """kbert.training.pretrain.pretrain for parsed flags (or PretrainOptions); a SIGTERM stop
    (checkpoint written) says so and exits with status 143. Other failures propagate: the command
    shows them as one line."""
    from kbert.errors import TrainingStopped
    from kbert.training.pretrain import PretrainOptions, pretrain

    try:
        if isinstance(args, PretrainOptions):
            return pretrain(args)
        return pretrain(options_from_args(args), callbacks_for=fill_mask_callbacks(args))
    except TrainingStopped as e:
        print(str(e), flush=True)
        raise SystemExit(e.exit_status) from None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--demo"] or any(a.startswith("--demo=") for a in argv[:1]):
        from kbert.commands.pretrain_demo_ja import main as demo_main

        return demo_main(argv)
    from kbert.cli_support import use_backend

    demo = not argv
    t0 = time.time()
    args = None if demo else parse_args(argv)
    use_backend(None if demo else args.backend)  # before anything imports Keras
    if demo:
        args = demo_args()
        print("[3/4] pre-training BERT-Tiny (masked LM + next sentence prediction)", flush=True)
    results = run_training(args)
    print(json.dumps(results, indent=2))
    if args.export:
        from kbert.export.hub_pair import export_hub_pair

        if demo:
            print("[4/4] exporting SavedModels", flush=True)
        enc, pre = export_hub_pair(pathlib.Path(args.model_dir), "kbert_demo" if demo else pathlib.Path(args.model_dir).name)
        print(f"encoder SavedModel:      {enc}\npreprocessor SavedModel: {pre}")
    print(f"model directory:         {args.model_dir}")
    print(f"TensorBoard:             tensorboard --logdir {pathlib.Path(args.model_dir) / 'logs'}")
    from kbert.explore.curves import report_curves

    print(f"loss/accuracy curves:    {report_curves(pathlib.Path(args.model_dir) / 'logs')}")
    print(f"done in {time.time() - t0:.0f} s")
    return 0
