"""BertPretrainer: the loss against a NumPy reference, heads <-> Google cls/*, strategies."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from kbert import BertConfig, BertEncoder
from kbert.models.pretrainer import BertPretrainer
from conftest import REPO


def _batch(batch=4, seq=16, preds=5, vocab=1000, seed=0):
    rng = np.random.default_rng(seed)
    x = {
        "input_word_ids": rng.integers(5, vocab, (batch, seq)).astype("int32"),
        "input_mask": np.ones((batch, seq), "int32"),
        "input_type_ids": np.zeros((batch, seq), "int32"),
        "masked_lm_positions": np.stack([rng.permutation(seq)[:preds] for _ in range(batch)]).astype("int32"),
    }
    weights = np.ones((batch, preds), "float32")
    weights[0, 3:] = 0
    weights[2, 1:] = 0
    y = {
        "masked_lm_ids": rng.integers(0, vocab, (batch, preds)).astype("int32"),
        "masked_lm_weights": weights,
        "next_sentence_labels": rng.integers(0, 2, (batch,)).astype("int32"),
    }
    return x, y


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_loss_matches_numpy_reference():
    keras.utils.set_random_seed(0)
    config = BertConfig.preset("tiny", vocab_size=1000, max_position_embeddings=32)
    model = BertPretrainer(BertEncoder(config))
    x, y = _batch()
    out = model(x)
    assert out["mlm_logits"].shape == (4, 5, 1000) and out["nsp_logits"].shape == (4, 2)
    loss = float(model.compute_loss(x, y, out))
    mlm = -np.take_along_axis(_log_softmax(np.asarray(out["mlm_logits"], np.float64)),
                              y["masked_lm_ids"][..., None], -1)[..., 0]
    w = y["masked_lm_weights"]
    expected_mlm = (mlm * w).sum() / (w.sum() + 1e-5)
    nsp = -np.take_along_axis(_log_softmax(np.asarray(out["nsp_logits"], np.float64)),
                              y["next_sentence_labels"][:, None], -1).mean()
    assert loss == pytest.approx(expected_mlm + nsp, rel=1e-5)
    # MLM logits: the head's transform applied to the gathered positions, against the tied embeddings
    seq = np.asarray(model.encoder(x)["sequence_output"])
    gathered = np.take_along_axis(seq, x["masked_lm_positions"][..., None], 1)
    head = model.mlm_head
    h = np.asarray(head.layer_norm(head.transform(gathered)))
    logits = h @ model.encoder.word_embeddings.numpy().T + head.output_bias.numpy()
    np.testing.assert_allclose(out["mlm_logits"], logits, atol=1e-4)


@pytest.mark.parametrize("fused_kernels", ["1", "0"])
def test_metrics_match_numpy(fused_kernels, monkeypatch):
    """mlm_accuracy = weighted share of predictions whose label has the largest logit, with the
    fused cross-entropy (accuracy found in its loop) and with Keras' ops."""
    monkeypatch.setenv("KBERT_FUSED_KERNELS", fused_kernels)
    keras.utils.set_random_seed(0)
    config = BertConfig.preset("tiny", vocab_size=50, max_position_embeddings=32)
    model = BertPretrainer(BertEncoder(config))
    x, y = _batch(vocab=50)
    out = model(x)
    y["masked_lm_ids"][1] = np.argmax(np.asarray(out["mlm_logits"])[1], -1)  # some hits
    model.compute_loss(x, y, out)
    logs = model.compute_metrics(x, y, out)
    hits = np.argmax(np.asarray(out["mlm_logits"]), -1) == y["masked_lm_ids"]
    w = y["masked_lm_weights"]
    assert float(logs["mlm_accuracy"]) == pytest.approx((hits * w).sum() / w.sum(), abs=1e-6)
    nsp_hits = np.argmax(np.asarray(out["nsp_logits"]), -1) == y["next_sentence_labels"]
    assert float(logs["nsp_accuracy"]) == pytest.approx(nsp_hits.mean(), abs=1e-6)


def test_evaluate_over_batches_of_unknown_number_gives_the_per_prediction_means():
    """Held-out batches as ``kbert pretrain --eval-data`` reads them (no known length, a last short
    batch): ``evaluate``'s masked-LM and NSP losses are the means over every prediction and every
    pair, recomputed here from the same logits. Graph-mode evaluate runs one empty step when such a
    dataset ends; it must count for nothing (it made both losses n/(n+1) of the truth)."""
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    config = BertConfig.preset("tiny", vocab_size=1000, max_position_embeddings=32)
    model = BertPretrainer(BertEncoder(config))
    model.compile(optimizer="adam")
    batches = [_batch(seed=1), _batch(seed=2), _batch(batch=3, seed=3)]
    spec = tuple({k: tf.TensorSpec((None, *v.shape[1:]), v.dtype) for k, v in part.items()} for part in batches[0])
    data = tf.data.Dataset.from_generator(lambda: iter(batches), output_signature=spec)
    assert data.cardinality() == tf.data.UNKNOWN_CARDINALITY
    results = model.evaluate(data, return_dict=True, verbose=0)
    mlm_ce, mlm_w, nsp_ce, mlm_hit = [], [], [], []
    for x, y in batches:
        out = model(x)
        log_p = _log_softmax(np.asarray(out["mlm_logits"], np.float64))
        mlm_ce.append(-np.take_along_axis(log_p, y["masked_lm_ids"][..., None], -1)[..., 0].ravel())
        mlm_hit.append((log_p.argmax(-1) == y["masked_lm_ids"]).ravel())
        mlm_w.append(y["masked_lm_weights"].ravel())
        nsp_ce.append(-np.take_along_axis(_log_softmax(np.asarray(out["nsp_logits"], np.float64)),
                                          y["next_sentence_labels"][:, None], -1)[:, 0])
    w, nsp = np.concatenate(mlm_w), np.concatenate(nsp_ce)
    assert results["mlm_loss"] == pytest.approx((np.concatenate(mlm_ce) * w).sum() / w.sum(), rel=1e-5)
    assert results["mlm_accuracy"] == pytest.approx((np.concatenate(mlm_hit) * w).sum() / w.sum(), abs=1e-6)
    assert results["nsp_loss"] == pytest.approx(nsp.mean(), rel=1e-5)


def test_no_nsp_trains_mlm_alone():
    config = BertConfig.preset("tiny", vocab_size=1000, max_position_embeddings=32)
    model = BertPretrainer(BertEncoder(config), use_nsp=False)
    x, y = _batch()
    out = model(x)
    assert set(out) == {"mlm_logits"} and set(model.heads()) == {"mlm"}


@pytest.mark.slow
def test_fit_reduces_the_loss_on_a_fixed_batch():
    keras.utils.set_random_seed(1)
    config = BertConfig.preset("tiny", vocab_size=1000, max_position_embeddings=32)
    model = BertPretrainer(BertEncoder(config))
    from kbert.training.optimization import create_optimizer

    model.compile(optimizer=create_optimizer(1e-3, 30, 3))
    x, y = _batch()
    history = model.fit(x, y, batch_size=4, epochs=30, verbose=0).history
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    assert history["mlm_accuracy"][-1] > history["mlm_accuracy"][0]
    assert {"mlm_loss", "nsp_loss", "nsp_accuracy"} <= set(history)


@pytest.mark.slow
def test_heads_round_trip_through_google_names(tmp_path):
    from kbert.convert import google
    from kbert.model_dir import load_heads, save_model_dir

    config = BertConfig.preset("tiny", vocab_size=1000, max_position_embeddings=32)
    model = BertPretrainer(BertEncoder(config))
    model(_batch()[0])
    vocab = [f"[unused{i}]" for i in range(1000)]
    save_model_dir(tmp_path / "m", model.encoder, vocab=vocab,
                   heads={n: (h, {"type": n}) for n, h in model.heads().items()})
    google.to_google(tmp_path / "m", tmp_path / "g" / "model.ckpt")
    import tensorflow as tf

    names = set(tf.train.load_checkpoint(str(tmp_path / "g" / "model.ckpt")).get_variable_to_shape_map())
    assert {"cls/predictions/output_bias", "cls/predictions/transform/dense/kernel",
            "cls/predictions/transform/LayerNorm/gamma", "cls/seq_relationship/output_weights"} <= names
    google.convert(tmp_path / "g" / "model.ckpt", tmp_path / "back")
    heads = load_heads(tmp_path / "back")
    np.testing.assert_array_equal(heads["mlm"].output_bias.numpy(), model.mlm_head.output_bias.numpy())
    np.testing.assert_array_equal(heads["nsp"].dense.kernel.numpy(), model.nsp_head.dense.kernel.numpy())


STRATEGY_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np, tensorflow as tf
    mode = sys.argv[1]
    if mode == "mirrored":
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    from kbert import BertConfig, BertEncoder
    from kbert.models.pretrainer import BertPretrainer
    from kbert.training.distribute import StrategyReplicas
    from kbert.training.optimization import create_optimizer
    sys.path[:0] = [{tests!r}, {models!r}]  # conftest, and this file
    from test_pretrainer import _batch
    if mode == "mirrored":
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    elif mode == "multi_worker":
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    else:
        strategy = tf.distribute.get_strategy()
    keras.utils.set_random_seed(0)
    xs, ys = zip(*[_batch(batch=8, seed=s) for s in range(5)])
    x = {{k: np.concatenate([b[k] for b in xs]) for k in xs[0]}}
    y = {{k: np.concatenate([b[k] for b in ys]) for k in ys[0]}}
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    if mode == "multi_worker":  # every worker sees the same global batches; the strategy splits them
        ds = ds.with_options(tf.data.Options())
        opts = tf.data.Options(); opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        ds = ds.with_options(opts)
    config = BertConfig.preset("tiny", vocab_size=1000, max_position_embeddings=32,
                               hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    with strategy.scope():
        model = BertPretrainer(BertEncoder(config), replicas=StrategyReplicas())
        model.compile(optimizer=create_optimizer(1e-3, 5, 1, clipnorm=0.5))  # clipping active
        model({{k: v[:8] for k, v in x.items()}})  # build before fit sees distributed batches
    losses = []
    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            losses.append(float(logs["loss"]))
    model.fit(ds, epochs=1, verbose=0, callbacks=[Record()])
    out = sys.argv[2]
    np.savez(out, losses=np.array(losses), **{{f"w{{i}}": v.numpy() for i, v in enumerate(model.weights)}})
""")


def _run_strategy(tmp_path, mode, out, env=None):
    script = tmp_path / "strategy.py"
    if not script.exists():  # written once: rewriting it could truncate it under a process just started
        script.write_text(STRATEGY_SCRIPT.format(tests=str(REPO / "tests"), models=str(REPO / "tests" / "models")))
    return subprocess.Popen([sys.executable, str(script), mode, str(out)], env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait(proc, timeout=600):
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out[-3000:]


@pytest.mark.slow
def test_mirrored_strategy_on_two_cpus_matches_one_device(tmp_path):
    _wait(_run_strategy(tmp_path, "single", tmp_path / "single.npz"))
    _wait(_run_strategy(tmp_path, "mirrored", tmp_path / "mirrored.npz"))
    single, mirrored = np.load(tmp_path / "single.npz"), np.load(tmp_path / "mirrored.npz")
    # Keras reports the running mean of the loss over the epoch; 5 steps either way.
    assert len(single["losses"]) == 5
    np.testing.assert_allclose(mirrored["losses"], single["losses"], atol=1e-4)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_multi_worker_mirrored_two_local_workers_end_with_the_same_weights(tmp_path):
    ports = [_free_port(), _free_port()]
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs = [
        _run_strategy(tmp_path, "multi_worker", tmp_path / f"w{i}.npz",
                      env={"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})})
        for i in range(2)
    ]
    for p in procs:
        _wait(p)
    w0, w1 = np.load(tmp_path / "w0.npz"), np.load(tmp_path / "w1.npz")
    weights = [k for k in w0.files if k.startswith("w")]
    assert len(weights) > 20
    for k in weights:
        np.testing.assert_array_equal(w0[k], w1[k])
    # and they trained: the loss moved
    assert w0["losses"][-1] != w0["losses"][0]
