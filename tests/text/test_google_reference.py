"""The oracle of ``tests/fixtures/google_bert_oracle.py`` (google-research/bert's tokenization rules, re-typed)
checked against the Hugging Face reference outputs in ``shared/data/reference``."""

import numpy as np

from conftest import REFERENCE
from fixtures.google_bert_oracle import (expected_ids, google_pack, minilm_rows, reference_lines, truncate_seq_pair)


def test_oracle_reproduces_reference_tokenization(google_oracle):
    lines = reference_lines()
    assert len(lines) == 3000
    wrong = [line["src"] for line in lines if google_oracle.ids(line["text"]) != expected_ids(line)]
    assert wrong == []


def test_oracle_reproduces_reference_packing(google_oracle):
    ref = np.load(REFERENCE / "minilm_encoder.npz")
    rows = minilm_rows()
    for i, row in enumerate(rows):
        a = google_oracle.ids(row["text_a"])
        b = None if row["text_b"] is None else google_oracle.ids(row["text_b"])
        assert (len(a), len(b) if b is not None else None) == (row["num_tokens_a"], row.get("num_tokens_b")), i
        ids, mask, types = google_pack(a, b, 128)
        assert ids == row.get("google_bert_input_ids", ref["input_ids"][i].tolist()), i
        assert mask == ref["attention_mask"][i].tolist(), i
        if "google_bert_input_ids" not in row:
            assert types == ref["token_type_ids"][i].tolist(), i
    assert sum("google_bert_input_ids" in row for row in rows) == 2


def test_truncate_seq_pair_rule():
    assert [len(x) for x in truncate_seq_pair(range(80), range(100), 125)] == [63, 62]
    assert [len(x) for x in truncate_seq_pair(range(90), range(90), 125)] == [63, 62]
    assert [len(x) for x in truncate_seq_pair(range(10), range(200), 125)] == [10, 115]
