"""Label strings to numbers (kbert.data.labels): label vocabularies in numeric order, scores that are
plain finite decimals, and DataErrors naming the line, the field and what was allowed."""

import pytest

from kbert.data.labels import collect_label_names, label_index, parse_score
from kbert.errors import DataError


def test_integer_labels_sort_as_numbers_and_others_as_strings():
    assert collect_label_names(["10", "2", "1", "2", "-3"]) == ("-3", "1", "2", "10")
    assert collect_label_names(["10", "2", "b"]) == ("10", "2", "b")  # one non-integer: string order
    assert collect_label_names([]) == ()


def test_label_index_and_the_error_that_lists_the_allowed_values():
    assert label_index("f.tsv", 3, "label", "pos", ("neg", "pos")) == 1
    with pytest.raises(DataError) as e:
        label_index("f.tsv", 7, "label", "neutral", ("neg", "pos"))
    message = str(e.value)
    assert "f.tsv" in message and "7" in message and "'neg', 'pos'" in message and "neutral" in message


@pytest.mark.parametrize("value,expected", [("5.000", 5.0), ("4.4", 4.4), ("-1e-3", -0.001), (".5", 0.5)])
def test_plain_decimals_are_scores(value, expected):
    assert parse_score("f.tsv", 2, "score", value) == expected


# float() takes every one of these but the last two
@pytest.mark.parametrize("value", ["nan", "inf", "1_000", " 1", "1 ", "", "1e999", "0x10"])
def test_what_float_would_accept_but_a_task_file_must_not_hold(value):
    with pytest.raises(DataError, match="score"):
        parse_score("f.tsv", 2, "score", value)


def test_a_score_outside_its_range_names_the_range():
    assert parse_score("f.tsv", 2, "score", "0", value_range=(0, 5)) == 0.0
    with pytest.raises(DataError, match=r"\[0, 5\]"):
        parse_score("f.tsv", 2, "score", "5.01", value_range=(0, 5))
