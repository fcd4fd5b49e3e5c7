"""python -m kbert.pretrain --demo ja [--tokenizer TYPE] [--steps N]: the Japanese main job.

From the Japanese text shipped in ``kbert/resources/corpus/ja`` (Sōseki's 吾輩は猫である, public
domain, and the JSQuAD Wikipedia paragraphs, CC BY-SA 4.0; see its README) it

  1. prepares the text: Aozora Bunko markup stripped, NFKC; the last 10% of the novel's paragraphs
     and of the Wikipedia articles are held out for evaluation;
  2. learns an 8,000-token vocabulary of the chosen type from the training part (default
     ``sentencepiece``, whose exports take raw strings; ``wordpiece`` is learned cased;
     ``mecab-wordpiece`` / ``mecab-character`` are the Tohoku BERTs' types, pre-trained with
     whole-word masking over MeCab words, and their exports take words, kbert.tasks.core.words_inputs);
  3. writes pre-training TFRecords (``pipelines.pretraining_data --language ja``);
  4. pre-trains BERT-Tiny (masked LM + next sentence prediction, 1,000 steps of 32 x 128);
  5. exports the encoder and the preprocessor, and reports the held-out MLM accuracy and the
     [UNK] rate of the vocabulary on the held-out text.

Everything goes under ``runs/pretrain_demo_ja/<tokenizer>/`` and ``saved_models/``; finished steps
are not redone when the command is run again.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

DEMO_DIR = pathlib.Path("runs/pretrain_demo_ja")
CORPUS = pathlib.Path(__file__).parents[1] / "resources" / "corpus" / "ja"
SOURCES = {"wagahaiwa_nekodearu.txt": True, "jsquad_wikipedia.txt": False}  # file -> has Aozora markup
HELD_OUT = 0.1
VOCAB_SIZE = 8000


def parse_args(argv):
    from kbert.cli_support import ArgumentParser, prog
    from kbert.text.registry import tokenizer_types  # every registered type can learn its vocabulary

    p = ArgumentParser(prog=f"{prog('pretrain')} --demo ja", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--demo", required=True, choices=("ja",), help="the Japanese main job")
    p.add_argument("--tokenizer", default="sentencepiece", choices=tokenizer_types(), help="vocabulary type (default sentencepiece)")
    p.add_argument("--steps", type=int, default=1000, help="pre-training steps (default 1000)")
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error(f"--steps must be positive, got {args.steps}")
    return args


def split_held_out(text: str, is_novel: bool) -> tuple[str, str]:
    """(train, eval): the last 10% of the paragraphs (novel) or of the articles (Wikipedia, blank-line separated)."""
    if is_novel:
        units, sep = [line for line in text.split("\n") if line.strip()], "\n"
    else:
        units, sep = [a for a in text.split("\n\n") if a.strip()], "\n\n"
    cut = len(units) - max(1, int(len(units) * HELD_OUT))
    return sep.join(units[:cut]) + "\n", sep.join(units[cut:]) + "\n"


def prepare_corpus(text_dir: pathlib.Path) -> None:
    from pipelines.cjk_text import prepare

    for split in ("train", "eval"):
        (text_dir / split).mkdir(parents=True, exist_ok=True)
    for name, aozora in SOURCES.items():
        text = prepare((CORPUS / name).read_text(encoding="utf-8"), "ja", aozora=aozora)
        train, held_out = split_held_out(text, is_novel=aozora)
        (text_dir / "train" / name).write_text(train, encoding="utf-8")
        (text_dir / "eval" / name).write_text(held_out, encoding="utf-8")


def learn_vocabulary(kind: str, files, out: pathlib.Path) -> None:
    """The type's own vocabulary learning (its ``learn_vocab``; never lower-cased: Japanese)."""
    from kbert.text.registry import tokenizer_class
    from kbert.text.vocab_learning import VocabOptions

    tokenizer_class(kind).learn_vocab(files, out, VocabOptions(vocab_size=VOCAB_SIZE, lower_case=False), log=sys.stderr)


def unknown_rate(tokenizer, files) -> tuple[float, int]:
    """(share of [UNK] among the pieces of the lines of ``files``, number of pieces)."""
    lines = [line for f in files for line in pathlib.Path(f).read_text(encoding="utf-8").split("\n") if line.strip()]
    ids = tokenizer.tokenize_flat(lines).flat_values.numpy()  # raw lines: MeCab's split runs inside for mecab-*
    return float((ids == tokenizer.special_token_ids["unknown_id"]).mean()), int(ids.size)


def main(argv) -> int:
    from kbert.errors import TrainingStopped
    from kbert.explore.curves import report_curves
    from kbert.export.hub_pair import export_hub_pair
    from kbert.training.pretrain import PretrainOptions, pretrain
    from kbert.text.registry import create_tokenizer
    from kbert.text.spec import TokenizerSpec
    from pipelines.pretraining_data import run as write_records

    args = parse_args(argv)
    t0 = time.time()
    kind = args.tokenizer
    root = DEMO_DIR / kind
    data, text_dir = root / "data", root / "data" / "text"
    from kbert.text.registry import tokenizer_class

    vocab = data / tokenizer_class(kind).vocab_file_name
    if not (text_dir / "eval").is_dir():
        print(f"[1/5] preparing the Japanese text from {CORPUS} (Aozora markup stripped, NFKC, 10% held out)",
              flush=True)
        prepare_corpus(text_dir)
    else:
        print(f"[1/5] text: {text_dir} (already prepared)")
    train_files = sorted(str(p) for p in (text_dir / "train").glob("*.txt"))
    eval_files = sorted(str(p) for p in (text_dir / "eval").glob("*.txt"))
    if not vocab.exists():
        print(f"[2/5] learning a {VOCAB_SIZE}-token {kind} vocabulary", flush=True)
        learn_vocabulary(kind, train_files, vocab)
    else:
        print(f"[2/5] vocabulary: {vocab} (already learned)")
    cased = ["--cased"] if kind == "wordpiece" else []
    if not list(data.glob("train-*.tfrecord")):
        print("[3/5] writing pre-training TFRecords (Apache Beam, DirectRunner)", flush=True)
        common = ["--vocab", str(vocab), "--tokenizer", kind, "--language", "ja", "--format", "prose", *cased]
        write_records(["--input", str(text_dir / "train" / "*.txt"), "--output", str(data / "train"),
                       "--num-shards", "2", *common])
        write_records(["--input", str(text_dir / "eval" / "*.txt"), "--output", str(data / "eval"),
                       "--num-shards", "1", *common])
    else:
        print(f"[3/5] TFRecords: {data} (already written)")
    print("[4/5] pre-training BERT-Tiny (masked LM + next sentence prediction)", flush=True)
    model_dir = root / "model"
    options = PretrainOptions(
        config="tiny", vocab=str(vocab), tokenizer=kind, cased=kind == "wordpiece",
        train_data=str(data / "train-*.tfrecord"), eval_data=str(data / "eval-*.tfrecord"),
        model_dir=str(model_dir), steps=args.steps, batch_size=32, seq_length=128, learning_rate=5e-4,
        warmup_steps=max(1, args.steps // 10), checkpoint_every=250, seed=0,
        whole_word_masking=kind.startswith("mecab-"))
    try:
        results = pretrain(options)
    except TrainingStopped as e:  # SIGTERM: the checkpoint is written, a rerun resumes
        print(str(e), flush=True)
        raise SystemExit(e.exit_status) from None
    print("[5/5] exporting SavedModels", flush=True)
    enc, pre = export_hub_pair(model_dir, f"kbert_demo_ja_{kind}")
    tokenizer = create_tokenizer(TokenizerSpec(type=kind, lower_case=False, vocab_file=os.path.abspath(vocab)))
    unk, pieces = unknown_rate(tokenizer, eval_files)
    summary = {"tokenizer": kind, "vocab_size": tokenizer.vocab_size, "steps": results["steps"],
               "train_seconds": results["train_seconds"],
               "held_out_mlm_accuracy": results.get("eval_mlm_accuracy"),
               "held_out_nsp_accuracy": results.get("eval_nsp_accuracy"),
               "held_out_unk_rate": unk, "held_out_pieces": pieces, "total_seconds": round(time.time() - t0, 1)}
    (model_dir / "demo_ja_summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))
    print(f"vocabulary:              {vocab} ({tokenizer.vocab_size} {kind} tokens)")
    print(f"TFRecords:               {data}")
    print(f"model directory:         {model_dir}")
    print(f"encoder SavedModel:      {enc}\npreprocessor SavedModel: {pre}")
    print(f"TensorBoard:             tensorboard --logdir {model_dir / 'logs'}")
    print(f"loss/accuracy curves:    {report_curves(model_dir / 'logs')}")
    print(f"done in {time.time() - t0:.0f} s")
    return 0
