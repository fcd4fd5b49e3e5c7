"""TaskData: what every reader in kbert.data returns."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class TaskData:
    """Examples read from one task file.

    Attributes:
      examples: one plain dict per example, raw text only (no token ids). The keys depend on the
        reader (see its docstring); labels are numeric: an index into `label_names`, or a float
        for regression, or None for unlabelled (test) files.
      label_names: the label vocabulary (index i <-> name), or None for regression / span tasks.
      source: the file the examples came from.
      meta: reader-specific facts about the file (e.g. SQuAD version, number of documents).
    """

    examples: list
    label_names: tuple | None
    source: str
    meta: dict = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.examples)
