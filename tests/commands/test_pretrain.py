"""python -m kbert.pretrain end to end: learning, SIGKILL resume, SIGTERM checkpoint (in processes of their
own: the signals are sent to them), bad input (in this process).

Bad input, in process (``main([...])`` on a tiny vocabulary and records, tests/fixtures/tiny_records.py):
a damaged record past the shuffle buffer is named with its file, record and offset after the steps
so far are checkpointed, and a rerun with --skip-bad-records resumes from that checkpoint; empty or
missing training and eval data are refused before any work. Divergence: at a learning rate of 1e30
the run stops naming the step where the loss or the weights stopped being finite and the last good
checkpoint, and leaves the model directory as it was."""

import json
import pathlib
import re
import signal
import subprocess
import time

import pytest
import tensorflow as tf

from conftest import PRETRAIN_RUN_STEPS, REPO, cli_env as _env, pretrain_command as _cmd
from fixtures.cli import run_command
from fixtures.tiny_records import write_records, write_vocab
from kbert.cli_support import is_user_error
from kbert.data.pretraining import CorruptRecordError
from kbert.errors import DataError
from kbert.training.checkpoints import TrainingDiverged


@pytest.mark.slow
def test_it_learns_and_writes_a_model_directory(tmp_path, pretraining_records, small_vocab, pretrain_run):
    model_dir = pretrain_run.model_dir  # PRETRAIN_RUN_STEPS, evaluated on the held-out records
    # Step 0 baseline: evaluate the untrained model (1 step at learning rate ~0), as the run does; the
    # same command line, in this process.
    base = run_command("pretrain", *_cmd(pretraining_records, small_vocab, tmp_path / "base", "--steps", "1",
                                         "--eval-data", str(pretraining_records / "eval-*.tfrecord"),
                                         "--eval-steps", "10", "--learning-rate", "2e-3", "--warmup-steps", "20")[3:])
    assert base.status == 0, base.err[-3000:]
    before = json.loads((tmp_path / "base" / "pretrain_results.json").read_text())
    after = json.loads((model_dir / "pretrain_results.json").read_text())
    assert after["steps"] == PRETRAIN_RUN_STEPS
    # Held-out MLM accuracy far above the untrained model's (chance is ~1/1400): after 150 small
    # steps BERT-Tiny has learned at least the unigram statistics (~4-5%).
    assert after["eval_mlm_accuracy"] > max(0.03, 10 * before["eval_mlm_accuracy"]), (before, after)
    assert after["eval_mlm_loss"] < before["eval_mlm_loss"] - 0.8, (before, after)
    for name in ("bert_config.json", "vocab.txt", "encoder.weights.h5", "mlm.weights.h5", "nsp.weights.h5"):
        assert (model_dir / name).exists(), name
    assert list((model_dir / "logs" / "train").glob("events.out.tfevents.*"))
    from kbert.model_dir import load_heads

    assert set(load_heads(model_dir)) == {"mlm", "nsp"}


def _wait_for(path_glob, proc, timeout=600):
    start = time.time()
    while time.time() - start < timeout:
        if list(path_glob()):
            return
        if proc.poll() is not None:
            raise AssertionError(f"process ended early:\n{proc.stdout.read()[-3000:]}")
        time.sleep(0.5)
    raise AssertionError("timed out waiting for a checkpoint")


def _logged_steps(path) -> list:
    """The steps with a train/loss scalar in the TensorBoard event files at path (a file or a folder),
    read with TensorFlow's reader; a file still being written is read up to where it ends."""
    import tensorflow as tf

    path = pathlib.Path(path)
    if not path.exists():
        return []
    steps = set()
    for file in sorted(path.glob("events.out.tfevents.*")) if path.is_dir() else [path]:
        try:
            for event in tf.compat.v1.train.summary_iterator(str(file)):
                if any(v.tag == "train/loss" for v in event.summary.value):
                    steps.add(event.step)
        except tf.errors.DataLossError:
            pass
    return sorted(steps)


@pytest.mark.slow
def test_sigkill_then_rerun_resumes_from_the_last_checkpoint(tmp_path, pretraining_records, small_vocab):
    model_dir = tmp_path / "m"
    cmd = _cmd(pretraining_records, small_vocab, model_dir, "--steps", "60", "--checkpoint-every", "10")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(), cwd=REPO)
    import tensorflow as tf

    def saved(least):  # the checkpoint state names step >= least (written after the step's files)
        latest = tf.train.latest_checkpoint(str(model_dir / "checkpoints"))
        return [latest] if latest and int(latest.rsplit("-", 1)[1]) >= least else []

    _wait_for(lambda: saved(20), proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    latest = tf.train.latest_checkpoint(str(model_dir / "checkpoints"))
    saved_step = int(latest.rsplit("-", 1)[1])
    assert saved_step >= 20
    logs = model_dir / "logs" / "train"
    before = set(logs.glob("events.out.tfevents.*"))
    rerun = run_command("pretrain", *cmd[3:])  # the same command again, in this process
    assert rerun.status == 0, rerun.err[-3000:]
    assert f"resuming from step {saved_step}" in rerun.out
    assert json.loads((model_dir / "pretrain_results.json").read_text())["steps"] == 60
    # The rerun trained only the remaining steps: its own TensorBoard file (the optimizer's step,
    # logged every 10) has the steps after the checkpoint, up to 60, and no others.
    new = set(logs.glob("events.out.tfevents.*")) - before
    assert len(new) == 1, new
    steps = _logged_steps(new.pop())
    assert steps == list(range(saved_step + 10, 61, 10)), (saved_step, steps)


@pytest.mark.slow
def test_sigterm_writes_a_checkpoint_before_exit(tmp_path, pretraining_records, small_vocab):
    model_dir = tmp_path / "m"
    # An interval no run reaches in this test's time: any checkpoint is the signal's. No sleep, no
    # clock: the signal is sent once training has logged its first steps.
    cmd = _cmd(pretraining_records, small_vocab, model_dir, "--steps", "200000", "--checkpoint-every", "100000")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(), cwd=REPO)
    try:
        _wait_for(lambda: _logged_steps(model_dir / "logs" / "train"), proc)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=300)
    finally:
        proc.kill()  # a run of 200,000 steps must not outlive a failed wait
    assert proc.returncode == 143, out[-3000:]
    said = re.search(r"SIGTERM: checkpoint written at step (\d+)", out)
    assert said, out[-3000:]
    checkpoints = sorted(p.name for p in (model_dir / "checkpoints").glob("ckpt-*.index"))
    step = int(said.group(1))
    assert checkpoints == [f"ckpt-{step}.index"] and 0 < step < 100_000, (checkpoints, out[-3000:])


@pytest.mark.slow
def test_a_glob_matching_nothing_fails_before_work(tmp_path, small_vocab):
    result = run_command("pretrain", "--config", "tiny", "--vocab", small_vocab, "--train-data",
                         tmp_path / "none-*.tfrecord", "--model-dir", tmp_path / "m")
    assert result.status == 1
    assert result.err.startswith("kbert pretrain: error: ") and "no pre-training files match" in result.err
    assert len(result.err.splitlines()) == 1 and result.out == ""
    assert not (tmp_path / "m").exists()


# -- damaged, empty and missing data, in process -------------------------------------------------------
@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    return write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt")


def _pretrain(tmp_path, vocab, data, *extra):
    """``kbert pretrain`` in this process on ``data`` (a glob), batches of 16, into tmp_path / "m"."""
    from kbert.commands.pretrain import main

    return main(["--config", "tiny", "--vocab", str(vocab), "--train-data", str(data),
                 "--model-dir", str(tmp_path / "m"), "--seq-length", "32", "--max-predictions", "5",
                 "--batch-size", "16", "--seed", "0", "--learning-rate", "1e-3", *extra])


@pytest.mark.slow
def test_pretrain_cli_names_the_file_keeps_the_steps_and_resumes_with_skip(tmp_path, vocab, capfd):
    """The damaged record lies past the 10,000-record shuffle buffer: training has run some steps
    when it is reached. Those steps are checkpointed, then a rerun with --skip-bad-records resumes."""
    data = tmp_path / "data"
    data.mkdir()
    offsets = write_records(data / "train-0.tfrecord", 10_300, seed=5)
    raw = bytearray((data / "train-0.tfrecord").read_bytes())
    raw[offsets[10_150] + 14] ^= 0xFF
    (data / "train-0.tfrecord").write_bytes(bytes(raw))

    with pytest.raises(CorruptRecordError) as info:
        _pretrain(tmp_path, vocab, data / "*.tfrecord", "--steps", "24", "--checkpoint-every", "4")
    assert is_user_error(info.value)  # the command shows it as one line "kbert pretrain: error: ...", exit 1
    out = capfd.readouterr()
    assert str(info.value).startswith(f"{data / 'train-0.tfrecord'}: record 10150 (byte offset {offsets[10_150]}")
    latest = tf.train.latest_checkpoint(str(tmp_path / "m" / "checkpoints"))
    step = int(latest.rsplit("-", 1)[1])
    assert 4 < step < 24 and f"damaged training data: checkpoint written at step {step}" in out.out
    assert not (tmp_path / "m" / "encoder.weights.h5").exists()

    assert _pretrain(tmp_path, vocab, data / "*.tfrecord", "--steps", "24", "--checkpoint-every", "4",
                     "--skip-bad-records") == 0
    out = capfd.readouterr()
    assert f"resuming from step {step}" in out.out
    results = json.loads((tmp_path / "m" / "pretrain_results.json").read_text())
    assert results["steps"] == 24 and results["skipped_bad_records"] >= 1
    assert "skipping damaged TFRecord data in" in out.err and "damaged TFRecord region(s)" in out.out


def test_pretrain_cli_refuses_empty_training_and_eval_data_before_work(tmp_path, vocab, capfd):
    (tmp_path / "train-0.tfrecord").write_bytes(b"")
    with pytest.raises(DataError, match=r"all empty \(0 bytes\)"):  # the command shows it as one line
        _pretrain(tmp_path, vocab, tmp_path / "train-*.tfrecord")
    write_records(tmp_path / "train-1.tfrecord", 40)
    with pytest.raises(FileNotFoundError, match="no pre-training files match .*eval-"):
        _pretrain(tmp_path, vocab, tmp_path / "train-*.tfrecord", "--eval-data", str(tmp_path / "eval-*.tfrecord"))
    assert not (tmp_path / "m").exists()


# -- divergence ------------------------------------------------------------------------------------
def _pretrain_tiny(tmp_path, *extra):
    """Pre-training on 300 tiny records written on the first call (batches of 8)."""
    from kbert.commands.pretrain import main

    if not (tmp_path / "vocab.txt").exists():
        write_vocab(tmp_path / "vocab.txt")
        write_records(tmp_path / "train-0.tfrecord", 300)
    return main(["--config", "tiny", "--vocab", str(tmp_path / "vocab.txt"),
                 "--train-data", str(tmp_path / "train-*.tfrecord"), "--model-dir", str(tmp_path / "m"),
                 "--seq-length", "32", "--max-predictions", "5", "--batch-size", "8", "--seed", "0", *extra])


@pytest.mark.slow
def test_pretrain_cli_diverging_at_learning_rate_1e30_exits_naming_the_step(tmp_path, capfd):
    assert _pretrain_tiny(tmp_path, "--steps", "2", "--checkpoint-every", "2") == 0
    weights = (tmp_path / "m" / "encoder.weights.h5").read_bytes()
    capfd.readouterr()
    with pytest.raises(TrainingDiverged) as info:
        _pretrain_tiny(tmp_path, "--steps", "10", "--checkpoint-every", "2", "--learning-rate", "1e30",
                       "--warmup-steps", "0")
    assert is_user_error(info.value)  # the command shows it as one line "kbert pretrain: error: ...", exit 1
    line = ["error: " + str(info.value).splitlines()[0]]
    match = re.search(r"error: (?:loss became (?:nan|inf|-inf) at step (\d+)|the weights are not finite "
                      r"\(NaN or Inf\) at step (\d+))", line[0])
    assert match, line[0]
    step = int(match.group(1) or match.group(2))
    assert 2 < step <= 10 and "ckpt-2" in line[0]
    assert tf.train.latest_checkpoint(str(tmp_path / "m" / "checkpoints")).endswith("ckpt-2")
    assert (tmp_path / "m" / "encoder.weights.h5").read_bytes() == weights  # the model directory is untouched
    results = json.loads((tmp_path / "m" / "pretrain_results.json").read_text())
    assert results["steps"] == 2
