"""kbert's encoder written as ONNX (kbert.export.onnx.encoder, .graph): the Keras encoder's outputs in
ONNX Runtime, both forms, every activation, batch 1-64 and lengths 1-512, any 0/1 mask."""

import numpy as np
import pytest

from conftest import require

ort = require("onnxruntime")
require("onnx")

import keras  # noqa: E402

from kbert import BertConfig, BertEncoder  # noqa: E402
from kbert.export.onnx import heads  # noqa: E402
from kbert.export.onnx.encoder import encoder_nodes, encoder_weights  # noqa: E402
from kbert.export.onnx.graph import Graph  # noqa: E402

SHAPES = [(1, 1), (64, 37), (3, 512)]


def session(encoder, form):
    g = Graph("encoder")
    ids, mask, types = (g.input(n, g.onnx.TensorProto.INT32, ["batch", "sequence"])
                        for n in ("input_word_ids", "input_mask", "input_type_ids"))
    sequence, pooled = encoder_nodes(g, encoder_weights(encoder), encoder.config, ids, mask, types, form)
    heads.encoder(g, encoder.config, {"sequence": sequence, "pooled": pooled})
    model = g.model("test")
    ops = {n.op_type for n in model.graph.node}
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]), ops


def feeds(batch, length, vocab, seed=0, holes=False):
    """Rows of every length from 1 to ``length`` (right padding; with ``holes`` also masked
    positions inside a row), type 1 on the second half of each row."""
    rng = np.random.default_rng(seed)
    lengths = np.linspace(1, length, batch).astype(int) if batch > 1 else np.array([length])
    positions = np.arange(length)
    mask = positions < lengths[:, None]
    if holes:
        mask &= rng.random(mask.shape) > 0.3
        mask[:, 0] = True
    types = mask & (positions >= lengths[:, None] // 2)
    return {"input_word_ids": rng.integers(0, vocab, (batch, length)).astype(np.int32),
            "input_mask": mask.astype(np.int32), "input_type_ids": types.astype(np.int32)}


def largest_differences(encoder, sess, x):
    want = encoder(x, training=False)
    got = dict(zip(["sequence_output", "pooled_output"], sess.run(["sequence_output", "pooled_output"], x)))
    real = x["input_mask"].astype(bool)
    sequence = np.abs(got["sequence_output"] - np.asarray(want["sequence_output"]))[real].max()
    pooled = np.abs(got["pooled_output"] - np.asarray(want["pooled_output"])).max()
    return sequence, pooled


@pytest.fixture(scope="module", params=["gelu", "gelu_exact", "relu", "silu"])
def encoder(request):
    keras.utils.set_random_seed(0)
    return BertEncoder(BertConfig.preset("tiny", vocab_size=500, max_position_embeddings=512,
                                         hidden_act=request.param))


@pytest.mark.parametrize("form", ["ort", "standard"])
def test_the_encoder_gives_kerass_outputs(encoder, form):
    sess, ops = session(encoder, form)
    for batch, length in SHAPES:
        sequence, pooled = largest_differences(encoder, sess, feeds(batch, length, 500))
        assert sequence < 1e-5 and pooled < 1e-5, (batch, length, sequence, pooled)
    fused = {"EmbedLayerNormalization", "Attention", "SkipLayerNormalization"}
    assert fused <= ops if form == "ort" else not fused & ops


@pytest.mark.parametrize("form", ["ort", "standard"])
def test_any_mask_counts_as_keras_counts_it(encoder, form):
    """Masked positions inside a row (not only right padding) are left out of attention as in kbert."""
    sess, _ = session(encoder, form)
    sequence, pooled = largest_differences(encoder, sess, feeds(8, 40, 500, seed=1, holes=True))
    assert sequence < 1e-5 and pooled < 1e-5


def test_each_gelu_is_its_own_fused_kernel():
    """kbert's gelu is the tanh approximation (FastGelu), gelu_exact the erf form (BiasGelu)."""
    for act, kernel in (("gelu", "FastGelu"), ("gelu_exact", "BiasGelu")):
        keras.utils.set_random_seed(0)
        encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=50, hidden_act=act))
        _, ops = session(encoder, "ort")
        assert kernel in ops and ({"FastGelu", "BiasGelu"} - {kernel}).isdisjoint(ops)


def test_a_scalar_constant_stays_a_scalar():
    g = Graph("g")
    g.const("zero", np.asarray(0, np.int64))
    g.const("names", np.asarray(["a", "b"], dtype=object))
    assert list(g.initializers[0].dims) == [] and g.initializers[1].string_data == [b"a", b"b"]


@pytest.mark.slow
def test_minilm_real_weights(minilm_model_dir):
    """all-MiniLM-L6-v2 (erf GELU, 6 blocks): the fused form within 1e-5 at the longest length and the
    largest batch."""
    from kbert.model_dir import load_encoder

    encoder = load_encoder(minilm_model_dir)
    sess, ops = session(encoder, "ort")
    assert "BiasGelu" in ops
    for batch, length in [(2, 512), (64, 24)]:
        sequence, pooled = largest_differences(encoder, sess, feeds(batch, length, encoder.config.vocab_size))
        assert sequence < 1e-5 and pooled < 1e-5, (batch, length, sequence, pooled)
