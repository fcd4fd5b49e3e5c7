"""Turning label strings into numbers, with DataErrors that name the line and the allowed values."""

from __future__ import annotations

import math
import re

from kbert.errors import DataError

# A plain decimal number ("5.000", "4.4", "-1e-3"). float() alone would also accept "nan", "inf",
# "1_000" and surrounding spaces, none of which is a valid score in a task file.
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def label_index(path, line, field: str, value: str, label_names, record=None) -> int:
    try:
        return label_names.index(value)
    except ValueError:
        allowed = ", ".join(repr(n) for n in label_names)
        raise DataError(path, f"one of {allowed}", line=line, record=record, field=field,
                        value=value) from None


def parse_score(path, line, field: str, value: str, value_range=None, record=None) -> float:
    if not isinstance(value, str) or not _DECIMAL.fullmatch(value):
        raise DataError(path, "a decimal number", line=line, record=record, field=field, value=value)
    score = float(value)
    if not math.isfinite(score) or (
        value_range is not None and not value_range[0] <= score <= value_range[1]
    ):
        expected = "a finite number" if value_range is None else (
            f"a number in [{value_range[0]}, {value_range[1]}]")
        raise DataError(path, expected, line=line, record=record, field=field, value=value)
    return score


def collect_label_names(values) -> tuple:
    """The sorted distinct label strings; numerically sorted when all are integers ('2' < '10')."""
    names = set(values)
    if names and all(re.fullmatch(r"[+-]?\d+", n) for n in names):
        return tuple(sorted(names, key=int))
    return tuple(sorted(names))
