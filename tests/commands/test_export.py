"""``kbert export`` (kbert/commands/export.py) in this process: each subcommand's flags reach the
exported SavedModel (its signatures, its packed length, its warm-up requests, TF Serving's
models.config beside a version folder), its lines say what it wrote, and a user's error is one line
naming the file or flag. The exports themselves are checked in tests/export/ (ONNX: tests/export/onnx)."""

import shutil
import signal

import numpy as np
import pytest
import tensorflow as tf

from conftest import UNCASED_VOCAB
from fixtures.cli import run_command


@pytest.mark.slow
def test_preprocessor_flags_reach_the_savedmodel_and_its_version_folder_is_served(tmp_path):
    out = tmp_path / "saved_models" / "pre" / "1"
    out.mkdir(parents=True)
    (out / "notes.txt").write_text("mine")  # not a kbert export: refused, left as it was, unless --overwrite
    args = ("preprocessor", UNCASED_VOCAB, out, "--seq-length", "12", "--cased")
    refused = run_command("export", *args)
    assert refused.status == 1
    assert refused.err.splitlines() == [f"kbert export: error: {out} already exists; pass --overwrite to replace "
                                        "it whole"]
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]

    done = run_command("export", *args, "--overwrite")
    assert done.status == 0, done.err
    root = tmp_path / "saved_models"
    assert done.out.splitlines() == [
        f"SavedModel written to {out}",
        f"models.config: {root / 'models.config'} (and batching_parameters.txt for --enable_batching)"]
    assert 'name: "pre"' in (root / "models.config").read_text() and (root / "batching_parameters.txt").exists()
    packed = tf.saved_model.load(str(out)).signatures["serving_default"](tf.constant(["Hello hello"]))
    vocab = UNCASED_VOCAB.read_text(encoding="utf-8").splitlines()
    # --seq-length: the packed length; --cased: "Hello" is not in the uncased vocabulary, "hello" is
    expected = [vocab.index(t) for t in ("[CLS]", "[UNK]", "hello", "[SEP]")]
    np.testing.assert_array_equal(packed["input_word_ids"].numpy(), [expected + [0] * 8])
    assert not (out / "notes.txt").exists()


@pytest.mark.slow
def test_encoder_flags_choose_the_signatures(tmp_path, tiny_heads_dir):
    out = tmp_path / "encoder"  # not a version folder: no models.config
    done = run_command("export", "encoder", tiny_heads_dir, out, "--no-head-signatures", "--xla-signature")
    assert done.status == 0, done.err
    assert done.out.splitlines() == [f"SavedModel written to {out}"]
    assert not (tmp_path / "models.config").exists()
    # the heads' strings-in signatures left out, the ids-in MLM kept; serving_xla added
    assert set(tf.saved_model.load(str(out)).signatures) == {"serving_default", "mlm", "serving_xla"}


@pytest.mark.slow
def test_task_no_warmup_writes_no_warmup_requests(tmp_path, task_export_paths):
    model_dir, with_warmup = task_export_paths["sst2"]  # exported with warm-up requests by the library
    assert (with_warmup / "assets.extra" / "tf_serving_warmup_requests").exists()
    out = tmp_path / "saved_models" / "sst2" / "3"
    done = run_command("export", "task", model_dir, out, "--no-warmup")
    assert done.status == 0, done.err
    assert done.out.splitlines()[0] == f"SavedModel written to {out}"
    assert sorted(p.name for p in (out / "assets.extra").iterdir()) == ["kbert_export.json"]  # no warm-up file
    answers = tf.saved_model.load(str(out)).signatures["serving_default"](tf.constant(["a fine film"]))
    assert answers["labels"].numpy()[0].decode() in ("negative", "positive")


@pytest.mark.parametrize("what", ["encoder", "task", "onnx"])
def test_a_missing_model_directory_is_one_line(tmp_path, what):
    missing = tmp_path / "no_model"
    result = run_command("export", what, missing, tmp_path / "out")
    assert (result.status, result.err.splitlines()) == (
        1, [f"kbert export: error: model directory {missing} does not exist"])
    assert not (tmp_path / "out").exists()


def test_preprocessor_errors_name_the_source_and_the_flag(tmp_path):
    missing = tmp_path / "vocab.txt"
    result = run_command("export", "preprocessor", missing, tmp_path / "out")
    assert (result.status, result.err.splitlines()) == (
        1, [f"kbert export: error: model directory or vocab {missing} does not exist"])
    result = run_command("export", "preprocessor", UNCASED_VOCAB, tmp_path / "out", "--seq-length", "0")
    assert (result.status, result.err.splitlines()) == (1, ["kbert export: error: --seq-length must be positive, got 0"])
    result = run_command("export", "preprocessor", UNCASED_VOCAB, tmp_path / "out", "--seq-length", "x")
    assert result.status == 1 and len(result.err.splitlines()) == 1
    assert "argument --seq-length: invalid int value: 'x'" in result.err
    assert not (tmp_path / "out").exists()


def test_an_output_holding_the_model_directory_is_refused_even_with_overwrite(tmp_path, tiny_heads_dir):
    model_dir = shutil.copytree(tiny_heads_dir, tmp_path / "model")
    result = run_command("export", "encoder", model_dir, tmp_path, "--overwrite")
    assert result.status == 1
    assert result.err.splitlines() == [f"kbert export: error: {tmp_path} is an input of this command ({model_dir}): "
                                       "writing it would destroy that input; choose another output"]
    assert sorted(p.name for p in model_dir.iterdir()) == sorted(p.name for p in tiny_heads_dir.iterdir())


def test_sigterm_while_exporting_ends_the_command_and_the_handler_is_restored(monkeypatch, tmp_path, tiny_heads_dir):
    """A supervisor's SIGTERM during the export ends it through kbert.commands.signals (nothing is
    raised into the export); the process's own handler is back afterwards. The handler is called
    here, no signal is sent, and the ending is recorded instead of ending pytest."""
    from kbert.commands import export, signals

    seen, ended = [], []

    def fake_export(args):
        handler = signal.getsignal(signal.SIGTERM)
        seen.append(handler)
        handler(signal.SIGTERM, None)
        return 0

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(export, "_export", fake_export)
    monkeypatch.setattr(signals, "_end", lambda command, signum: ended.append((command, signum)))
    assert export.main(["encoder", str(tiny_heads_dir), str(tmp_path / "out")]) == 0
    assert seen and seen[0] is not before and ended == [("export", signal.SIGTERM)]
    assert signal.getsignal(signal.SIGTERM) is before
