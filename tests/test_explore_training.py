"""Pictures and logs of training: the projector files, the curves PNG, the fill-mask text summaries,
and the explore CLI on a model from a short run of the main job (python -m kbert.pretrain)."""

import json
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from conftest import PRETRAIN_RUN_EVERY, PRETRAIN_RUN_STEPS, REPO, cli_env as _env, python
from conftest import read_scalars as conftest_read_scalars
from kbert.explore.curves import plot_run_curves, read_scalars
from kbert.explore.projector import TENSOR_NAME, write_features_projector


def _features(seed=0):
    rng = np.random.default_rng(seed)
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]], np.int32)
    ids = rng.integers(5, 20, mask.shape).astype(np.int32) * mask
    return {"input_word_ids": ids, "input_mask": mask,
            "last_hidden": rng.normal(size=(3, 6, 4)).astype(np.float32) * mask[..., None]}


ROWS = [{"text_a": "first\trow"}, {"text_a": "second", "text_b": "pair\nhalf"}, {"text_a": ""}]
VOCAB = [f"tok{i}" for i in range(20)]


def _read_projector(logdir):
    from google.protobuf import text_format
    from tensorboard.plugins import projector

    config = text_format.Parse((logdir / "projector_config.pbtxt").read_text(), projector.ProjectorConfig())
    (embedding,) = config.embeddings
    assert embedding.tensor_name == TENSOR_NAME and embedding.metadata_path == "metadata.tsv"
    vectors = tf.train.load_checkpoint(str(logdir)).get_tensor(TENSOR_NAME)
    return vectors, (logdir / "metadata.tsv").read_text(encoding="utf-8").splitlines()


def test_projector_token_level(tmp_path):
    arrays = _features()
    write_features_projector(tmp_path, arrays, ROWS, VOCAB, level="token")
    vectors, lines = _read_projector(tmp_path)
    expected, labels = [], []
    for r in range(3):
        for p in range(6):
            if arrays["input_mask"][r, p]:
                expected.append(arrays["last_hidden"][r, p])
                labels.append(VOCAB[arrays["input_word_ids"][r, p]])
    np.testing.assert_array_equal(vectors, np.array(expected))
    assert lines[0] == "token\trow\tposition\ttext" and len(lines) == 1 + 13
    assert [line.split("\t")[0] for line in lines[1:]] == labels
    assert lines[1].split("\t")[1:] == ["0", "0", "first row"]
    assert lines[-1].split("\t")[3] == "(empty)"
    assert lines[5].split("\t")[3] == "second | pair half"


def test_projector_sentence_level_and_bad_input(tmp_path):
    arrays = _features()
    write_features_projector(tmp_path, arrays, ROWS, VOCAB, level="sentence")
    vectors, lines = _read_projector(tmp_path)
    for r, length in enumerate((4, 6, 3)):
        np.testing.assert_allclose(vectors[r], arrays["last_hidden"][r, :length].mean(0), rtol=1e-6)
    assert lines == ["first row", "second | pair half", "(empty)"]
    with pytest.raises(ValueError, match="3 rows of features but 2 input rows"):
        write_features_projector(tmp_path, arrays, ROWS[:2], VOCAB)
    with pytest.raises(ValueError, match="no 'sum_all_layers'"):
        write_features_projector(tmp_path, arrays, ROWS, VOCAB, layer="sum_all_layers")
    with pytest.raises(ValueError, match="level must be one of"):
        write_features_projector(tmp_path, arrays, ROWS, VOCAB, level="word")


def test_curves_read_back_every_logged_scalar(tmp_path):
    logs = tmp_path / "logs"
    expected = {}
    for run, tags in (("train", ("train/loss", "train/mlm_accuracy", "train/learning_rate")), ("eval", ("loss",))):
        writer = tf.summary.create_file_writer(str(logs / run))
        with writer.as_default():
            for step in range(10, 60, 10):
                for i, tag in enumerate(tags):
                    value = 1.0 / (step + i)
                    tf.summary.scalar(tag, value, step=step)
                    expected.setdefault((run, tag), []).append((step, value))
        writer.close()
    got = read_scalars(logs)
    assert set(got) == set(expected)
    for key, points in expected.items():
        assert [s for s, _ in got[key]] == [s for s, _ in points]
        np.testing.assert_allclose([v for _, v in got[key]], [v for _, v in points], rtol=1e-6)
    path = plot_run_curves(logs)
    assert path == tmp_path / "curves.png" and path.stat().st_size > 10_000
    assert plot_run_curves(tmp_path / "empty") is None


# -- the main job, then the explore CLI on its model -------------------------------------------------
def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_pretraining_writes_curves_and_fill_mask_summaries(pretrain_run):
    from kbert.explore.fill_mask_callback import read_fill_mask_summaries

    model_dir, stdout = pretrain_run.model_dir, pretrain_run.stdout  # conftest: fill-mask every PRETRAIN_RUN_EVERY steps
    assert f"loss/accuracy curves:    {model_dir / 'curves.png'}" in stdout
    assert (model_dir / "curves.png").stat().st_size > 10_000
    # One step axis: the training's points every 10 steps straight through the checkpoint interval's
    # end (an epoch of fit), the held-out evaluation at the last step.
    train = conftest_read_scalars(model_dir / "logs" / "train")
    for tag in ("train/loss", "train/mlm_loss", "train/mlm_accuracy", "train/nsp_accuracy", "train/learning_rate"):
        assert [step for step, _ in train[tag]] == list(range(10, PRETRAIN_RUN_STEPS + 1, 10)), tag
    assert [step for step, _ in conftest_read_scalars(model_dir / "logs" / "eval")["loss"]] == [PRETRAIN_RUN_STEPS]
    summaries = read_fill_mask_summaries(model_dir / "logs" / "fill_mask")
    assert sorted(summaries) == [PRETRAIN_RUN_EVERY, PRETRAIN_RUN_STEPS]
    last = summaries[PRETRAIN_RUN_STEPS]
    assert last.count("[MASK]") == 4 and last.count("hidden word") == 4
    assert "| guess | probability |" in last


def _explore(*args):
    run = subprocess.run([*python("-m", "kbert.explore"), *map(str, args)], capture_output=True, text=True,
                         timeout=600, env=_env(), cwd=REPO)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


@pytest.mark.slow
def test_cli_answers_equal_the_heads_softmax_for_a_model_from_the_main_job(pretrain_run):
    from kbert.explore.heads_model import PretrainingHeads

    model_dir = pretrain_run.model_dir
    text = "she was the [MASK] of the family, and [MASK] was very fond of her."
    lines = [json.loads(line) for line in _explore("fill-mask", model_dir, text, "--json", "--top-k", "4").splitlines()]
    heads = PretrainingHeads.from_model_dir(model_dir)
    packed = {k: v.numpy() for k, v in heads.pack([text]).items()}
    positions = np.flatnonzero(packed["input_word_ids"][0] == heads.mask_id)
    assert [line["position"] for line in lines] == positions.tolist() and len(lines) == 2
    sequence = heads.encoder(packed)["sequence_output"]
    probabilities = _softmax(np.asarray(heads.mlm_head(sequence, positions[None], heads.encoder.word_embeddings)[0],
                                        np.float64))
    vocab = heads.preprocessor.tokenize.get_vocabulary()
    for line, p in zip(lines, probabilities):
        assert set(line) == {"position", "ids", "tokens", "probabilities"}
        assert line["ids"] == np.argsort(-p)[:4].tolist()
        assert line["tokens"] == [vocab[i] for i in line["ids"]]
        np.testing.assert_allclose(line["probabilities"], np.sort(p)[::-1][:4], rtol=1e-5)
    human = _explore("fill-mask", model_dir, text, "--top-k", "2")
    assert "[MASK] 1 (position" in human and "[MASK] 2 (position" in human and lines[0]["tokens"][0] in human

    a, b = "the man went to the store.", "he bought a gallon of milk."
    got = json.loads(_explore("next-sentence", model_dir, a, b, "--json"))
    pooled = heads.encoder({k: v.numpy() for k, v in heads.pack([a], [b]).items()})["pooled_output"]
    assert set(got) == {"is_next_probability"}
    assert got["is_next_probability"] == pytest.approx(_softmax(np.asarray(heads.nsp_head(pooled), np.float64))[0, 0],
                                                       rel=1e-5)


@pytest.mark.slow
def test_cli_errors_name_the_problem(tiny_model_dir, tmp_path):
    run = subprocess.run([*python("-m", "kbert.explore"), "fill-mask", str(tiny_model_dir), "no mask"],
                         capture_output=True, text=True, timeout=600, env=_env(), cwd=REPO)
    assert run.returncode == 1 and "kbert explore: error: " in run.stderr and "no 'mlm' head" in run.stderr
    run = subprocess.run([*python("-m", "kbert.explore"), "next-sentence", str(tmp_path / "nothing"), "a", "b"],
                         capture_output=True, text=True, timeout=600, env=_env(), cwd=REPO)
    assert run.returncode == 1 and "kbert explore: error: " in run.stderr and "model directory not found" in run.stderr


@pytest.mark.slow
def test_finetune_prints_and_writes_its_curves(sst2_finetune_run):
    out, stdout = sst2_finetune_run  # conftest: python -m kbert.finetune --task glue/sst2 ... --epochs 2
    assert f"loss/accuracy curves: {out / 'curves.png'}" in stdout
    assert (out / "curves.png").stat().st_size > 10_000
    plotted = {tag for _, tag in read_scalars(out / "logs")}
    assert any("loss" in t for t in plotted) and any("accuracy" in t for t in plotted), plotted


def test_projector_flags_for_the_features_cli(tmp_path, tiny_model_dir):
    import argparse

    from kbert.commands.features import add_projector_arguments, projector_from_args

    parser = argparse.ArgumentParser()
    parser.add_argument("model_dir")
    add_projector_arguments(parser)
    arrays = _features()
    assert projector_from_args(parser.parse_args([str(tiny_model_dir)]), arrays, ROWS) is None
    args = parser.parse_args([str(tiny_model_dir), "--projector", str(tmp_path / "p"), "--projector-level", "sentence"])
    assert "tensorboard --logdir" in projector_from_args(args, arrays, ROWS)
    vectors, lines = _read_projector(tmp_path / "p")
    assert vectors.shape == (3, 4) and len(lines) == 3
