"""A table run's report: ``OUT/TABLE.json`` (every number), ``OUT/TABLE.md`` (the table as the
paper prints it, kbert's mean ± spread beside the paper's number) and ``OUT/TABLE.png`` (a bar
chart per column; drawn when matplotlib, kbert's ``explore`` extra, is installed, otherwise
left out with a line saying so: the numbers never wait on a picture).

The spread is the sample standard deviation over the seeds (none for one seed).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import statistics

from kbert.paper.cells import write_json


def summarize(values: list) -> tuple:
    """``(mean, spread)`` of ``values``: the mean and the sample standard deviation (None for fewer
    than two values; both None for none)."""
    if not values:
        return None, None
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else None


def build_table(spec, scale, rows: list, budget: dict) -> dict:
    """The JSON form of a table: ``rows`` (label, sizes, cells with ``values``, ``status``,
    ``paper``) completed with each cell's mean and spread, the columns, the scale and the budget."""
    for row in rows:
        for cell in row["cells"]:
            cell["mean"], cell["spread"] = summarize(cell["values"])
    return {"table": spec.name, "title": spec.title, "note": spec.note, "scale": dataclasses.asdict(scale),
            "columns": [dataclasses.asdict(c) for c in spec.columns], "rows": rows, "budget": budget}


def number(value, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def cell_text(cell: dict, digits: int) -> str:
    if cell["status"] != "ok":
        text = cell["status"]
    else:
        text = number(cell["mean"], digits) + (f" ± {cell['spread']:.{digits}f}" if cell["spread"] is not None else "")
    return f"{text} ({number(cell['paper'], digits)})"


def markdown(table: dict) -> str:
    """The table as Markdown: a cell is ``kbert mean ± spread (paper)``; notes and the budget below."""
    digits = [2 if c["task"] == "lm_perplexity" else 1 for c in table["columns"]]
    lines = [f"# {table['title']}", "", f"Scale `{table['scale']['name']}`; each cell: kbert's mean ± spread over "
             f"{table['budget']['seeds']} seed(s), the paper's number in brackets.", "",
             "| " + " | ".join(["Variant", "L/H/A trained", *(c["label"] for c in table["columns"])]) + " |",
             "|" + "---|" * (len(table["columns"]) + 2)]
    notes = []
    for row in table["rows"]:
        texts = [cell_text(cell, d) for cell, d in zip(row["cells"], digits)]
        lines.append(f"| {row['label']} | {'/'.join(map(str, row['size']))} | " + " | ".join(texts) + " |")
    for i, column in enumerate(table["columns"]):  # a note every row shares is said once
        said = [row["cells"][i].get("note") for row in table["rows"]]
        if said[0] and len(set(said)) == 1 and len(said) > 1:
            notes.append(f"{column['label']}: {said[0]}")
        else:
            notes += [f"{row['label']}, {column['label']}: {n}" for row, n in zip(table["rows"], said) if n]
    if table["note"]:
        lines += ["", table["note"]]
    if notes:
        lines += ["", *(f"- {n}" for n in dict.fromkeys(notes))]
    s, b = table["scale"], table["budget"]
    lines += ["", "## Budget", "",
              f"- pre-training: {s['steps']} steps of batch {s['batch_size']}, {s['seq_length']} tokens, learning rate "
              f"{s['learning_rate']:g}, vocabulary {s['vocab_size']}; sizes: the paper's L/H/A scaled to "
              f"(ceil(L/{s['layer_divisor']}), H/{s['hidden_divisor']}, A)",
              f"- fine-tuning: {s['epochs']} epoch(s) of batch {s['finetune_batch_size']}, learning rates "
              f"{', '.join(f'{r:g}' for r in s['learning_rates'])} (best on dev kept), restarts {s['restarts']} "
              f"({s['small_task_restarts']} on small GLUE tasks), examples: train "
              f"{s['max_train_examples'] or 'all'}, dev {s['max_eval_examples'] or 'all'}",
              f"- compute: {b['cells']} cells, {b['cell_seconds']} s of work in all (whenever each ran); this "
              f"invocation {b['this_run_seconds']} s"]
    return "\n".join(lines) + "\n"


def plot(table: dict, path: pathlib.Path) -> None:
    """One bar chart per column: kbert's mean (error bar: spread) per row, the paper's as a marker."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = table["columns"]
    fig, axes = plt.subplots(1, len(columns), figsize=(2.2 + 2.6 * len(columns), 3.6), squeeze=False)
    labels = [row["label"] for row in table["rows"]]
    for i, (ax, column) in enumerate(zip(axes[0], columns)):
        cells = [row["cells"][i] for row in table["rows"]]
        xs = range(len(cells))
        ax.bar(xs, [c["mean"] or 0 for c in cells], yerr=[c["spread"] or 0 for c in cells], color="tab:blue",
               label="kbert")
        ax.scatter(xs, [c["paper"] if c["paper"] is not None else float("nan") for c in cells], color="tab:red",
                   marker="_", s=300, label="paper", zorder=3)
        ax.set_title(column["label"], fontsize=9)
        ax.set_xticks(list(xs), labels, rotation=60, ha="right", fontsize=7)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"{table['title']} (scale {table['scale']['name']})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_table(table: dict, out_dir: pathlib.Path, log=print) -> dict:
    """Writes ``TABLE.json``, ``TABLE.md`` and (matplotlib installed) ``TABLE.png`` to ``out_dir``;
    returns ``table`` with ``files``: the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    name = table["table"]
    files = {"json": out_dir / f"{name}.json", "md": out_dir / f"{name}.md", "png": out_dir / f"{name}.png"}
    try:
        plot(table, files["png"])
    except ImportError as e:
        log(f"{files['png']} not drawn: {e} (pip install 'kbert[explore]' installs matplotlib)", flush=True)
        files.pop("png")
    table = {**table, "files": {k: str(v) for k, v in files.items()}}
    write_json(files["json"], table)
    text = markdown(table)
    tmp = files["md"].with_name(files["md"].name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(files["md"])
    return table


def load_table(path) -> dict:
    return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
