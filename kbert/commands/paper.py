"""python -m kbert.paper TABLE --scale micro|compact|paper --out DIR: one of the BERT paper's tables.

TABLE is table1 (GLUE), table2 (SQuAD 1.1), table5 (pre-training tasks: NSP, left-to-right LM),
table6 (model size), table7 (CoNLL-2003 NER, fine-tuning and feature-based) or table8 (masking).
Each row is pre-trained on the same corpus and budget, then fine-tuned on the table's tasks with
the paper's protocol (a learning-rate grid, restarts, the best on dev kept) over --seeds; DIR gets
TABLE.md, TABLE.json and TABLE.png, kbert's numbers beside the paper's. Every pre-training and
fine-tuning is a cell under DIR/cells/: run the same command again after a stop and it goes on
where it stopped; tables written to one DIR share their common cells. See docs/paper.md.
"""

from __future__ import annotations

import argparse


def parse_args(argv=None):
    from kbert.cli_support import ArgumentParser, add_arguments, add_backend_flag, prog
    from kbert.paper.run import PaperOptions
    from kbert.paper.scales import SCALES
    from kbert.paper.tables import TABLES

    p = ArgumentParser(prog=prog("paper"), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("table", choices=tuple(TABLES), help="the paper's table to run")
    add_backend_flag(p)
    fields = [name for name in PaperOptions.__dataclass_fields__ if name != "table"]
    add_arguments(p, PaperOptions, only=fields)
    for action in p._actions:  # the choices argparse can check itself
        if action.dest == "scale":
            action.choices = tuple(SCALES)
        elif action.dest == "strategy":
            action.choices = ("auto", "one_device", "mirrored", "multi_worker", "tpu")
        elif action.dest == "mixed_precision":
            action.choices = ("float32", "mixed_bfloat16", "mixed_float16")
        elif action.dest == "corpus_format":
            action.choices = ("prose", "sentences")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    from kbert.cli_support import from_args, use_backend

    use_backend(args.backend)  # before anything imports Keras
    from kbert.paper.run import PaperOptions, paper_table

    table = paper_table(from_args(PaperOptions, args))
    for path in table["files"].values():
        print(f"wrote {path}")
    return 0
