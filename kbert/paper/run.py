"""``paper_table(PaperOptions) -> table``: one of the paper's tables at a scale (docs/paper.md).

For each row (variant) of the table (``kbert.paper.tables``): the variant is pre-trained on the
run's corpus with the scale's budget (``kbert.pretrain``), then fine-tuned on each column's task
with the paper's protocol (``kbert.finetune_search``: the scale's learning-rate grid and
restarts, the best run on dev kept) once per seed. Every step is a resumable cell
(``kbert.paper.cells``) under ``OUT/cells/``; the table is written as ``OUT/TABLE.md``,
``OUT/TABLE.json`` and ``OUT/TABLE.png`` (``kbert.paper.report``).

A column whose data the user did not give (a GLUE folder not in ``glue_dir``, no ``conll_dir``)
is reported as "no data" and does not stop the table.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import time

from kbert.api_export import kbert_export
from kbert.errors import OptionsError
from kbert.options import option
from kbert.paper import cells, corpus, report
from kbert.paper.scales import SCALES, get_scale
from kbert.paper.tables import TABLES

# Pre-training options that decide where or how fast a run trains, not what it learns: left out
# of a pre-training cell's key, so a table run on a GPU finds the cells of one on a CPU.
PLACEMENT_FIELDS = {"train_data", "eval_data", "vocab", "model_dir", "config", "strategy", "tpu",
                    "coordinator_address", "num_processes", "process_id", "checkpoint_every",
                    "steps_per_execution", "jit_compile", "attention"}
SEED_STRIDE = 1000  # seed s fine-tunes with seeds 1000 s, 1000 s + 1, ... (one per restart)


@kbert_export("kbert.PaperOptions")
@dataclasses.dataclass(frozen=True)
class PaperOptions:
    """The options of ``kbert.paper_table`` (``kbert paper`` has one flag per field).

    Attributes:
        table: ``table1`` (GLUE), ``table2`` (SQuAD 1.1), ``table5`` (pre-training tasks),
            ``table6`` (model size), ``table7`` (NER, feature-based), ``table8`` (masking).
        out: the output folder: the table's files and its cells (shared by tables written there).
        scale: ``micro``, ``compact`` or ``paper`` (``kbert.paper.scales``).
        corpus: a glob of raw text files to pre-train on (None: the corpus kbert ships).
        corpus_format: ``prose`` (paragraphs) or ``sentences`` (one a line, documents apart by a
            blank line), as ``pipelines.pretraining_data --format`` reads it.
        glue_dir: a folder of GLUE task folders (MNLI, QNLI, MRPC, ...) as download_glue_data.py writes.
        conll_dir: CoNLL-2003 (train.txt, valid.txt); squad_dir: SQuAD 1.1 (train-v1.1.json,
            dev-v1.1.json; with dev only, its first 36 articles train and the rest evaluate).
        seeds: fine-tuning seeds per cell (mean and spread over them).
        strategy, mixed_precision: passed to pre-training and fine-tuning.

    Examples:
        >>> import kbert
        >>> kbert.PaperOptions(table="table6", out="runs/paper").scale
        'micro'
    """

    table: str = option(help="table1, table2, table5, table6, table7 or table8")
    out: str = option(help="output folder: TABLE.md, TABLE.json, TABLE.png and the cells")
    scale: str = option("micro", help="micro (minutes on a CPU), compact (hours on a GPU) or paper")
    corpus: str | None = option(None, help="glob of raw text files to pre-train on (default: the shipped corpus)")
    corpus_format: str = option("prose", help="prose or sentences (pipelines.pretraining_data --format)")
    glue_dir: str | None = option(None, help="folder of GLUE task folders (MNLI, QNLI, MRPC, SST-2, ...)")
    conll_dir: str | None = option(None, help="CoNLL-2003 folder (train.txt, valid.txt)")
    squad_dir: str | None = option(None, help="SQuAD 1.1 folder (train-v1.1.json, dev-v1.1.json)")
    seeds: int = option(1, help="fine-tuning seeds per cell")
    strategy: str = option("auto", help="TensorFlow pre-training strategy (auto, one_device, mirrored, ...)")
    mixed_precision: str = option("float32", help="float32, mixed_bfloat16 or mixed_float16")

    def __post_init__(self):
        if self.table not in TABLES:
            raise OptionsError(f"table {self.table!r}; expected one of {', '.join(TABLES)}", option="table",
                               value=self.table)
        get_scale(self.scale)
        if self.corpus_format not in ("prose", "sentences"):
            raise OptionsError(f"corpus_format {self.corpus_format!r}; expected prose or sentences",
                               option="corpus_format", value=self.corpus_format)
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 1:
            raise OptionsError(f"seeds must be a positive whole number, got {self.seeds!r}", option="seeds",
                               value=self.seeds)
        for name in ("glue_dir", "conll_dir", "squad_dir"):
            value = getattr(self, name)
            if value is not None and not pathlib.Path(value).is_dir():
                raise OptionsError(f"{name} {value}: no such folder", option=name, value=value)


class TableRun:
    """The cells of one table run, made on demand and kept by key."""

    def __init__(self, options: PaperOptions, log):
        from kbert.tasks.core.options import FinetuneOptions
        from kbert.training.pretrain import PretrainOptions

        self.options, self.log, self.out = options, log, pathlib.Path(options.out)
        self.spec, self.scale = TABLES[options.table], SCALES[options.scale]
        self.Pretrain, self.Finetune = PretrainOptions, FinetuneOptions
        self.seconds = {}  # cell key -> seconds its work took (when it ran, in this or an earlier sitting)
        self._data = None

    def timed(self, work):
        def run(cell_dir):
            start = time.time()
            result = work(cell_dir)
            return {**result, "seconds": round(time.time() - start, 1)}
        return run

    def data(self) -> tuple[str, dict]:
        if self._data is None:
            files = corpus.corpus_files(self.options.corpus)
            spec = {"corpus": corpus.corpus_digest(files), "format": self.options.corpus_format,
                    **{k: getattr(self.scale, k) for k in ("corpus_chars", "heldout_share", "vocab_size", "seq_length")}}
            self._data = cells.run_cell(self.out, "data", spec, self.timed(
                lambda d: corpus.prepare_corpus(files, d, self.scale, self.options.corpus_format, self.log)), self.log)
            self.seconds[self._data[0]] = self._data[1].get("seconds", 0.0)
        return self._data

    def config(self, size: tuple, vocab_size: int) -> dict:
        from kbert.config import BertConfig

        layers, hidden, heads = self.scale.size(size)
        return BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                          num_attention_heads=heads, intermediate_size=4 * hidden,
                          max_position_embeddings=max(512, self.scale.seq_length)).to_dict()

    def pretrain(self, row) -> tuple[str, dict]:
        """The row's pre-training cell: ``(key, result)``; result["model_dir"] is absolute."""
        data_key, data = self.data()
        data_dir = self.out / cells.CELLS / data_key
        config = self.config(row.size, data["vocab_size"])
        s = self.scale
        options = self.Pretrain(
            train_data=str(data_dir / data["train_data"]), eval_data=str(data_dir / data["eval_data"]),
            vocab=str(data_dir / data["vocab"]), model_dir="", config="", seq_length=s.seq_length,
            max_predictions=s.max_predictions, batch_size=s.batch_size, steps=s.steps, learning_rate=s.learning_rate,
            eval_steps=s.eval_steps, checkpoint_every=s.checkpoint_every, seed=0, strategy=self.options.strategy,
            mixed_precision=self.options.mixed_precision)
        options = dataclasses.replace(options, **dict(row.pretrain))
        if getattr(options, "objective", "mlm") == "ltr":  # it predicts every next token: no masking options
            default = {f.name: f.default for f in dataclasses.fields(options)}["max_predictions"]
            options = dataclasses.replace(options, max_predictions=default)
        spec = {"data": data_key, "config": config, "size": list(self.scale.size(row.size)),
                "options": {k: v for k, v in dataclasses.asdict(options).items() if k not in PLACEMENT_FIELDS}}

        def work(cell_dir):
            import json
            import keras

            from kbert.training.pretrain import pretrain

            keras.backend.clear_session()
            (cell_dir / "bert_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
            results = pretrain(dataclasses.replace(options, model_dir=str(cell_dir / "model"),
                                                   config=str(cell_dir / "bert_config.json")), log=self.log)
            loss = results.get("eval_mlm_loss")
            return {**results, "model_dir": "model", "size": spec["size"],
                    "lm_perplexity": math.exp(loss) if loss is not None else None}

        key, result = cells.run_cell(self.out, "pretrain", spec, self.timed(work), self.log)
        self.seconds[key] = result.get("seconds", 0.0)
        return key, {**result, "model_dir": str(self.out / cells.CELLS / key / "model")}

    def column_data(self, column) -> dict | None:
        """FinetuneOptions fields that point ``column``'s task at its data; None: not given."""
        o = self.options
        if column.data.startswith("glue/"):
            folder = pathlib.Path(o.glue_dir or "", column.data[5:])
            return {"data_dir": str(folder.resolve())} if o.glue_dir and folder.is_dir() else None
        if column.data == "conll":
            return {"data_dir": str(pathlib.Path(o.conll_dir).resolve())} if o.conll_dir else None
        if column.data == "squad" and o.squad_dir:
            folder = pathlib.Path(o.squad_dir).resolve()
            if (folder / "train-v1.1.json").is_file():
                return {"data_dir": str(folder)}
            if (folder / "dev-v1.1.json").is_file():  # dev only: its articles split in two
                from kbert.tasks.span_qa.task import ArticlesOptions

                dev = str(folder / "dev-v1.1.json")
                return {"train_file": dev, "eval_file": dev,
                        "named_options": ArticlesOptions(train_articles=":36", eval_articles="36:")}
        return None

    def finetune_options(self, row, column, data: dict, seed: int):
        s = self.scale
        squad = column.task.startswith("squad")
        seq = s.squad_seq_length if squad else s.finetune_seq_length
        extra = {}
        if squad and seq < 128:  # micro: a window of 64 tokens holds a short question and some context
            from kbert.tasks.span_qa.task import SquadOptions

            extra = {"doc_stride": seq // 2, "task_options": SquadOptions(max_query_length=seq // 4)}
        hidden = s.size(row.size)[1]
        overrides = {k: hidden if v == "H" else v for k, v in self.finetune_pairs(row, column)}
        return self.Finetune(task=column.task, init="", model_dir="", eval_split=column.eval_split, epochs=s.epochs,
                             batch_size=s.finetune_batch_size, seq_length=seq, max_train_examples=s.max_train_examples,
                             max_eval_examples=s.max_eval_examples, seed=SEED_STRIDE * seed,
                             mixed_precision=self.options.mixed_precision, **data, **extra, **overrides)

    @staticmethod
    def finetune_pairs(row, column) -> tuple:
        return (*row.finetune, *((("features", column.features),) if column.features else ()))

    def finetune(self, row, column, data: dict, seed: int, pretrained: tuple) -> dict:
        """One fine-tuning cell (a search over the scale's grid), its result."""
        from kbert.training.search import SearchOptions

        options = self.finetune_options(row, column, data, seed)
        search = SearchOptions(learning_rates=self.scale.learning_rates, restarts=self.scale.restarts_for(column.task))
        spec = {"pretrain": pretrained[0], "task": column.task, "seed": seed, "search": dataclasses.asdict(search),
                "options": {k: v for k, v in dataclasses.asdict(options).items() if k not in ("init", "model_dir")}}

        def work(cell_dir):
            from kbert.training.search import finetune_search

            results = finetune_search(dataclasses.replace(options, init=pretrained[1]["model_dir"],
                                                          model_dir=str(cell_dir / "model")),
                                      search, progress_bar=False, log=self.log)
            keep = ("best", "selected", "spread", "main_metric", "train_examples", "eval_examples")
            return {k: results[k] for k in keep if k in results}

        key, result = cells.run_cell(self.out, "finetune", spec, self.timed(work), self.log)
        self.seconds[key] = result.get("seconds", 0.0)
        return result

    def cell(self, row, column) -> dict:
        """The table cell of ``row`` x ``column``: status, values over seeds, the paper's number."""
        if column.task == "lm_perplexity":
            value = self.pretrain(row)[1]["lm_perplexity"]
            return {"status": "ok" if value is not None else "no data", "values": [] if value is None else [value]}
        data = self.column_data(column)
        if data is None:
            return {"status": "no data", "note": f"{column.data} not given", "values": []}
        pretrained = self.pretrain(row)
        scale = 1.0 if column.task.startswith("squad") else 100.0  # every number as the paper prints it
        values = [scale * self.finetune(row, column, data, seed, pretrained)["best"][column.metric]
                  for seed in range(self.options.seeds)]
        note = "SQuAD dev articles 36: (trained on articles :36)" if "train_file" in data else ""
        return {"status": "ok", "values": values, **({"note": note} if note else {})}


def check_data(run: TableRun) -> None:
    flags = {"glue": "--glue-dir", "conll": "--conll-dir", "squad": "--squad-dir"}
    columns = run.spec.columns
    if not any(c.data == "corpus" or run.column_data(c) is not None for c in columns):
        wanted = sorted({flags[c.data.split("/")[0]] for c in columns})
        raise OptionsError(f"{run.spec.name} has no data to fine-tune on: give {' or '.join(wanted)} "
                           f"(its data: {', '.join(dict.fromkeys(c.data for c in columns))})", option=wanted[0].lstrip("-"))


@kbert_export("kbert.paper_table")
def paper_table(options: PaperOptions, *, log=print) -> dict:
    """Runs one of the paper's tables at a scale and writes it (``kbert.paper.run``'s docstring).

    Args:
        options: a ``kbert.PaperOptions``.
        log: where the cells' lines go (``print``).

    Returns:
        The table as written to ``OUT/TABLE.json``: its rows and columns, each cell's values over
        the seeds with mean, spread and the paper's number, the budget, and ``files`` (the paths written).

    Examples:
        >>> import kbert
        >>> kbert.paper_table(kbert.PaperOptions(table="table1", out="runs/paper"))
        Traceback (most recent call last):
        ...
        kbert.errors.OptionsError: table1 has no data to fine-tune on: give --glue-dir (its data: glue/MNLI, glue/QQP, glue/QNLI, glue/SST-2, glue/CoLA, glue/STS-B, glue/MRPC, glue/RTE)
    """
    run = TableRun(options, log)
    check_data(run)
    start = time.time()
    rows = [{"label": row.label, "size": list(run.scale.size(row.size)), "paper_size": list(row.size),
             "cells": [{**run.cell(row, column), "paper": paper} for column, paper in zip(run.spec.columns, row.paper)]}
            for row in run.spec.rows]
    table = report.build_table(run.spec, run.scale, rows, {
        "cell_seconds": round(sum(run.seconds.values()), 1), "cells": len(run.seconds),
        "this_run_seconds": round(time.time() - start, 1), "seeds": options.seeds})
    return report.write_table(table, pathlib.Path(options.out), log=log)
