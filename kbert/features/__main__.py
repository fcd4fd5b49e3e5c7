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
                                               kbert.features; zeros at padding; those that need
                                               more blocks than the encoder has are left out)
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

TEXT_KEYS = ("text_a", "text_b")


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
    from kbert.explore.projector import add_projector_arguments

    add_projector_arguments(p)  # --projector LOGDIR: the arrays for TensorBoard's projector
    add_verbose_flag(p)
    args = p.parse_args(argv)
    if args.seq_length < 2:
        p.error(f"--seq-length must be at least 2 ([CLS] and [SEP]), got {args.seq_length}")
    if args.batch_size < 1:
        p.error(f"--batch-size must be positive, got {args.batch_size}")
    return args


def read_rows(path) -> list[dict]:
    """The rows of a JSONL file; a DataError names the line and field of anything malformed."""
    from kbert.errors import DataError

    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(2, "No such file", str(path))
    rows = []
    expected = 'a JSON object {"text_a": "...", "text_b": "..." (optional)}'
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(path, expected, line=number, value=f"{line.strip()[:80]} ({e.msg})") from None
            if not isinstance(row, dict):
                raise DataError(path, expected, line=number, value=row)
            unknown = sorted(set(row) - set(TEXT_KEYS))
            if unknown:
                raise DataError(path, "only the keys 'text_a' and 'text_b'", line=number, field=unknown[0],
                                value=row[unknown[0]])
            for key in TEXT_KEYS:
                if key in row and not isinstance(row[key], str) or key == "text_a" and key not in row:
                    raise DataError(path, "a string", line=number, field=key,
                                    **({"value": row[key]} if key in row else {}))
            rows.append(row)
    if not rows:
        raise DataError(path, "at least one row")
    return rows


def extract(model_dir, rows: list[dict], seq_length: int = 128, batch_size: int = 32) -> dict:
    """The arrays described in the module docstring, for ``rows`` (dicts with text_a[, text_b])."""
    import keras
    import numpy as np
    import tensorflow as tf

    from kbert.features.extract import COMBINATIONS, FeatureExtractor, check_combinations, combine_layers
    from kbert.tasks.text_inputs import text_segments

    from kbert.model_dir import load_config

    num_blocks = load_config(model_dir).num_hidden_layers
    names = []
    for name in COMBINATIONS:
        try:
            names.append(check_combinations((name,), num_blocks)[0])
        except ValueError:  # e.g. concat of the last four blocks of a 2-block encoder
            pass
    singles = FeatureExtractor.from_model_dir(model_dir, seq_length=seq_length, num_segments=1, dynamic_length=False,
                                              combinations=tuple(names))
    encoder = singles.encoder
    tokenizer = singles.preprocessor.tokenizer
    # A tokenizer with a Python step (MeCab) gets its words here; the graph part takes them.
    prepare = (lambda texts: texts) if getattr(tokenizer, "in_graph", True) else tokenizer.pre_tokenize
    # One pass gives the pooled output and every layer (the embedding output, then each block).
    all_outputs = keras.Model(encoder.inputs, [encoder.output["pooled_output"], encoder.embeddings.output,
                                               *encoder.output["encoder_outputs"]])

    @tf.function(reduce_retracing=True)
    def step(segments):
        packed = singles.preprocessor(segments)
        pooled, *layers = all_outputs(packed, training=False)
        mask = tf.cast(packed["input_mask"], layers[0].dtype)[:, :, None]
        combos = {k: v * mask for k, v in combine_layers(layers, names).items()}
        return {**packed, "sequence_output": layers[-1] * mask, "pooled_output": pooled, **combos}

    result = {}
    for num_segments in (1, 2):
        index = [i for i, row in enumerate(rows) if ("text_b" in row) == (num_segments == 2)]
        for start in range(0, len(index), batch_size):
            chunk = index[start:start + batch_size]
            texts = {key: tf.constant(prepare([rows[i][key] for i in chunk]), tf.string)
                     for key in TEXT_KEYS[:num_segments]}
            out = step(text_segments(texts, num_segments, "kbert.features"))
            for key, value in out.items():
                value = value.numpy()
                if key not in result:
                    result[key] = np.zeros((len(rows), *value.shape[1:]), value.dtype)
                result[key][chunk] = value
    return result


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
    rows = read_rows(args.input)
    arrays = extract(args.model_dir, rows, args.seq_length, args.batch_size)
    import numpy as np

    atomic_write(output, lambda tmp: np.savez(tmp, **arrays))
    shapes = ", ".join(f"{k} {list(v.shape)}" for k, v in arrays.items())
    print(f"wrote {len(rows)} rows to {output}: {shapes}")
    from kbert.explore.projector import projector_from_args

    line = projector_from_args(args, arrays, rows)
    if line:
        print(line)
    return 0


if __name__ == "__main__":
    from kbert.cli_support import run as run_cli

    sys.exit(run_cli("features", main))
