"""python -m kbert.explore {fill-mask,next-sentence,attention} MODEL_DIR ...

  fill-mask MODEL_DIR "text with [MASK] ..." [--top-k 5] [--json]
        the most probable tokens for each [MASK] (the masked-LM head); --json prints one object a
        line per [MASK]: {"position": i, "ids": [...], "tokens": [...], "probabilities": [...]}
  next-sentence MODEL_DIR "A" "B" [--json]
        P(IsNext) of B following A (the next-sentence head); --json: {"is_next_probability": p}
  attention MODEL_DIR "text" ["text b"] --out attention.html [--png attention.png] [--layer L] [--head H]
        a self-contained HTML page of the attention probabilities (a heat map per layer and head,
        hover a token to see what it attends to) and optionally a PNG of the same grid;
        --layer/--head (0-based) draw only that layer/head
  workshop-data OUT_DIR [--corpus PATH] [--unit paragraph|article]
        the Japanese workshop's multi-label task made from JSQuAD's Wikipedia paragraphs: train.jsonl,
        dev.jsonl, unlabelled.jsonl and the leaderboard's answers.jsonl (kbert.explore.ene_workshop)
  workshop-score PREDICTIONS --answers answers.jsonl [--input unlabelled.jsonl]
        micro-F1 (the leaderboard's score), macro-F1 and exact-match ratio of a submission
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from kbert.cli_support import UserError


def parse_args(argv=None):
    from kbert.cli_support import ArgumentParser, prog

    parser = ArgumentParser(prog=prog("explore"), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    fm = sub.add_parser("fill-mask", help="top-k tokens for each [MASK]")
    fm.add_argument("model_dir")
    fm.add_argument("texts", nargs="+", help="text with [MASK] written where a token is missing")
    fm.add_argument("--top-k", type=int, default=5)
    fm.add_argument("--json", action="store_true", help="one JSON object a line per [MASK]")
    ns = sub.add_parser("next-sentence", help="P(IsNext) of B after A")
    ns.add_argument("model_dir")
    ns.add_argument("text_a")
    ns.add_argument("text_b")
    ns.add_argument("--json", action="store_true")
    at = sub.add_parser("attention", help="attention heat maps as HTML (and PNG)")
    at.add_argument("model_dir")
    at.add_argument("text_a")
    at.add_argument("text_b", nargs="?")
    at.add_argument("--out", required=True, help="the HTML page to write")
    at.add_argument("--png", help="also write the grid as a PNG")
    at.add_argument("--layer", type=int, help="draw only this layer (0-based)")
    at.add_argument("--head", type=int, help="draw only this head (0-based)")
    wd = sub.add_parser("workshop-data", help="the workshop's ENE-like multi-label data set (JSONL)")
    wd.add_argument("out_dir")
    wd.add_argument("--corpus", help="jsquad_wikipedia.txt (default: the shared data's corpus/ja/)")
    wd.add_argument("--unit", choices=("paragraph", "article"), default="paragraph",
                    help="a row per paragraph (default) or per whole article, its paragraphs in order")
    ws = sub.add_parser("workshop-score", help="micro-F1 of a submission against the answers")
    ws.add_argument("predictions", help="kbert.predict's output, or {id, labels} rows")
    ws.add_argument("--answers", required=True, help="answers.jsonl written by workshop-data")
    ws.add_argument("--input", help="the file that was predicted (gives the ids of kbert.predict's rows)")
    args = parser.parse_args(argv)
    if args.command == "fill-mask" and args.top_k < 1:
        parser.error(f"--top-k must be at least 1, got {args.top_k}")
    return args


def fill_mask_command(args) -> int:
    from kbert.explore.heads_model import PretrainingHeads
    from kbert.explore.masked_text import is_sentencepiece_vocab, join_pieces
    from kbert.explore.predict import fill_mask_ids

    heads = PretrainingHeads.from_model_dir(args.model_dir, heads=("mlm",))
    packed = {k: v.numpy() for k, v in heads.pack(args.texts).items()}
    answers = fill_mask_ids(heads, packed, args.top_k)
    vocab = heads.preprocessor.tokenize.get_vocabulary()
    sentencepiece = is_sentencepiece_vocab(vocab)
    tokens_uncut, masks_uncut = heads.uncut(args.texts)
    cut = heads.preprocessor.seq_length
    for row, (text, masks) in enumerate(zip(args.texts, answers)):
        if not masks and masks_uncut[row]:
            raise UserError(f"the [MASK] in {_short(text)} lies past the cut: the model reads {cut} tokens and the "
                            f"text has {tokens_uncut[row]}; shorten the text before the [MASK]")
        if not masks:
            raise UserError(f"no [MASK] in {_short(text)} (write [MASK] where a token is missing)")
        if len(masks) < masks_uncut[row]:
            print(f"note: {masks_uncut[row] - len(masks)} of the {masks_uncut[row]} [MASK]s in {_short(text)} lie "
                  f"past the cut ({cut} tokens of {tokens_uncut[row]}) and are not filled", file=sys.stderr)
        if args.json:
            for mask in masks:
                print(json.dumps(mask, ensure_ascii=False))
            continue
        length = int(packed["input_mask"][row].sum())
        tokens = [vocab[i] for i in packed["input_word_ids"][row, 1:length - 1]]  # without [CLS], [SEP]
        print(text)
        for m, mask in enumerate(masks):
            print(f"  [MASK] {m + 1} (position {mask['position']}):")
            for token, p in zip(mask["tokens"], mask["probabilities"]):
                filled = list(tokens)
                filled[mask["position"] - 1] = token
                print(f"    {p:7.4f}  {token:<12}  {join_pieces(filled, sentencepiece)}")
    return 0


def next_sentence_command(args) -> int:
    from kbert.explore.heads_model import PretrainingHeads
    from kbert.explore.predict import next_sentence

    heads = PretrainingHeads.from_model_dir(args.model_dir, heads=("nsp",))
    _note_cut(heads, [args.text_a], [args.text_b])
    p = next_sentence(heads, args.text_a, args.text_b)
    if args.json:
        print(json.dumps({"is_next_probability": p}))
    else:
        print(f"P(IsNext) = {p:.4f}  ({'IsNext' if p >= 0.5 else 'NotNext'})")
    return 0


def attention_command(args) -> int:
    from kbert.explore.attention import select, text_attentions
    from kbert.explore.attention_html import render_attention_html
    from kbert.explore.heads_model import PretrainingHeads

    heads = PretrainingHeads.from_model_dir(args.model_dir, heads=())
    _note_cut(heads, [args.text_a], None if args.text_b is None else [args.text_b])
    tokens, attention = text_attentions(heads, args.text_a, args.text_b)
    part, layers, head_numbers = select(attention, args.layer, args.head)
    title = f"Attention of {pathlib.Path(args.model_dir).name}: {args.text_a}" + (
        f" | {args.text_b}" if args.text_b else "")
    from kbert.model_dir import atomic_write

    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    html = render_attention_html(tokens, part, layers, head_numbers, title=title)
    atomic_write(out, lambda tmp: tmp.write_text(html, encoding="utf-8"))  # a reader never sees half a page
    print(f"attention page: {out}")
    if args.png:
        from kbert.explore.attention_png import render_attention_png

        print(f"attention PNG:  {render_attention_png(tokens, part, args.png, layers, head_numbers, title=title)}")
    return 0


def _short(text: str, limit: int = 60) -> str:
    """``text`` quoted, its middle elided when long (a line on stderr, not the whole input)."""
    return repr(text if len(text) <= limit else text[:limit // 2] + " ... " + text[-limit // 2:])


def _note_cut(heads, text_a, text_b) -> None:
    """One line on stderr when the text (pair) is longer than the model reads: it is cut, silently
    otherwise."""
    tokens, _ = heads.uncut(text_a, text_b)
    cut = heads.preprocessor.seq_length
    if int(tokens[0]) > cut:
        print(f"note: the text{'s are' if text_b is not None else ' is'} cut to {cut} tokens (of {int(tokens[0])}): "
              "the model sees only the first part", file=sys.stderr)


def workshop_data_command(args) -> int:
    from kbert.explore import ene_workshop

    corpus = args.corpus
    if corpus is None:
        from kbert.data.shared import shared_data_dir

        corpus = (shared_data_dir() or pathlib.Path("../shared/data")) / ene_workshop.CORPUS_NAME
    if not pathlib.Path(corpus).is_file():
        raise UserError(f"no corpus at {corpus} (give --corpus: JSQuAD's jsquad_wikipedia.txt)")
    for name, count in ene_workshop.make_dataset(corpus, args.out_dir, unit=args.unit).items():
        print(f"{pathlib.Path(args.out_dir) / name}: {count} rows")
    return 0


def workshop_score_command(args) -> int:
    from kbert.explore import ene_workshop

    scores = ene_workshop.score(args.predictions, args.answers, args.input)
    print(json.dumps(scores))
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    commands = {"fill-mask": fill_mask_command, "next-sentence": next_sentence_command,
                "attention": attention_command, "workshop-data": workshop_data_command,
                "workshop-score": workshop_score_command}
    return commands[args.command](args)  # a kbert.Error: one line, through kbert.cli_support.run

