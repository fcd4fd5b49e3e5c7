"""python -m kbert.features MODEL_DIR --input ROWS.jsonl --output OUT.npz [--seq-length 128]

Per-token features of texts from a frozen encoder (the paper's §5.4 feature-based approach) to
one .npz file. ROWS.jsonl has one JSON object a line: ``{"text_a": "..."}`` or ``{"text_a":
"...", "text_b": "..."}`` (a pair, packed [CLS] A [SEP] B [SEP]); both kinds may be mixed. Row i of
every array is line i of the file (blank lines skipped). Arrays, all padded to --seq-length:

  input_word_ids, input_mask, input_type_ids   [rows, seq] int32, the packed inputs
  sequence_output                              [rows, seq, H] the last block (zeros at padding)
  pooled_output                                [rows, H]
  embeddings, second_to_last_hidden, last_hidden, sum_last_four_hidden,
  concat_last_four_hidden ([rows, seq, 4H]), sum_all_layers
                                               the combinations of the paper's Table 7 (see
                                               kbert.features.extract; zeros at padding; those that need
                                               more blocks than the encoder has are left out)
"""

from __future__ import annotations

import argparse
import pathlib


def parse_args(argv=None):
    from kbert.cli_support import ArgumentParser, add_verbose_flag, prog

    p = ArgumentParser(prog=prog("features"), description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model_dir", metavar="MODEL_DIR", help="kbert model directory (kbert.convert or kbert.pretrain output)")
    p.add_argument("--input", required=True, metavar="ROWS.jsonl", help='one {"text_a": ..., ["text_b": ...]} a line')
    p.add_argument("--output", required=True, metavar="OUT.npz",
                   help="the .npz file to write (a new file, written atomically)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --output whole")
    p.add_argument("--seq-length", type=int, default=128, help="pad/truncate every row to this length (default 128)")
    p.add_argument("--batch-size", type=int, default=32, help="rows per encoder call (default 32)")
    add_projector_arguments(p)  # --projector LOGDIR: the arrays for TensorBoard's projector
    add_verbose_flag(p)
    args = p.parse_args(argv)
    if args.seq_length < 2:
        p.error(f"--seq-length must be at least 2 ([CLS] and [SEP]), got {args.seq_length}")
    if args.batch_size < 1:
        p.error(f"--batch-size must be positive, got {args.batch_size}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    from kbert.cli_support import UserError, require_dir

    require_dir(args.model_dir, "model directory")
    output = pathlib.Path(args.output)
    if not output.parent.is_dir():
        raise UserError(f"--output {output}: directory {output.parent} does not exist")
    if output.suffix != ".npz":  # numpy's savez adds it
        output = output.with_name(output.name + ".npz")
    from kbert.model_dir import atomic_write, check_output

    check_output(output, [args.input, args.model_dir], overwrite=args.overwrite)
    from kbert.features.extract import extract_arrays, read_rows

    rows = read_rows(args.input)
    arrays = extract_arrays(args.model_dir, rows, args.seq_length, args.batch_size)
    import numpy as np

    atomic_write(output, lambda tmp: np.savez(tmp, **arrays))
    shapes = ", ".join(f"{k} {list(v.shape)}" for k, v in arrays.items())
    print(f"wrote {len(rows)} rows to {output}: {shapes}")
    line = projector_from_args(args, arrays, rows)
    if line:
        print(line)
    return 0


# -- --projector: the arrays for TensorBoard's projector (kbert.explore.projector) -------------------
def add_projector_arguments(parser) -> None:
    """``--projector LOGDIR``, ``--projector-level`` and ``--projector-layer``."""
    from kbert.explore.projector import LEVELS

    parser.add_argument("--projector", metavar="LOGDIR",
                        help="also write the embeddings for TensorBoard's projector to LOGDIR")
    parser.add_argument("--projector-level", choices=LEVELS, default="token",
                        help="one point per token (default) or per row (the mean of its tokens)")
    parser.add_argument("--projector-layer", default="last_hidden",
                        help="which of the output arrays to project (default last_hidden)")


def projector_from_args(args, arrays: dict, rows) -> str | None:
    """Writes the projector files when ``--projector`` was given; returns the line to print."""
    if not getattr(args, "projector", None):
        return None
    from kbert.explore.projector import write_features_projector
    from kbert.text.registry import load_tokenizer

    vocab = load_tokenizer(args.model_dir).get_vocabulary()
    logdir = write_features_projector(args.projector, arrays, rows, vocab, args.projector_level, args.projector_layer)
    return f"projector: tensorboard --logdir {logdir}  (tab Projector)"
