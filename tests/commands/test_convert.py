"""``kbert convert`` (kbert/commands/convert.py) in this process: ``to-google`` and ``google`` through the
command (their flags reach the converters: the files named by --config/--vocab, --cased in kbert.json),
the line naming what was written, and a user's error as one line naming the file or flag. The
converters, ``hf`` by folder and by name, --check and --overwrite are checked in tests/convert/."""

import json
import shutil

import numpy as np
import pytest

from fixtures.cli import run_command
from fixtures.hf_tiny import model_weights


@pytest.mark.slow
def test_to_google_and_back_with_config_vocab_and_cased_flags(tmp_path, tiny_heads_dir):
    prefix = tmp_path / "google" / "bert_model.ckpt"
    done = run_command("convert", "to-google", tiny_heads_dir, prefix)
    assert (done.status, done.out) == (0, f"written: {prefix}\n"), done.err
    # the checkpoint alone in its folder: its config and vocabulary only where the flags say
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for name, new in (("bert_config.json", "config.json"), ("vocab.txt", "words.txt")):
        shutil.move(prefix.parent / name, elsewhere / new)
    out = tmp_path / "back"
    missing = run_command("convert", "google", prefix, out)
    assert missing.status == 1 and len(missing.err.splitlines()) == 1, missing.err
    assert missing.err.startswith("kbert convert: error: ") and "bert_config.json" in missing.err
    done = run_command("convert", "google", prefix, out, "--config", elsewhere / "config.json",
                    "--vocab", elsewhere / "words.txt", "--cased")
    assert (done.status, done.out) == (0, f"written: {out}\n"), done.err
    assert json.loads((out / "kbert.json").read_text())["do_lower_case"] is False  # --cased
    assert (out / "vocab.txt").read_bytes() == (tiny_heads_dir / "vocab.txt").read_bytes()  # --vocab
    before, after = model_weights(tiny_heads_dir), model_weights(out)
    assert sorted(before) == sorted(after)
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value, err_msg=name)


@pytest.mark.parametrize("argv, message", [
    (["to-google", "{tmp}/none", "{tmp}/ckpt/bert_model.ckpt"], "model directory {tmp}/none does not exist"),
    (["hf", "{tmp}/none", "{tmp}/out"], "Hugging Face model directory {tmp}/none does not exist"),
    (["google", "{tmp}/ckpt/bert_model.ckpt", "{tmp}/out", "--sha256", "0" * 64],
     "--sha256 checks a release zip (a URL or a .zip path)"),
    (["google", "{tmp}/ckpt/bert_model.ckpt", "{tmp}/out", "--tokenizer", "juman"], "unknown tokenizer type 'juman'"),
    (["hf", "{tmp}/none", "{tmp}/out", "--sha256", "0"], "unrecognized arguments: --sha256 0"),
    (["to-hf", "{tmp}/none", "{tmp}/out"], "model directory {tmp}/none does not exist"),
])
def test_user_errors_are_one_line_and_write_nothing(tmp_path, argv, message):
    (tmp_path / "ckpt").mkdir()
    result = run_command("convert", *[a.format(tmp=tmp_path) for a in argv])
    assert result.status == 1 and result.out == ""
    (line,) = result.err.splitlines()
    assert line.startswith("kbert convert: error: ") and message.format(tmp=tmp_path) in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"] and not any((tmp_path / "ckpt").iterdir())


@pytest.mark.slow
def test_to_hf_prints_the_class_and_notes_and_refuses_an_output_with_files(tmp_path, tiny_heads_dir):
    out = tmp_path / "hf"
    result = run_command("convert", "to-hf", str(tiny_heads_dir), str(out))
    assert result.status == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == f"written: {out} (BertForPreTraining)"
    assert any(line.startswith("note: tokenizer: kbert's google-research/bert rules") for line in lines)
    result = run_command("convert", "to-hf", str(tiny_heads_dir), str(out))
    assert result.status == 1 and "already holds files; pass --overwrite" in result.err
    # --check: the google-rules tokenizer splits a [MASK] written in the text, transformers' keeps it whole
    result = run_command("convert", "to-hf", str(tiny_heads_dir), str(out), "--overwrite", "--check")
    assert result.status == 1, result.out
    assert "ids differ on 'Special tokens written in text" in result.out
    assert "does not reproduce" in result.err.splitlines()[-1]
    record = json.loads((out / "kbert_to_hf.json").read_text())
    assert not record["check"]["passed"] and record["check"]["largest_differences"]["mlm_logits"] < 1e-4
