"""Windows over long documents (kbert.tasks.core.windows): the plain Python plan the tests use
(tests/fixtures/windows_reference.py) against google-research/bert's run_squad.py doc spans and
_check_is_max_context (kbert.tasks.span_qa.postprocess holds them as written there), and the
TensorFlow version against the plan."""

import itertools
import re

import numpy as np
import pytest
import tensorflow as tf

from kbert.tasks.span_qa import postprocess as squad_postprocess
from fixtures.windows_reference import max_context_windows, window_starts
from kbert.tasks.core.windows import check_long_documents, max_context_mask, window_rows

CASES = [(n, w, s) for n, w, s in itertools.product([0, 1, 5, 12, 13, 40, 97], [1, 4, 12], [1, 3, 6, 12, 20])]


@pytest.mark.parametrize("num_tokens, window, stride", CASES)
def test_starts_are_run_squad_doc_spans(num_tokens, window, stride):
    starts = window_starts(num_tokens, window, stride)
    if num_tokens == 0:  # run_squad has no span for an empty context; a document still gets one answer
        assert starts == [0]
        return
    spans = squad_postprocess.doc_spans(num_tokens, window, stride)
    assert starts == [s.start for s in spans]


@pytest.mark.parametrize("num_tokens, window, stride", CASES)
def test_every_token_in_exactly_one_max_context_window(num_tokens, window, stride):
    starts = window_starts(num_tokens, window, stride)
    best = max_context_windows(num_tokens, window, stride)
    assert len(best) == num_tokens
    spans = [squad_postprocess.DocSpan(s, min(window, num_tokens - s)) for s in starts]
    for position, chosen in enumerate(best):
        # the window holds the token, and run_squad's own check picks it and no other
        assert starts[chosen] <= position < starts[chosen] + window
        marked = [i for i in range(len(spans)) if squad_postprocess._check_is_max_context(spans, i, position)]
        assert marked == [chosen]


@pytest.mark.parametrize("num_tokens", [0, 1, 11, 12])
def test_a_text_that_fits_has_one_window_the_truncated_input(num_tokens):
    assert window_starts(num_tokens, 12, 5) == [0]
    assert max_context_windows(num_tokens, 12, 5) == [0] * num_tokens


def test_graph_windows_equal_the_plan():
    rng = np.random.default_rng(0)
    for window, stride in [(4, 1), (4, 3), (12, 6), (12, 20), (5, 5)]:
        lengths = [0, 1, 3, 4, 5, 12, 13, 40, 97]
        rows = [list(rng.integers(5, 1000, n)) for n in lengths]
        out = window_rows(tf.ragged.constant(rows, dtype=tf.int64), window, stride)
        pieces, document, start = out["pieces"].to_list(), out["document"].numpy(), out["start"].numpy()
        expected = [(d, s, rows[d][s:s + window]) for d, n in enumerate(lengths)
                    for s in window_starts(n, window, stride)]
        assert [(int(d), int(s), list(p)) for d, s, p in zip(document, start, pieces)] == expected
        assert out["num_windows"].numpy().tolist() == [len(window_starts(n, window, stride)) for n in lengths]
        mask = max_context_mask(out).to_list()
        for d, n in enumerate(lengths):
            best = max_context_windows(n, window, stride)
            mine = [i for i in range(len(document)) if document[i] == d]
            for position in range(n):
                owners = [k for k, i in enumerate(mine) if start[i] <= position < start[i] + len(pieces[i])
                          and mask[i][position - start[i]]]
                assert owners == [best[position]]  # exactly once, in the max-context window


def test_graph_windows_per_row_room():
    # pairs: each row's room is what its text A leaves
    out = window_rows(tf.ragged.constant([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]], dtype=tf.int64),
                      tf.constant([2, 5], tf.int64), 1)
    assert out["pieces"].to_list() == [[1, 2], [2, 3], [3, 4], [4, 5], [6, 7, 8, 9, 10]]


@pytest.mark.parametrize("mode, stride, seq, message", [
    ("windowz", None, 64, "--long-documents must be one of truncate, windows"),
    ("windows", 64, 64, "--doc-stride 64 must be below --seq-length 64"),
    ("windows", 0, 64, "--doc-stride must be a positive"),
])
def test_bad_settings(mode, stride, seq, message):
    with pytest.raises(ValueError, match=message):
        check_long_documents(mode, stride, seq)
    check_long_documents("windows", 63, 64)


def test_predict_and_export_refuse_a_stride_where_the_model_reads_no_windows():
    from kbert.errors import OptionsError
    from kbert.tasks.core.registry import task_type_for_model
    from kbert.tasks.core.windows import model_settings

    truncated = {"type": "text_classifier", "seq_length": 64, "long_documents": "truncate"}
    classifier = task_type_for_model("text_classifier")
    with pytest.raises(OptionsError, match=re.escape("--doc-stride 16: this text_classifier model reads no windows "
                                                     "under --long-documents truncate (add --long-documents windows)")):
        model_settings(classifier, truncated, None, 16)
    assert model_settings(classifier, truncated, "windows", 16) == {"long_documents": "windows", "doc_stride": 16}
    assert model_settings(classifier, {**truncated, "long_documents": "windows"}, None, 16) == {"doc_stride": 16}
    with pytest.raises(OptionsError, match=r"this multiple_choice model reads no windows under --long-documents "
                                           r"truncate$") as info:
        model_settings(task_type_for_model("multiple_choice"), {"type": "multiple_choice", "seq_length": 64}, None, 16)
    assert info.value.option == "doc_stride"
    # span QA reads its contexts in windows whatever long_documents says
    assert model_settings(task_type_for_model("span_qa"), {"type": "span_qa", "seq_length": 64}, None, 16) == \
        {"doc_stride": 16}
