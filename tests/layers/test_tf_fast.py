"""kbert.layers.tf_fast: the TensorFlow fast paths give the plain Keras path's values and gradients;
the layers' structure (imports, the block calling its attention layer) keeps them behind the seam."""

import ast
import collections
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert import BertConfig, BertEncoder
from kbert.layers import tf_fast
from kbert.layers.heads import build_head
from kbert.layers.normalization import LAYER_NORM_EPSILON
from kbert.models.pretrainer import BertPretrainer

LAYERS = pathlib.Path(__file__).resolve().parents[2] / "kbert" / "layers"
MODELS = LAYERS.parent / "models"


def _inputs(batch, seq, vocab, seed=0, pad_from=None):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), "int32")
    if pad_from is not None:
        mask[1:, pad_from:] = 0
    return {"input_word_ids": tf.constant(rng.integers(1, vocab, (batch, seq)), tf.int32),
            "input_mask": tf.constant(mask), "input_type_ids": tf.constant(rng.integers(0, 2, (batch, seq)), tf.int32)}


def _graph_ops(fn, *args):
    return [op.type for op in tf.function(fn).get_concrete_function(*args).graph.get_operations()]


@pytest.fixture(scope="module")
def tiny():
    keras.utils.set_random_seed(3)
    return BertEncoder(BertConfig.preset("tiny", vocab_size=300, max_position_embeddings=32,
                                         hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))


def test_the_switch(monkeypatch):
    assert tf_fast.available()
    with tf_fast.disabled():
        assert not tf_fast.available()
        with tf_fast.disabled():
            assert not tf_fast.available()
        assert not tf_fast.available()
    assert tf_fast.available()
    monkeypatch.setenv(tf_fast.FAST_PATHS_ENV, "0")
    assert not tf_fast.available()
    assert not tf_fast.kernels_enabled(tf.zeros([2, 2]))
    assert tf_fast.matmul_dtype("bfloat16") == "bfloat16"  # no float32 stand-in with the seam off


def test_each_path_runs_its_own_ops(tiny):
    """The fast path is TensorFlow's fused formulations, the plain path Keras' own ops."""
    x = _inputs(2, 8, 300)
    fast = collections.Counter(_graph_ops(lambda v: tiny(v)["sequence_output"], x))
    with tf_fast.disabled():
        plain = collections.Counter(_graph_ops(lambda v: tiny(v)["sequence_output"], x))
    norms, projections = 1 + 2 * len(tiny.blocks), 6 * len(tiny.blocks)
    assert fast["FusedBatchNormV3"] == norms and plain["FusedBatchNormV3"] == 0  # Keras: mean, variance, rsqrt
    assert plain["Rsqrt"] == norms and fast["Rsqrt"] == 0
    assert fast["BiasAdd"] - plain["BiasAdd"] == projections  # every projection's bias: BiasAdd


@pytest.mark.parametrize("training", [False, True])
def test_encoder_fast_path_equals_plain_path_values_and_gradients(tiny, training):
    """With dropout 0, training differs from inference only in the XLA GELU kernel (static shapes)."""
    x = _inputs(3, 16, 300, pad_from=11)
    probe = tf.constant(np.random.default_rng(1).normal(size=(3, 16, 128)), tf.float32)

    def run():
        with tf.GradientTape() as tape:
            out = tiny(x, training=training)
            loss = tf.reduce_sum(out["sequence_output"] * probe) + tf.reduce_sum(out["pooled_output"])
        grads = tape.gradient(loss, tiny.trainable_variables)
        return out["sequence_output"].numpy(), [tf.convert_to_tensor(g).numpy() for g in grads]

    fast_out, fast_grads = run()
    with tf_fast.disabled():
        plain_out, plain_grads = run()
    np.testing.assert_allclose(fast_out, plain_out, atol=2e-5)
    for g_fast, g_plain, w in zip(fast_grads, plain_grads, tiny.trainable_variables):
        scale = max(1.0, float(np.abs(g_plain).max()))
        np.testing.assert_allclose(g_fast, g_plain, atol=1e-4 * scale, err_msg=w.path)


def test_pretrainer_loss_and_gradients_equal_with_and_without_the_seam(tiny):
    """The heads (transpose_b logits) and the loss (the XLA cross-entropy kernel)."""
    keras.utils.set_random_seed(4)
    model = BertPretrainer(tiny)
    rng = np.random.default_rng(5)
    x = dict(_inputs(4, 16, 300, seed=2), masked_lm_positions=tf.constant(rng.integers(1, 16, (4, 3)), tf.int32))
    y = {"masked_lm_ids": tf.constant(rng.integers(0, 300, (4, 3)), tf.int32),
         "masked_lm_weights": tf.constant([[1.0, 1.0, 0.0]] * 4),
         "next_sentence_labels": tf.constant([0, 1, 1, 0], tf.int32)}

    def run():
        with tf.GradientTape() as tape:
            loss = model.compute_loss(x, y, model(x, training=True))
        return float(loss), [tf.convert_to_tensor(g).numpy() for g in tape.gradient(loss, model.trainable_variables)]

    fast_loss, fast_grads = run()
    assert tf_fast.kernels_enabled(tf.zeros([12, 300]))  # the fused cross-entropy ran above
    with tf_fast.disabled():
        plain_loss, plain_grads = run()
    assert fast_loss == pytest.approx(plain_loss, rel=1e-5)
    for g_fast, g_plain, w in zip(fast_grads, plain_grads, model.trainable_variables):
        np.testing.assert_allclose(g_fast, g_plain, atol=1e-5, err_msg=w.path)


def test_mlm_head_fast_logits_equal_a_numpy_decoder(tiny):
    head = build_head("mlm", tiny.config)
    rows = tf.constant(np.random.default_rng(6).normal(size=(2, 3, 128)), tf.float32)
    transformed = head.layer_norm(head.transform(rows)).numpy()
    expected = transformed @ tiny.word_embeddings.numpy().T + head.output_bias.numpy()
    np.testing.assert_allclose(head(rows, None, tiny.word_embeddings).numpy(), expected, atol=1e-4)
    with tf_fast.disabled():
        np.testing.assert_allclose(head(rows, None, tiny.word_embeddings).numpy(), expected, atol=1e-4)


def test_block_is_attention_then_ffn_each_with_residual_and_layer_norm(tiny):
    """The post-LN block equals its sub-layers called in turn (Keras' own Dense/LayerNorm calls)."""
    block = tiny.blocks[0]
    x = tf.constant(np.random.default_rng(7).normal(size=(2, 9, 128)), tf.float32)
    mask = tf.constant([[1] * 9, [1] * 6 + [0] * 3])
    h = block.attention_layer_norm(x + block.attention(x, mask))
    expected = block.output_layer_norm(h + block.output_dense(block.intermediate(h)))
    np.testing.assert_allclose(block(x, padding_mask=mask).numpy(), expected.numpy(), atol=2e-5)


def test_one_layer_norm_epsilon(tiny):
    norms = [tiny.embeddings.layer_norm, build_head("mlm", tiny.config).layer_norm]
    norms += [norm for block in tiny.blocks for norm in (block.attention_layer_norm, block.output_layer_norm)]
    assert {layer.epsilon for layer in norms} == {LAYER_NORM_EPSILON} == {1e-12}
    sources = "".join(p.read_text() for p in LAYERS.glob("*.py") if p.stem != "normalization")
    assert "1e-12" not in sources and "LayerNormalization(" not in sources


def _imports(path):
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_only_the_seam_touches_tensorflow_and_there_is_no_import_cycle():
    modules = {f"kbert.layers.{p.stem}": p for p in LAYERS.glob("*.py") if p.stem != "__init__"}
    modules.update({f"kbert.models.{p.stem}": p for p in MODELS.glob("*.py") if p.stem != "__init__"})
    graph = {}
    for name, path in modules.items():
        imported = _imports(path)
        if name not in ("kbert.layers.tf_fast", "kbert.layers.tf_elementwise"):
            assert not {i for i in imported if i.split(".")[0] == "tensorflow"}, f"{name} imports TensorFlow"
            assert "kbert.layers.tf_elementwise" not in imported, f"{name} reaches past the seam to the kernels"
        graph[name] = {m for m in modules if m in imported}
    assert "kbert.training.distribute" not in _imports(MODELS / "pretrainer.py")

    def visit(node, stack):
        assert node not in stack, "import cycle: " + " -> ".join([*stack, node])
        for nxt in graph[node]:
            visit(nxt, [*stack, node])

    for name in graph:
        visit(name, [])
