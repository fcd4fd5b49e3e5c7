"""Training under Keras' JAX backend against TensorFlow, on the CPU.

A backend is chosen once per process, so each side runs in its own subprocess
(tests/fixtures/backend_worker.py); the model directory they share is written here, under TensorFlow.
XLA's host platform stands in for accelerators: ``--xla_force_host_platform_device_count=4``
gives JAX four CPU devices to spread a batch over.
"""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys

import numpy as np
import pytest

from conftest import require

require("jax")


ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKER = ROOT / "tests" / "fixtures" / "backend_worker.py"


def _env(backend, devices=None):
    env = {**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "TF_CPP_MIN_LOG_LEVEL": "2", "JAX_PLATFORMS": "cpu"}
    if devices:
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}".strip()
    return env


def _worker(backend, *args, devices=None, timeout=900):
    proc = subprocess.run([sys.executable, str(WORKER), *map(str, args)], env=_env(backend, devices),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def _start(backend, *args, devices=None):
    return subprocess.Popen([sys.executable, str(WORKER), *map(str, args)], env=_env(backend, devices),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def small_model_dir(tmp_path_factory):
    """A random 2-layer, hidden-32 BERT with a 100-token vocab, written under TensorFlow."""
    import keras

    from kbert import BertConfig, BertEncoder
    from kbert.model_dir import save_model_dir
    from fixtures.tiny_records import write_vocab

    root = tmp_path_factory.mktemp("backends")
    vocab = write_vocab(root / "vocab.txt")
    keras.utils.set_random_seed(0)
    size = len(vocab.read_text(encoding="utf-8").split())
    config = BertConfig(vocab_size=size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    save_model_dir(root / "model", BertEncoder(config), vocab_file=vocab, do_lower_case=True)
    return root / "model"


def _assert_same_weights(a, b):
    """Relative 1e-5 (absolute 1e-7, a ten-thousandth of one step's size, for the biases that start at
    zero). Attention key biases are left out: their gradient is zero in exact arithmetic (a row's
    softmax does not change when the same q.b_k is added to all its logits), so what Adam makes of
    the rounding noise each backend leaves there is noise too."""
    skip = ("devices", "processes", "moved")
    keys = [k for k in a.files if k not in skip]
    assert keys == [k for k in b.files if k not in skip]
    compared = [k for k in keys if not k.endswith("attention/key/bias")]
    assert len(compared) > 20
    for k in compared:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-7, err_msg=k)


@pytest.mark.slow
def test_one_step_under_tensorflow_and_jax_gives_the_same_weights(small_model_dir, tmp_path):
    _worker("tensorflow", "step", small_model_dir, tmp_path / "tf.npz")
    _worker("jax", "step", small_model_dir, tmp_path / "jax.npz")
    for kind in ("", "-documents"):  # a batch of texts; a batch of documents' windows, pooled
        tf_weights, jax_weights = np.load(tmp_path / f"tf{kind}.npz"), np.load(tmp_path / f"jax{kind}.npz")
        _assert_same_weights(jax_weights, tf_weights)
        # The step moved the weights (two unchanged models would agree and prove nothing).
        assert float(tf_weights["moved"]) > 1e-4 and float(jax_weights["moved"]) > 1e-4


@pytest.mark.slow
def test_data_parallel_over_four_devices_equals_one_device(small_model_dir, tmp_path):
    _worker("jax", "fit", small_model_dir, tmp_path / "one.npz", 3, devices=1)
    _worker("jax", "fit", small_model_dir, tmp_path / "four.npz", 3, devices=4)
    a, b = np.load(tmp_path / "one.npz"), np.load(tmp_path / "four.npz")
    assert int(a["devices"]) == 1 and int(b["devices"]) == 4
    _assert_same_weights(b, a)


@pytest.mark.slow
def test_two_processes_with_two_devices_each_equal_one_process_with_four(small_model_dir, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [_start("jax", "fit", small_model_dir, tmp_path / f"p{i}.npz", 3, f"127.0.0.1:{port}", 2, i,
                    devices=2) for i in range(2)]
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=900)
            assert proc.returncode == 0, err[-4000:]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    _worker("jax", "fit", small_model_dir, tmp_path / "single.npz", 3, devices=4)
    single = np.load(tmp_path / "single.npz")
    for i in range(2):
        part = np.load(tmp_path / f"p{i}.npz")
        assert int(part["devices"]) == 4 and int(part["processes"]) == 2
        _assert_same_weights(part, single)


@pytest.mark.slow
def test_jax_fine_tuning_learns_and_its_tensorflow_export_answers_the_same(small_model_dir, tmp_path):
    _worker("jax", "finetune", small_model_dir, tmp_path / "jax_model")
    saved = np.load(tmp_path / "jax_model" / "jax_probabilities.npz")
    loss = saved["loss"]
    assert loss[-1] < 0.5 * loss[0], loss  # it learns the 8 texts
    from fixtures.backend_worker import LABELS

    assert (saved["probabilities"].argmax(axis=-1) == np.array(LABELS)).all()
    _worker("tensorflow", "served", tmp_path / "jax_model", tmp_path / "served.npz")
    served = np.load(tmp_path / "served.npz")["probabilities"]
    np.testing.assert_allclose(served, saved["probabilities"], atol=1e-5)
    # kbert predict under JAX (ids packed on the host, the last batch padded) answers the same.
    import json

    from fixtures.backend_worker import TEXTS

    (tmp_path / "rows.csv").write_text("id,text\n" + "".join(f"{i},{t}\n" for i, t in enumerate(TEXTS)))
    proc = subprocess.run([sys.executable, "-m", "kbert.predict", "--backend", "jax", str(tmp_path / "jax_model"),
                           "--input", str(tmp_path / "rows.csv"), "--output", str(tmp_path / "rows.jsonl"),
                           "--task-format", "csv", "--text-columns", "text", "--id-column", "id", "--probabilities",
                           "--batch-size", "3", "--quiet"], env=_env("jax"), capture_output=True, text=True,
                          timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    predicted = np.array([[row["probabilities"][name] for name in ("0", "1")] for row in rows])
    np.testing.assert_allclose(predicted, saved["probabilities"], atol=1e-5)


@pytest.mark.slow
def test_jax_pretraining_learns_and_resumes_from_its_checkpoint(tmp_path):
    from fixtures.tiny_records import write_records, write_vocab

    data = tmp_path / "data"
    data.mkdir()
    write_vocab(data / "vocab.txt")
    write_records(data / "train-0.tfrecord", 300)
    _worker("jax", "pretrain", data, tmp_path / "m", 20)
    first = np.load(tmp_path / "m" / "losses-20.npz")["losses"]
    assert first[-5:].mean() < first[:5].mean() - 0.3, first
    assert sorted(p.name for p in (tmp_path / "m" / "checkpoints").glob("ckpt-*")) == ["ckpt-10", "ckpt-20"]
    # Run on to step 30: it resumes at step 21 from ckpt-20 (weights and optimizer state), so its
    # first losses continue the curve instead of starting again near the first run's.
    proc = _worker("jax", "pretrain", data, tmp_path / "m", 30)
    assert "resuming from step 20" in proc.stdout
    resumed = np.load(tmp_path / "m" / "losses-30.npz")["losses"]
    assert len(resumed) == 10 and resumed[:3].mean() < first[:3].mean() - 0.3
    assert (tmp_path / "m" / "encoder.weights.h5").exists()


@pytest.fixture(scope="module")
def task_round_trips(tmp_path_factory):
    """Tagging, span QA and multiple choice fine-tuned under JAX (kbert.training.finetune, then each
    reloaded model answers), in one JAX process, and each model directory's TensorFlow export served,
    in one TensorFlow process: {kind: (JAX's record, its outputs, the export's answers and outputs)}.
    One process per backend for the three: each start (Keras, TensorFlow or JAX imported) costs ~10 s.
    The model is a random BERT-Tiny with one layer (the uncased vocab, 128 positions): XLA compiles each
    train and predict step in JAX, and one layer compiles in less time than two (span QA: 20 s, not 26 s)."""
    import json

    import keras

    from fixtures.backend_worker import write_swag
    from conftest import SHARED, UNCASED_VOCAB
    from kbert import BertConfig, BertEncoder
    from kbert.model_dir import save_model_dir

    root = tmp_path_factory.mktemp("task_round_trips")
    keras.utils.set_random_seed(0)
    tiny_model_dir = root / "init"
    save_model_dir(tiny_model_dir, BertEncoder(BertConfig.preset("tiny", num_hidden_layers=1, max_position_embeddings=128)),
                   vocab_file=UNCASED_VOCAB, do_lower_case=True)
    write_swag(root / "swag")
    kinds = {"tagging": SHARED / "conll2003", "span_qa": SHARED / "squad", "multiple_choice": root / "swag"}
    jobs = [f"{kind}={data}" for kind, data in kinds.items()]
    _worker("jax", "task-finetune", tiny_model_dir, root / "jax", *jobs)
    _worker("tensorflow", "task-served", root / "jax", root / "served", *jobs)
    trips = {}
    for kind in kinds:
        record = json.loads((root / "jax" / kind / "jax_answers.json").read_text(encoding="utf-8"))
        served = json.loads((root / "served" / f"{kind}.json").read_text(encoding="utf-8"))
        trips[kind] = record, np.load(root / "jax" / kind / "jax_ids.npz"), served, np.load(root / "served" / f"{kind}.npz")
    return trips


def _task_round_trip(trips, kind):
    """``kind``'s round trip, after the checks every kind shares."""
    record, jax_out, served, served_out = trips[kind]
    assert record["backend"] == "jax"
    loss = record["loss"]
    assert loss[-1] < 0.6 * loss[0], loss  # it learns
    return record, jax_out, served, served_out


@pytest.mark.slow
def test_jax_tagging_learns_and_its_tensorflow_export_tags_the_same(task_round_trips):
    record, jax_out, served, served_out = _task_round_trip(task_round_trips, "tagging")
    assert set(record["best"]) >= {"precision", "recall", "f1"}
    np.testing.assert_allclose(served_out["token_probabilities"], jax_out["token_probabilities"], atol=1e-5)
    assert served == record["answers"]  # the same words, tags and entity spans
    assert any(w["tag"] != "O" for a in served for w in a["words"])  # not only the majority tag


@pytest.mark.slow
def test_jax_span_qa_learns_and_its_tensorflow_export_answers_the_same(task_round_trips):
    record, jax_out, served, served_out = _task_round_trip(task_round_trips, "span_qa")
    assert set(record["best"]) >= {"exact_match", "f1"}
    for key in ("start_logits", "end_logits"):
        np.testing.assert_allclose(served_out[key], jax_out[key], atol=1e-5)
    answers = record["answers"]
    assert [(a["text"], a["start"], a["end"]) for a in served] == [(a["text"], a["start"], a["end"]) for a in answers]
    np.testing.assert_allclose([a["probability"] for a in served], [a["probability"] for a in answers], atol=1e-5)
    assert all(a["text"] for a in answers)


@pytest.mark.slow
def test_jax_multiple_choice_learns_and_its_tensorflow_export_answers_the_same(task_round_trips):
    record, jax_out, _, served_out = _task_round_trip(task_round_trips, "multiple_choice")
    assert record["best"]["accuracy"] > 0.5
    np.testing.assert_allclose(served_out["probabilities"], jax_out["probabilities"], atol=1e-5)
    assert (jax_out["probabilities"].argmax(axis=-1) == 0).all()  # the right endings (index 0 as served)
