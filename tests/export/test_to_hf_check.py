"""kbert.export.to_hf_check without its peers: the missing package is a MissingExtra naming the test extra
(the comparisons themselves run in tests/export/test_to_hf.py)."""

import sys

import pytest

import kbert
from kbert.export.to_hf_check import ToHfReport, check_to_hf


def test_without_transformers_the_check_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers -> ImportError
    with pytest.raises(kbert.MissingExtra, match=r"transformers is not installed: pip install 'kbert\[test\]'") as e:
        check_to_hf(tmp_path, tmp_path)
    assert e.value.extra == "test"


def test_report_fails_on_ids_or_a_difference_over_the_tolerance():
    assert ToHfReport(2, [], {"logits": 9e-5}).passed
    assert not ToHfReport(2, [], {"logits": 2e-4}).passed
    report = ToHfReport(2, [("a [MASK]", ["a", "[", "mask", "]"], ["a", "[MASK]"])], {"logits": 0.0})
    assert not report.passed
    assert report.lines()[1] == "  ids differ on 'a [MASK]' at token 1: kbert [ mask ] ..., transformers [MASK] ..."
    assert report.summary().endswith("; ids differ on 'a [MASK]'")
    assert report.to_json()["id_mismatches"] == [["a [MASK]", ["a", "[", "mask", "]"], ["a", "[MASK]"]]]
