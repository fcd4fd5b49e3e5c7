"""The paper's experiments, one call per table: ``kbert.paper_table(kbert.PaperOptions(...))`` and
the command ``kbert paper TABLE --scale SCALE --out DIR`` (docs/paper.md).

tables.py: the tables' rows, columns and the paper's numbers; scales.py: the scales' budgets;
corpus.py: the pre-training data; cells.py: resumable units of work; run.py: a table run;
report.py: its Markdown, JSON and PNG.
"""
