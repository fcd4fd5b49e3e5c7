"""python -m kbert.bench tokenize [--text GLOB] [--vocab vocab.txt] [--batch-size 1024] ...

(``--tokenizer mecab-wordpiece|mecab-character|sentencepiece``: the Japanese rows, see
kbert.bench.tokenize_ja and kbert.bench.tokenize_spm.)

Sentences per second of kbert's tokenizer + packer (strings -> the three int32 [batch,
seq_length] inputs) next to its peers on the same sentences, in the same process:
  * keras-hub ``WordPieceTokenizer`` (lowercase, strip_accents; alone and with keras-hub's
    ``MultiSegmentPacker``), both inside ``tf.function``;
  * Hugging Face ``tokenizers`` (Rust) ``BertWordPieceTokenizer.encode_batch`` with truncation
    and padding to seq_length (the same output) and without, when the package is installed.
Every candidate gets the Python list of strings of a batch (kbert's time includes making the
tensor). Rounds are interleaved (each round runs every candidate over all batches) and the
median round is reported. The last line is the ratio kbert / the faster Rust configuration
(or kbert / keras-hub).
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import time

from kbert.bench import common


def read_sentences(pattern, limit):
    files = sorted(glob.glob(pattern, recursive=True))
    if not files:
        raise SystemExit(f"error: --text {pattern!r} matches no files")
    sentences = []
    for name in files:
        with open(name, encoding="utf-8", errors="replace") as f:
            sentences.extend(line.strip() for line in f if line.strip())
        if len(sentences) >= limit:
            break
    if not sentences:
        raise SystemExit(f"error: --text {pattern!r} has no non-blank lines")
    while len(sentences) < limit:
        sentences.extend(sentences[: limit - len(sentences)])
    return sentences[:limit]


def build_candidates(vocab_file, seq_length, lower_case):
    import tensorflow as tf

    from kbert.text import BertPreprocessor

    candidates = {}
    pre = BertPreprocessor(vocab_file, lower_case=lower_case, seq_length=seq_length)
    kbert_fn = tf.function(lambda s: pre(s), autograph=False)
    kbert_tok = tf.function(lambda s: pre.tokenizer(s), autograph=False)
    candidates["kbert tokenizer+packer"] = lambda batch: kbert_fn(tf.constant(batch))
    candidates["kbert tokenizer"] = lambda batch: kbert_tok(tf.constant(batch))

    import keras_hub

    hub_tok = keras_hub.tokenizers.WordPieceTokenizer(
        vocabulary=str(vocab_file), lowercase=lower_case, strip_accents=lower_case, split_on_cjk=True)
    ids = pre.tokenizer.special_token_ids
    hub_pack = keras_hub.layers.MultiSegmentPacker(
        sequence_length=seq_length, start_value=ids["start_of_sequence_id"],
        end_value=ids["end_of_segment_id"], pad_value=ids["padding_id"])
    hub_tok_fn = tf.function(lambda s: hub_tok(s), autograph=False)
    hub_fn = tf.function(lambda s: hub_pack(hub_tok(s)), autograph=False)
    candidates["keras-hub WordPieceTokenizer"] = lambda batch: hub_tok_fn(tf.constant(batch))
    candidates["keras-hub WordPieceTokenizer+MultiSegmentPacker"] = lambda batch: hub_fn(tf.constant(batch))

    try:
        import tokenizers
    except ImportError:
        print("Hugging Face tokenizers not installed (pip install tokenizers): Rust peer skipped")
    else:
        def rust_tokenizer():
            return tokenizers.BertWordPieceTokenizer(
                str(vocab_file), lowercase=lower_case, strip_accents=None, clean_text=True,
                handle_chinese_chars=True)

        packing = rust_tokenizer()
        packing.enable_truncation(seq_length)
        packing.enable_padding(length=seq_length, pad_id=ids["padding_id"])
        version = tokenizers.__version__
        candidates[f"Rust tokenizers {version} encode_batch, truncate+pad"] = packing.encode_batch
        candidates[f"Rust tokenizers {version} encode_batch, unpadded"] = rust_tokenizer().encode_batch
    return candidates


def main(argv=None) -> int:
    from kbert.cli_support import ArgumentParser, prog

    parser = ArgumentParser(prog=f"{prog('bench')} tokenize", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    shared = common.default_shared_data()
    parser.add_argument("--text", default=str(shared / "corpus" / "en" / "**" / "*.txt") if shared else None,
                        help="text files, one sentence per line (default: the shared English corpus)")
    parser.add_argument("--vocab", default=str(shared / "vocab" / "bert-base-uncased" / "vocab.txt")
                        if shared else None, help="vocab.txt (default: the shared bert-base-uncased one)")
    parser.add_argument("--cased", action="store_true")
    parser.add_argument("--tokenizer", default="wordpiece",
                        choices=("wordpiece", "mecab-wordpiece", "mecab-character", "sentencepiece"),
                        help="the Japanese MeCab types are measured beside transformers' BertJapaneseTokenizer "
                             "(kbert.bench.tokenize_ja), sentencepiece beside the sentencepiece package and "
                             "keras-hub (kbert.bench.tokenize_spm); default text and vocab: the shared Japanese ones")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seq-length", type=int, default=128)
    args = parser.parse_args(argv)
    if args.tokenizer != "wordpiece" and shared:
        japanese = {"mecab-wordpiece": "ja-mecab-wordpiece/vocab.txt", "mecab-character": "ja-char/vocab.txt",
                    "sentencepiece": "ja-sentencepiece/spm.model"}[args.tokenizer]
        if args.text == parser.get_default("text"):
            args.text = str(shared / "corpus" / "ja" / "jsquad_wikipedia.txt")
        if args.vocab == parser.get_default("vocab"):
            args.vocab = str(shared / "vocab" / japanese)
    if not args.text or not args.vocab:
        parser.error("shared data not found: give --text and --vocab (or set KBERT_SHARED_DATA)")

    sentences = read_sentences(args.text, args.batch_size * args.batches)
    batches = [sentences[i:i + args.batch_size] for i in range(0, len(sentences), args.batch_size)]
    if args.tokenizer != "wordpiece":
        from kbert.bench import tokenize_ja, tokenize_spm

        print(f"{len(batches)} batches of {args.batch_size} lines from {args.text}, {args.rounds} interleaved "
              f"rounds, {os.cpu_count()} CPUs")
        if args.tokenizer == "sentencepiece":
            tokenize_spm.run(args.vocab, batches, args.rounds, args.seq_length)
        else:
            tokenize_ja.run(args.tokenizer, args.vocab, batches, args.rounds)
        return 0
    candidates = build_candidates(args.vocab, args.seq_length, not args.cased)
    print(f"{len(batches)} batches of {args.batch_size} sentences from {args.text}, seq_length "
          f"{args.seq_length}, {args.rounds} interleaved rounds, {os.cpu_count()} CPUs")
    for fn in candidates.values():  # warm-up: tracing, thread pools
        fn(batches[0])
    rates = {name: [] for name in candidates}
    for _ in range(args.rounds):
        for name, fn in candidates.items():
            start = time.perf_counter()
            for batch in batches:
                fn(batch)
            rates[name].append(len(sentences) / (time.perf_counter() - start))
    medians = {name: statistics.median(r) for name, r in rates.items()}
    width = max(map(len, medians))
    for name, rate in medians.items():
        print(f"{name:<{width}}  {rate:>10,.0f} sentences/s  (rounds: {', '.join(f'{r:,.0f}' for r in rates[name])})")
    ours = medians["kbert tokenizer+packer"]
    # Against the fastest Rust configuration (conservative), else keras-hub.
    rust = sorted((name for name in medians if name.startswith("Rust")), key=medians.get)
    peer = rust[-1] if rust else "keras-hub WordPieceTokenizer+MultiSegmentPacker"
    print(f"ratio kbert tokenizer+packer / {peer}: {ours / medians[peer]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
