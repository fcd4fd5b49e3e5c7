"""``kbert convert hf ... --check``: the converted model against transformers, and the converted encoder
equal to transformers on Korean and Russian rows of ../shared/data/multilingual."""

import sys

import numpy as np
import pytest

from kbert.convert import hf
from fixtures.cli import command_status
from kbert.convert import check
from kbert.convert.check import check_conversion
from conftest import MINILM_DIR, SHARED
from fixtures.hf_tiny import make_hf_folder

MULTILINGUAL = SHARED / "multilingual"


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory):
    return make_hf_folder(tmp_path_factory.mktemp("hf") / "tiny", heads=True)


def _check_lines(out):
    return [line for line in out.splitlines() if line.startswith("check: ")]


@pytest.mark.slow
def test_check_passes_on_a_faithful_conversion_and_prints_the_difference(tmp_path, tiny_hf, capsys):
    assert command_status("convert", ["hf", str(tiny_hf), str(tmp_path / "out"), "--check"]) == 0, capsys.readouterr().err
    [line] = _check_lines(capsys.readouterr().out)
    assert f"{sum(map(len, check.SENTENCES.values()))} sentences (en, ja, zh, ko, ru)" in line and "ids equal" in line
    largest = float(line.split("largest difference ")[1].split(" ")[0])
    assert 0 <= largest <= 1e-4


@pytest.mark.slow
def test_check_fails_a_conversion_that_changed_a_weight(tmp_path, tiny_hf, capsys, monkeypatch):
    real = hf.hf_to_google

    def off_by_a_little(state, source):
        arrays = real(state, source)
        name = "bert/encoder/layer_1/intermediate/dense/kernel"
        arrays[name] = arrays[name] * np.float32(1.01)
        return arrays

    monkeypatch.setattr(hf, "hf_to_google", off_by_a_little)
    assert command_status("convert", ["hf", str(tiny_hf), str(tmp_path / "out"), "--check"]) == 1
    captured = capsys.readouterr()
    [line] = _check_lines(captured.out)
    assert float(line.split("largest difference ")[1].split(" ")[0]) > 1e-4
    assert captured.err.strip() == (f"kbert convert: error: {tmp_path / 'out'} does not reproduce transformers "
                                    f"on {tiny_hf}")


def test_check_without_transformers_is_one_line(tmp_path, tiny_hf, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers -> ImportError
    assert command_status("convert", ["hf", str(tiny_hf), str(tmp_path / "out"), "--check"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == ("kbert convert: error: --check compares with transformers on torch, and transformers is not "
                   "installed: pip install torch transformers (or convert without --check)")


def _rows(name, n):
    lines = (MULTILINGUAL / name).read_text(encoding="utf-8").splitlines()
    return lines[:n]


@pytest.mark.slow
def test_check_passes_on_minilm(tmp_path, capsys):
    assert command_status("convert", ["hf", str(MINILM_DIR), str(tmp_path / "out"), "--check"]) == 0, capsys.readouterr().err
    [line] = _check_lines(capsys.readouterr().out)
    assert "ids equal" in line


@pytest.mark.slow
@pytest.mark.parametrize("name", ["korean_klue_ner_dev.txt", "russian_superglue_parus_rwsd.txt"])
def test_converted_encoder_equals_transformers_on_korean_and_russian_rows(minilm_model_dir, name):
    report = check_conversion(MINILM_DIR, minilm_model_dir, sentences=_rows(name, 48))
    assert report.sentences == 48 and report.id_mismatches == []
    assert report.max_sequence_diff <= 1e-4 and report.max_pooled_diff <= 1e-4, report.lines()
