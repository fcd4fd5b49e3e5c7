"""SWAG CSV files (rowanz/swagaf data/{train,val,test}.csv).

Header: `,video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label`
(the first, unnamed column is a row number; test.csv has no label column). Fields are CSV-quoted.
The BERT paper's SWAG input is text_a = sent1 and text_b = sent2 + " " + ending_i for i in 0..3.
"""

from __future__ import annotations

from kbert.data.examples import TaskData
from kbert.data.textio import csv_rows, header_index
from kbert.errors import DataError

NUM_ENDINGS = 4
ENDING_COLUMNS = tuple(f"ending{i}" for i in range(NUM_ENDINGS))


def read_swag(path, *, labelled: bool | None = None, data: bytes | None = None) -> TaskData:
    """Reads a SWAG CSV.

    Args:
      labelled: whether a `label` column is required; None: labelled if the header has one.

    Returns:
      TaskData whose examples are {"id", "video_id", "context" (sent1), "start_ending" (sent2),
      "endings" (4 strings), "label" (0..3, None when unlabelled)}; label_names ("0".."3").
    """
    rows = csv_rows(path, data)
    first = next(rows, None)
    if first is None:
        raise DataError(path, "a SWAG header line", value="empty file")
    header = first[1]
    columns = ["video-id", "fold-ind", "sent1", "sent2", *ENDING_COLUMNS]
    idx = {c: header_index(path, header, c) for c in columns}
    if labelled is None:
        labelled = "label" in header
    label_idx = header_index(path, header, "label") if labelled else None
    label_names = tuple(str(i) for i in range(NUM_ENDINGS))
    examples = []
    for line, fields in rows:
        if len(fields) != len(header):
            raise DataError(path, f"{len(header)} CSV fields ({', '.join(header)})", line=line,
                            field=f"record with {len(fields)} fields", value=",".join(fields))
        label = None
        if labelled:
            value = fields[label_idx]
            if value not in label_names:
                raise DataError(path, "an ending number 0, 1, 2 or 3", line=line, field="label",
                                value=value)
            label = int(value)
        examples.append({
            "id": fields[idx["fold-ind"]] or f"row-{len(examples)}",
            "video_id": fields[idx["video-id"]],
            "context": fields[idx["sent1"]],
            "start_ending": fields[idx["sent2"]],
            "endings": [fields[idx[c]] for c in ENDING_COLUMNS],
            "label": label,
        })
    if not examples:
        raise DataError(path, "at least one data row", value="no rows")
    return TaskData(examples, label_names, str(path))
