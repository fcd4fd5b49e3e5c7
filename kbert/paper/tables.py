"""The paper's tables as data: their rows (variants), columns (task x metric) and Devlin et al.'s
numbers (arXiv 1810.04805), read by ``kbert.paper.run`` and ``kbert.paper.report``.

A row is a pre-training variant (``pretrain``: PretrainOptions fields set by
``dataclasses.replace``; ``size``: the paper's L/H/A, scaled by the run's ``kbert.paper.scales``)
fine-tuned with ``finetune`` (FinetuneOptions fields, e.g. ``features`` for Table 7's feature-based
rows; the value "H" stands for the scaled model's hidden size, e.g. ``bilstm``'s units). A column is a task and the metric read from its dev results; ``mismatched`` evaluates MNLI on
``dev_mismatched``; ``lm_perplexity`` is exp(held-out masked-LM loss) of the pre-training itself.
"""

from __future__ import annotations

import dataclasses

BASE = (12, 768, 12)
LARGE = (24, 1024, 16)


@dataclasses.dataclass(frozen=True)
class Column:
    """One column: ``task`` (a kbert task name, or ``lm_perplexity``), ``metric`` (its dev metric's
    name in ``eval_results.json``), ``eval_split`` (None: the task's dev split), ``data`` (the
    folder it reads: ``glue/NAME``, ``conll``, ``squad`` or ``corpus``) and ``features`` (a
    kbert.features combination: the column is feature-based whatever the row says)."""

    label: str
    task: str
    metric: str
    data: str
    eval_split: str | None = None
    features: str | None = None


@dataclasses.dataclass(frozen=True)
class Row:
    """One row: its label, the paper's model size (L, H, A), PretrainOptions and FinetuneOptions
    fields, and the paper's number for each column (None: the paper has none)."""

    label: str
    paper: tuple
    size: tuple = BASE
    pretrain: tuple = ()
    finetune: tuple = ()


@dataclasses.dataclass(frozen=True)
class TableSpec:
    name: str
    title: str
    columns: tuple
    rows: tuple
    note: str = ""


def glue(label, name, metric="accuracy", split=None):
    folder = {"mnli": "MNLI", "qqp": "QQP", "qnli": "QNLI", "sst2": "SST-2", "cola": "CoLA", "stsb": "STS-B",
              "mrpc": "MRPC", "rte": "RTE"}[name]
    return Column(label, f"glue/{name}", metric, f"glue/{folder}", split)


MNLI_M = glue("MNLI-m", "mnli")
NER = Column("NER F1", "conll2003", "f1", "conll")
SQUAD_F1 = Column("SQuAD F1", "squad/v1.1", "f1", "squad")

TABLE1 = TableSpec("table1", "Table 1: GLUE (the paper reports the test sets; kbert reports dev)", (
    MNLI_M, glue("MNLI-mm", "mnli", split="dev_mismatched"), glue("QQP F1", "qqp", "f1"), glue("QNLI", "qnli"),
    glue("SST-2", "sst2"), glue("CoLA MCC", "cola", "matthews_corrcoef"), glue("STS-B Spearman", "stsb", "spearman"),
    glue("MRPC F1", "mrpc", "f1"), glue("RTE", "rte")), (
    Row("BERT-Base", (84.6, 83.4, 71.2, 90.5, 93.5, 52.1, 85.8, 88.9, 66.4)),
    Row("BERT-Large", (86.7, 85.9, 72.1, 92.7, 94.9, 60.5, 86.5, 89.3, 70.1), size=LARGE)),
    note="The paper's numbers are GLUE test scores (its Table 1); kbert's are dev scores.")

TABLE2 = TableSpec("table2", "Table 2: SQuAD 1.1 dev", (
    Column("EM", "squad/v1.1", "exact_match", "squad"), SQUAD_F1), (
    Row("BERT-Base", (80.8, 88.5)), Row("BERT-Large", (84.1, 90.9), size=LARGE)))

LTR = (("objective", "ltr"),)
TABLE5 = TableSpec("table5", "Table 5: ablation over the pre-training tasks (dev)", (
    MNLI_M, glue("QNLI", "qnli"), glue("MRPC", "mrpc"), glue("SST-2", "sst2"), SQUAD_F1), (
    Row("BERT-Base", (84.4, 88.4, 86.7, 92.7, 88.5)),
    Row("No NSP", (83.9, 84.9, 86.5, 92.6, 87.9), pretrain=(("no_nsp", True),)),
    Row("LTR & No NSP", (82.1, 84.3, 77.5, 92.1, 77.8), pretrain=LTR),
    Row("+ BiLSTM", (82.1, 84.1, 75.7, 91.6, 84.9), pretrain=LTR, finetune=(("bilstm", "H"),))))

TABLE6 = TableSpec("table6", "Table 6: ablation over model size (dev accuracy; LM perplexity held out)", (
    Column("LM (ppl)", "lm_perplexity", "perplexity", "corpus"), MNLI_M, glue("MRPC", "mrpc"),
    glue("SST-2", "sst2")), tuple(
    Row(f"{L}/{H}/{A}", paper, size=(L, H, A)) for (L, H, A), paper in (
        ((3, 768, 12), (5.84, 77.9, 79.8, 88.4)), ((6, 768, 3), (5.24, 80.6, 82.2, 90.7)),
        ((6, 768, 12), (4.68, 81.9, 84.8, 91.3)), ((12, 768, 12), (3.99, 84.4, 86.7, 92.9)),
        ((12, 1024, 16), (3.54, 85.7, 86.9, 93.3)), ((24, 1024, 16), (3.23, 86.6, 87.8, 93.7)))),
    note="Rows are the paper's L/H/A; the model trained is that size scaled by --scale (see the budget).")

FEATURES = (("embeddings", "Embeddings", 91.0), ("second_to_last_hidden", "Second-to-Last Hidden", 95.6),
            ("last_hidden", "Last Hidden", 94.9), ("sum_last_four_hidden", "Weighted Sum Last Four Hidden", 95.9),
            ("concat_last_four_hidden", "Concat Last Four Hidden", 96.1),
            ("sum_all_layers", "Weighted Sum All 12 Layers", 95.5))
TABLE7 = TableSpec("table7", "Table 7: CoNLL-2003 NER, fine-tuning and feature-based (dev F1)", (NER,), (
    Row("Fine-tuning: BERT-Base", (96.4,)), Row("Fine-tuning: BERT-Large", (96.6,), size=LARGE),
    *(Row(f"Feature-based: {label}", (paper,), finetune=(("features", name),)) for name, label, paper in FEATURES)),
    note="Feature-based rows: a two-layer BiLSTM over the frozen BERT-Base encoder's chosen layers.")

MASKING = (((0.8, 0.1), (84.2, 95.4, 94.9)), ((1.0, 0.0), (84.3, 94.9, 94.0)), ((0.8, 0.2), (84.1, 95.2, 94.6)),
           ((0.8, 0.0), (84.4, 95.2, 94.7)), ((0.0, 0.8), (83.7, 94.8, 94.6)), ((0.0, 1.0), (83.6, 94.9, 94.6)))
TABLE8 = TableSpec("table8", "Table 8: masking procedures (MASK/SAME/RND; dev)", (
    MNLI_M, NER, dataclasses.replace(NER, label="NER feature-based", features="concat_last_four_hidden")), tuple(
    Row(f"{round(100 * m)}/{round(100 * (1 - m - r))}/{round(100 * r)}", paper,
        pretrain=(("mask_token_rate", m), ("random_token_rate", r))) for (m, r), paper in MASKING),
    note="MASK/SAME/RND: the shares of the selected tokens replaced by [MASK], kept, or replaced by a random token.")

TABLES = {t.name: t for t in (TABLE1, TABLE2, TABLE5, TABLE6, TABLE7, TABLE8)}
