"""JGLUE readers (kbert.data.jglue) on the files JGLUE distributes (../shared/data/jglue, read whole) and
on JSON-lines copies with an editor's BOM, CRLF and blank lines (docs/benchmark-files.md names these tests)."""

import json

import pytest

from conftest import SHARED
from kbert.data import jglue
from kbert.errors import DataError


def _write(path, text):
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def test_jsquad_files_as_distributed():
    """JGLUE's JSQuAD (the shared train/dev split of valid-v1.3): two or three answers per question,
    every offset on its text, is_impossible false everywhere, contexts "<title> [SEP] <paragraph>"."""
    for name, count in (("train.json", 4041), ("dev.json", 401)):
        path = SHARED / "jglue" / "jsquad" / name
        data = jglue.read_jsquad(path)
        assert len(data.examples) == count
        assert {len(e["answers"]) for e in data.examples} == {2, 3}
        assert data.meta["unplaced_answers"] == 0 and not any(e["is_impossible"] for e in data.examples)
        assert all(e["context"].startswith(f"{e['title']} [SEP] ") for e in data.examples)


def test_json_lines_with_bom_crlf_and_blank_lines(tmp_path):
    """JGLUE's JSON-lines files end with a newline; a copy saved by an editor may start with a BOM,
    end lines with CRLF or hold blank lines: all are read, and a row's line number stays the file's."""
    rows = ['{"sentence_pair_id": "0", "sentence1": "犬。", "sentence2": "猫。", "label": "neutral"}',
            "", '{"sentence_pair_id": "1", "sentence1": "犬。", "sentence2": "犬。", "label": "entailment"}', ""]
    path = _write(tmp_path / "valid-v1.3.json", b"\xef\xbb\xbf" + "\r\n".join(rows).encode("utf-8"))
    assert [(e["id"], e["label"]) for e in jglue.read_jnli(path).examples] == [("0", 2), ("1", 0)]
    _write(path, "\r\n".join([rows[0], "", rows[2].replace('"entailment"', '"-"')]))
    with pytest.raises(DataError, match=r"line 3: field 'label': got '-'"):
        jglue.read_jnli(path)


def test_jglue_json_lines_files_as_distributed():
    """JSTS, JNLI and JCommonsenseQA as JGLUE publishes them (JNLI: the shared re-split of valid-v1.3):
    ids are strings in JSTS/JNLI (sentence_pair_id) and numbers in JCommonsenseQA (q_id), labels a
    0-5 float, a name, a choice number; extra fields (yjcaptions_id) are not read."""
    folder = SHARED / "jglue"
    for reader, name, count in ((jglue.read_jsts, "jsts/train-v1.3.json", 12451),
                                (jglue.read_jsts, "jsts/valid-v1.3.json", 1457),
                                (jglue.read_jnli, "jnli/train.json", 1947), (jglue.read_jnli, "jnli/dev.json", 487),
                                (jglue.read_jcommonsenseqa, "jcommonsenseqa/train-v1.3.json", 8939),
                                (jglue.read_jcommonsenseqa, "jcommonsenseqa/valid-v1.3.json", 1119)):
        lines = (folder / name).read_text(encoding="utf-8").splitlines()
        raw = [json.loads(line) for line in lines]
        data = reader(folder / name)
        assert len(data.examples) == len(raw) == count, name
        key = "q_id" if "q_id" in raw[0] else "sentence_pair_id"
        assert [e["id"] for e in data.examples] == [str(r[key]) for r in raw]
        labels = [r["label"] for r in raw]
        if data.label_names and data.label_names[0] == "entailment":
            labels = [data.label_names.index(label) for label in labels]
        assert [e["label"] for e in data.examples] == labels
