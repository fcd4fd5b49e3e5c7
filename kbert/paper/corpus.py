"""The pre-training data of a table run, one cell shared by every variant: the corpus's files
(``--corpus GLOB``; the corpus shipped in ``kbert/resources/corpus`` by default, as the
``kbert pretrain`` demo) split into a training part and a held-out part (the end of each file),
a WordPiece vocabulary learned from the training part, and both parts as pre-training TFRecords
written by ``pipelines.pretraining_data`` (masks are drawn while training, so every masking
variant and the No-NSP variant read the same records).
"""

from __future__ import annotations

import glob
import hashlib
import pathlib

from kbert.errors import DataError

SHIPPED = pathlib.Path(__file__).parents[1] / "resources" / "corpus"


def corpus_files(pattern: str | None) -> list[pathlib.Path]:
    """The files of ``pattern`` (None: the shipped corpus's ``*.txt``), sorted; a DataError when none."""
    pattern = pattern or str(SHIPPED / "*.txt")
    files = sorted(pathlib.Path(p) for p in glob.glob(pattern) if pathlib.Path(p).is_file())
    if not files:
        raise DataError(pattern, "no corpus file matches (--corpus GLOB of text files)")
    return files


def corpus_digest(files: list[pathlib.Path]) -> list:
    """[name, sha256] of each file: the data cell's key names the text, not where it lies."""
    digests = []
    for path in files:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        digests.append([path.name, h.hexdigest()])
    return digests


def split_corpus(files, cell_dir: pathlib.Path, max_chars: int | None, heldout_share: float) -> tuple:
    """Writes ``text/train/NAME`` (each file's start, at most ``max_chars`` characters read) and
    ``text/heldout.txt`` (the last ``heldout_share`` of each file's lines); returns their globs."""
    train_dir = cell_dir / "text" / "train"
    train_dir.mkdir(parents=True, exist_ok=True)
    heldout = []
    for i, path in enumerate(files):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(max_chars) if max_chars else f.read()
        lines = text.splitlines()
        cut = len(lines) - max(1, round(len(lines) * heldout_share)) if len(lines) > 1 else len(lines)
        (train_dir / f"{i:03d}-{path.stem}.txt").write_text("\n".join(lines[:cut]) + "\n", encoding="utf-8")
        heldout += lines[cut:] + [""]
    (cell_dir / "text" / "heldout.txt").write_text("\n".join(heldout) + "\n", encoding="utf-8")
    return str(train_dir / "*.txt"), str(cell_dir / "text" / "heldout.txt")


def prepare_corpus(files, cell_dir: pathlib.Path, scale, corpus_format: str, log=print) -> dict:
    """The data cell's work: split, vocabulary, TFRecords. Returns the paths (relative to
    ``cell_dir``) and the vocabulary's size."""
    from pipelines.pretraining_data import run
    from kbert.text.vocab_learning import learn_vocab, write_vocab

    train, heldout = split_corpus(files, cell_dir, scale.corpus_chars, scale.heldout_share)
    log(f"learning a {scale.vocab_size}-token WordPiece vocabulary from {len(files)} file(s)", flush=True)
    vocab = cell_dir / "vocab.txt"
    write_vocab(learn_vocab([train], scale.vocab_size, log=None), vocab)
    records = cell_dir / "records"
    common = ["--vocab", str(vocab), "--format", corpus_format, "--max-seq-length", str(scale.seq_length)]
    log("writing pre-training TFRecords (pipelines.pretraining_data)", flush=True)
    run(["--input", train, "--output", str(records / "train"), "--num-shards", "2", *common])
    run(["--input", heldout, "--output", str(records / "eval"), "--num-shards", "1", *common])
    vocab_size = sum(1 for line in vocab.read_text(encoding="utf-8").splitlines() if line)
    return {"vocab": "vocab.txt", "train_data": "records/train-*.tfrecord", "eval_data": "records/eval-*.tfrecord",
            "vocab_size": vocab_size, "files": [p.name for p in files]}
