"""Fuzz targets: the task files a user hands ``kbert finetune`` (GLUE TSVs, CoNLL-2003, SQuAD / KorQuAD /
CMRC 2018 JSON), small slices of the real files mutated (tests/fixtures/file_mutations.py). The oracle
(tests/fixtures/fuzz_harness.py): rows, equal to the unmutated file's where the damage is harmless (a
BOM, a file re-indented), or one ``kbert.Error`` line naming the file."""

import json
import pathlib

import pytest
from hypothesis import strategies as st

from conftest import SHARED
from fixtures.file_mutations import (byte_mutations, first_lines, json_mutations, mutate, mutate_bytes,
                                     mutate_json, mutations)
from fixtures.fuzz_harness import fuzz, read_or_error
from kbert.data.conll import read_conll
from kbert.data.glue import read_glue
from kbert.data.squad import read_squad

BOM = b"\xef\xbb\xbf"
GLUE = {"sst2": ("SST-2", "dev"), "cola": ("CoLA", "dev"), "mrpc": ("MRPC", "dev"), "stsb": ("STS-B", "dev")}


def _harmless_or_not(damage):
    """("bom", None): a BOM put first (the rows must not change), or ("damage", ops)."""
    return st.one_of(st.just(("bom", None)), st.tuples(st.just("damage"), damage))


def test_glue_tsv(request):
    samples = {task: (pathlib.Path("fuzz") / d / f"{split}.tsv", split, b"".join(first_lines(SHARED / "glue" / d /
                                                                                  f"{split}.tsv", 12)))
               for task, (d, split) in GLUE.items()}
    reference = {task: read_glue(task, split, path=path, data=data).examples
                 for task, (path, split, data) in samples.items()}

    def check(value):
        task, (kind, ops) = value
        path, split, data = samples[task]
        if kind == "bom":
            assert read_glue(task, split, path=path, data=BOM + data.removeprefix(BOM)).examples == reference[task]
            return
        data = mutate_bytes(mutate(data.splitlines(keepends=True), ops[0]), ops[1])
        result = read_or_error(lambda: read_glue(task, split, path=path, data=data), path)
        assert result is None or result.examples

    fuzz(request, st.tuples(st.sampled_from(sorted(samples)),
                            _harmless_or_not(st.tuples(mutations(), byte_mutations()))), check, weight=6)


def test_conll(request):
    path = pathlib.Path("fuzz/conll2003/train.txt")
    data = b"".join(first_lines(SHARED / "conll2003" / "train.txt", 40))
    reference = read_conll(path, data=data).examples

    def check(value):
        (kind, ops), labelled = value
        if kind == "bom":
            assert read_conll(path, data=BOM + data).examples == reference
            return
        mutated = mutate_bytes(mutate(data.splitlines(keepends=True),
                                      [(op, w, b) for op, w, b in ops[0] if op != "swap_tabs"]), ops[1])
        mutated = mutated.replace(b"\t", b" ") if ops[0] and ops[0][0][2] % 2 else mutated
        read_or_error(lambda: read_conll(path, data=mutated, labelled=labelled), path)

    fuzz(request, st.tuples(_harmless_or_not(st.tuples(mutations(), byte_mutations())), st.booleans()),
         check, weight=6)


def _squad_slice(path, articles=1, paragraphs=2, questions=3):
    whole = json.loads(path.read_text(encoding="utf-8"))
    data = []
    for article in whole["data"][:articles]:
        paras = [{**p, "qas": p["qas"][:questions]} for p in article["paragraphs"][:paragraphs]]
        data.append({**article, "paragraphs": paras})
    return {**{k: v for k, v in whole.items() if k != "data"}, "data": data}


SQUAD_FILES = {"squad": "squad/dev-v1.1.json", "korquad": "korquad/KorQuAD_v1.0_dev.json",
               "cmrc": "cmrc2018/cmrc2018_trial.json"}


@pytest.mark.parametrize("name", sorted(SQUAD_FILES))
def test_squad_json(request, name):
    path = pathlib.Path("fuzz") / SQUAD_FILES[name]
    obj = _squad_slice(SHARED / SQUAD_FILES[name])
    data = json.dumps(obj, ensure_ascii=False).encode("utf-8")
    reference = read_squad(path, data=data).examples
    assert reference

    def check(value):
        (kind, ops), labelled = value
        if kind == "bom":  # a BOM first and the file re-indented: the same questions
            text = BOM + json.dumps(obj, ensure_ascii=False, indent=2).encode("utf-8")
            assert read_squad(path, data=text).examples == reference
            return
        mutated = mutate_bytes(mutate_json(obj, ops[0]), ops[1])
        read_or_error(lambda: read_squad(path, data=mutated, labelled=labelled), path)

    fuzz(request, st.tuples(_harmless_or_not(st.tuples(json_mutations(), byte_mutations())), st.booleans()),
         check, weight=2)
