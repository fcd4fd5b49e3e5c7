"""The accelerator fast paths (kbert.layers.accel) against the plain keras.ops reference.

Every fused path must give the plain path's numbers with a padding mask: the sequence-lengths form
under JAX (jax.nn.dot_product_attention, XLA here; eager and inside jax.jit), the boolean-mask
form elsewhere (keras.ops.dot_product_attention): 1e-5 in float32, and bf16 within the rounding of
bf16. Training keeps the attention dropout on every path (a statistical check: the configured
fraction dropped, the expectation kept). The cuDNN kernel needs an NVIDIA GPU; here its wiring is
checked with a stand-in for JAX's private function (the lengths and rate it is given, the fallback
when it refuses). Mixed precision must keep LayerNorm statistics and the attention softmax in
float32. The JAX checks run in one child interpreter (Keras fixes its backend at import); its
numbers come back in an .npz.
"""

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from kbert import BertConfig, BertEncoder
from kbert.errors import OptionsError
from kbert.layers import accel
from kbert.layers.attention import MultiHeadSelfAttention

from conftest import require

REPO = pathlib.Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent("""
    import json, os, sys, types
    import jax, keras, numpy as np
    from fixtures.attention_probe import dropout_probe
    from kbert import BertConfig
    from kbert.layers import accel
    from kbert.layers.attention import MultiHeadSelfAttention
    from kbert.models.encoder import BertEncoder
    assert keras.backend.backend() == "jax", keras.backend.backend()
    out_file = sys.argv[1]
    numpy = keras.ops.convert_to_numpy
    out = {}
    rng = np.random.default_rng(11)
    lengths = np.array([16, 9, 3, 12])
    mask = (np.arange(16)[None, :] < lengths[:, None]).astype("int32")
    x = rng.normal(size=(4, 16, 64)).astype("float32")
    positions = np.array([[0, 2, 5], [1, 8, 3], [0, 1, 2], [11, 4, 7]], dtype="int32")

    # One attention layer, both implementations on the same weights.
    plain = MultiHeadSelfAttention(64, 4, dropout=0.1, output_dropout=0.1, attention_impl="plain", name="a")
    fused = MultiHeadSelfAttention(64, 4, dropout=0.1, output_dropout=0.1, attention_impl="fused", name="a")
    plain.build((None, None, 64)); fused.build((None, None, 64))
    for w in plain.weights:  # non-zero biases, so a dropped bias would show
        w.assign(rng.normal(scale=0.2, size=w.shape).astype("float32"))
    fused.set_weights(plain.get_weights())
    out["att_plain"], out["att_fused"] = numpy(plain(x, mask)), numpy(fused(x, mask))
    out["att_pos_plain"] = numpy(plain(x, mask, positions=positions))
    out["att_pos_fused"] = numpy(fused(x, mask, positions=positions))
    out["att_nomask_plain"], out["att_nomask_fused"] = numpy(plain(x)), numpy(fused(x))
    # Inside a compiled function the mask's values are not known: the lengths come from its sums.
    out["att_jit_fused"] = numpy(jax.jit(lambda a, m: fused(a, m))(x, mask))
    out["att_jit_pos_fused"] = numpy(jax.jit(lambda a, m, p: fused(a, m, positions=p))(x, mask, positions))
    out["att_jit_plain"], out["att_jit_pos_plain"] = out["att_plain"], out["att_pos_plain"]
    out["kernel_infer_fused"] = np.array(accel.choose_kernel("fused", training=False, dropout_rate=0.1,
                                                             dtype="float32", head_size=16))
    # A left-padded mask (known values) cannot be lengths: the masked attention runs, logged once.
    left = mask[:, ::-1].copy()
    out["att_left_plain"], out["att_left_fused"] = numpy(plain(x, left)), numpy(fused(x, left))
    out["said"] = np.array(json.dumps(accel.decisions()))
    for impl in ("plain", "fused", "auto"):
        out[f"probe_{impl}"] = np.array(dropout_probe(impl))

    config = BertConfig.preset("tiny", vocab_size=300, max_position_embeddings=32)
    ids = {"input_word_ids": (rng.integers(1, 300, (4, 16)) * mask).astype("int32"), "input_mask": mask,
           "input_type_ids": ((np.arange(16)[None, :] >= 5) * mask).astype("int32")}
    # (no keras.utils.set_random_seed: it imports TensorFlow where installed)
    enc_plain = BertEncoder(config, attention_impl="plain")
    weights = enc_plain.get_weights()
    enc_fused = BertEncoder(config, attention_impl="fused")
    enc_fused.set_weights(weights)
    out["enc_f32_plain"] = numpy(enc_plain(ids)["sequence_output"])
    out["enc_f32_fused"] = numpy(enc_fused(ids)["sequence_output"])
    # Attention dropout 0.5, hidden dropout 0: training differs from inference on every path.
    nodrop = BertConfig.preset("tiny", vocab_size=300, max_position_embeddings=32, hidden_dropout_prob=0.0,
                               attention_probs_dropout_prob=0.5)
    for impl in ("plain", "fused"):
        enc = BertEncoder(nodrop, attention_impl=impl)
        enc.set_weights(weights)
        out[f"train_{impl}"] = numpy(enc(ids, training=True)["sequence_output"])
        out[f"infer_{impl}"] = numpy(enc(ids)["sequence_output"])

    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    for impl in ("plain", "fused"):
        enc = BertEncoder(config, attention_impl=impl)
        enc.set_weights(weights)
        o = enc(ids)["sequence_output"]
        out[f"enc_bf16_{impl}"] = numpy(keras.ops.cast(o, "float32"))
        out[f"enc_bf16_{impl}_dtype"] = np.array(str(o.dtype))
    out["variable_dtypes"] = np.array(sorted({v.dtype for v in enc.weights}))
    probs = BertEncoder(config)(ids, output_attentions=True)["attention_probs"][0]
    out["probs_dtype"], out["probs"] = np.array(str(probs.dtype)), numpy(probs)
    # LayerNorm over rows with a large common offset: statistics taken in bf16 would lose the
    # spread entirely; in float32 they see it.
    ln = keras.layers.LayerNormalization(epsilon=1e-12)
    rows = (1000.0 + rng.normal(scale=4.0, size=(8, 64))).astype("float32")
    y = ln(rows)
    out["ln_in"], out["ln_out"], out["ln_dtype"] = rows, numpy(keras.ops.cast(y, "float32")), np.array(str(y.dtype))

    # The cuDNN path with a stand-in for JAX's private kernel (this CPU has no cuDNN): an NVIDIA
    # device of compute capability 9.0, and a function that records what it is given and answers
    # with XLA's attention on the same lengths.
    calls = []
    def stand_in(q, k, v, q_seqlen, kv_seqlen, *, scale, dropout_rate, seed):
        listed = lambda t: None if t is None else "traced" if isinstance(t, jax.core.Tracer) else np.asarray(t).tolist()
        calls.append(dict(q_seqlen=listed(q_seqlen), kv_seqlen=listed(kv_seqlen),
                          dropout_rate=dropout_rate, seed=seed, dtype=str(q.dtype), shape=list(q.shape)))
        return jax.nn.dot_product_attention(q, k, v, scale=scale, key_value_seq_lengths=kv_seqlen,
                                            implementation="xla")
    accel.cuda_device = lambda: types.SimpleNamespace(compute_capability="9.0", device_kind="stand-in GPU")
    accel._cudnn_function = lambda: (stand_in, None)
    c_plain = MultiHeadSelfAttention(64, 4, dropout=0.1, attention_impl="plain", name="c")
    c_auto = MultiHeadSelfAttention(64, 4, dropout=0.1, attention_impl="auto", name="c")
    c_auto2 = MultiHeadSelfAttention(64, 4, dropout=0.1, attention_impl="auto", name="c")
    for layer in (c_plain, c_auto, c_auto2):
        layer.build((None, None, 64))
    c_auto.set_weights(plain.get_weights()); c_plain.set_weights(plain.get_weights())
    f32 = lambda t: numpy(keras.ops.cast(t, "float32"))  # the layers run in bf16 (mixed_bfloat16 above)
    out["cudnn_plain"], out["cudnn_auto"] = f32(c_plain(x, mask)), f32(c_auto(x, mask))
    # Training with attention dropout: unpadded, cuDNN's kernel without a mask and with the
    # dropout; with a padding mask the plain path (JAX's kernel aborts in that gradient: compat).
    c_auto(x, training=True)
    c_auto2(x, training=True)
    out["cudnn_calls"] = np.array(json.dumps(calls))
    before = len(calls)
    c_auto(x, mask, training=True)
    out["padded_training_calls"] = np.array(len(calls) - before)
    from kbert import compat
    pick = lambda rate: str(accel.choose_kernel("auto", training=True, dropout_rate=rate, dtype="bfloat16",
                                                head_size=16, padding=True))
    out["kernel_padded_dropout"], out["kernel_padded_no_dropout"] = np.array(pick(0.1)), np.array(pick(0.0))
    compat.CUDNN_DROPOUT_WITH_PADDING_RUNS = {None: (0, 0, 0)}  # a JAX that has it fixed
    accel._route.clear()
    out["kernel_padded_dropout_fixed"] = np.array(pick(0.1))
    # A JAX that runs it under an XLA setting of the step: cuDNN only inside a training step that
    # kbert's models compile with that setting (CompiledStepSettings); elsewhere the plain path.
    compat.CUDNN_DROPOUT_WITH_PADDING_RUNS = {"no-cudnn-command-buffer": (0, 0, 0)}
    accel._route.clear()
    out["kernel_padded_dropout_outside_step"] = np.array(pick(0.1))
    class Tiny(accel.CompiledStepSettings, keras.Model):
        def __init__(self):
            super().__init__()
            self.attention = MultiHeadSelfAttention(64, 4, dropout=0.1, attention_impl="auto")
        def call(self, inputs, training=None):
            y = self.attention(inputs["x"], inputs["mask"], training=training)
            return keras.ops.cast(keras.ops.mean(y, axis=-1), "float32")
    tiny = Tiny()
    tiny.compile(optimizer="sgd", loss="mse")
    from kbert.bench.common import TracedCalls
    traced = accel.observe_calls(TracedCalls())
    before = len(calls)
    tiny.fit({"x": x, "mask": mask}, np.zeros((4, 16), "float32"), batch_size=4, epochs=1, verbose=0)
    out["step_calls"] = np.array(json.dumps(calls[before:]))
    out["step_traced_cudnn"] = np.array(traced.counts.get("train:cudnn+dropout", 0))
    out["step_route"] = np.array(json.dumps(accel.route_taken()))
    import glob
    dumped = glob.glob(os.path.join(os.environ["KBERT_TEST_DUMP"], "*jit_train_step.debug_options"))
    out["step_debug_options"] = np.array(open(dumped[-1]).read() if dumped else "")
    compat.CUDNN_DROPOUT_WITH_PADDING_RUNS = {}
    accel._route.clear()
    out["cudnn_seeds"] = np.array([c_auto.kernel_seed, c_auto2.kernel_seed])
    out["kernel_auto_f32"] = np.array(accel.choose_kernel("auto", training=False, dropout_rate=0.1,
                                                          dtype="float32", head_size=16))
    def refuse(*args, **kwargs):
        raise NotImplementedError("stand-in: unsupported pattern")
    accel._cudnn_function = lambda: (refuse, None)
    out["refused_auto"] = f32(c_auto(x, mask))
    out["said_gpu"] = np.array(json.dumps(accel.decisions()))
    # Dropout bits from XLA's RngBitGenerator instead of threefry (kbert's dropout layers only).
    keras.mixed_precision.set_global_policy("float32")
    for impl in ("rbg", "unsafe_rbg"):
        accel.set_dropout_prng(impl)
        out[f"probe_prng_{impl}"] = np.array(dropout_probe("plain"))
    # Every generator and width through kbert's Dropout layer: two layers (seeds), one of them
    # called twice (steps), on 1M ones at rate 0.1; statistics only come back.
    from kbert.layers.dropout import Dropout
    ones = np.ones((64, 128, 128), "float32")
    agree = lambda a, b: float(np.mean((a == 0) == (b == 0)))
    stats = {}
    for impl in accel.DROPOUT_PRNGS:
        for bits in accel.DROPOUT_BITS:
            accel.set_dropout_prng(impl, bits)
            first, second = Dropout(0.1, seed=1), Dropout(0.1, seed=2)
            a1, a2, b1 = (numpy(layer(ones, training=True)) for layer in (first, first, second))
            stats[f"{impl}/{bits}"] = dict(
                kbert=accel.kbert_draws_dropout(), applied=accel.dropout_rate_applied(0.1),
                dropped=float(np.mean(a1 == 0)), mean=float(a1.mean()), layers=agree(a1, b1), steps=agree(a1, a2),
                along_last=agree(a1[..., :-1], a1[..., 1:]), along_rows=agree(a1[:, :-1], a1[:, 1:]),
                along_batch=agree(a1[:-1], a1[1:]))
    out["dropout_bits"] = np.array(json.dumps(stats))
    # Rematerialized blocks: the same gradients as without (the same dropout masks recomputed).
    import jax.numpy as jnp
    from kbert.layers.transformer import TransformerBlock
    accel.set_dropout_prng("threefry", 16)  # kbert's own masks on both paths
    block = TransformerBlock(32, 2, 64, dropout=0.2, attention_dropout=0.2, attention_impl="plain")
    block.build((None, None, 32))
    xb, mb = rng.normal(size=(2, 8, 32)).astype("float32"), mask[:2, :8]
    tv = [v.value for v in block.trainable_variables]
    ntv = [v.value for v in block.non_trainable_variables]
    def block_grads(policy, training=True):
        accel.set_remat(policy)
        def loss(tv, x):
            y, _ = block.stateless_call(tv, ntv, x, mb, training=training)
            return jnp.sum(y * y)
        flat = jax.jit(jax.grad(loss, argnums=(0, 1)))(tv, xb)
        return np.concatenate([np.ravel(np.asarray(g)) for g in jax.tree_util.tree_leaves(flat)])
    remat = {policy: block_grads(policy) for policy in accel.REMAT_POLICIES}
    out["remat_grads"] = np.stack([remat[p] for p in accel.REMAT_POLICIES])
    out["remat_grads_inference"] = block_grads("none", training=False)
    accel.set_remat()
    accel.set_dropout_prng()
    np.savez(out_file, **out)
    assert "tensorflow" not in sys.modules, "the accelerator path imported TensorFlow"
""")


@pytest.fixture(scope="module")
def jax_run(tmp_path_factory):
    require("jax")
    folder = tmp_path_factory.mktemp("accel")
    out = folder / "out.npz"
    # The compiled training steps' options and HLO, as XLA dumps them (for the step's XLA setting).
    dump = folder / "dump"
    env = dict(os.environ, KERAS_BACKEND="jax", JAX_PLATFORMS="cpu", KBERT_TEST_DUMP=str(dump),
               XLA_FLAGS=f"--xla_dump_to={dump} --xla_dump_hlo_module_re=.*train_step.*",
               PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", CHILD, str(out)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(np.load(out))


def _max_diff(a, b):
    return float(np.max(np.abs(a.astype("float64") - b.astype("float64"))))


def _rel(a, b):
    return float(np.linalg.norm(a.astype("float64") - b) / np.linalg.norm(b.astype("float64")))


@pytest.mark.slow
def test_fused_attention_matches_plain_in_float32_with_padding(jax_run):
    # Under JAX on a CPU "fused" is the sequence-lengths form through XLA.
    assert str(jax_run["kernel_infer_fused"]) == "xla"
    for name in ("att", "att_pos", "att_nomask", "att_jit", "att_jit_pos", "att_left"):
        assert _max_diff(jax_run[f"{name}_fused"], jax_run[f"{name}_plain"]) <= 1e-5, name
    assert _max_diff(jax_run["enc_f32_fused"], jax_run["enc_f32_plain"]) <= 1e-5


def test_a_mask_that_is_not_right_padded_is_said_once(jax_run):
    said = json.loads(str(jax_run["said"]))
    assert "not right-padded" in said["not-right-padded"]


def test_fused_attention_in_bf16_is_within_bf16_rounding_of_float32(jax_run):
    reference = jax_run["enc_f32_plain"]
    assert str(jax_run["enc_bf16_fused_dtype"]) == "bfloat16"
    plain, fused = _rel(jax_run["enc_bf16_plain"], reference), _rel(jax_run["enc_bf16_fused"], reference)
    # bf16 keeps 8 significant bits (relative rounding 2^-9 = 2e-3 per value); two blocks of
    # matmuls land between 1e-3 and 1e-2 of the float32 result; fused no worse than plain.
    assert plain < 2e-2 and fused < 2e-2, (plain, fused)
    assert _rel(jax_run["enc_bf16_fused"], jax_run["enc_bf16_plain"]) < 2e-2


def test_training_keeps_the_attention_dropout_on_every_path(jax_run):
    # Hidden dropout 0, attention dropout 0.5: training differs from inference whatever was asked for.
    for impl in ("plain", "fused"):
        assert _max_diff(jax_run[f"train_{impl}"], jax_run[f"infer_{impl}"]) > 1e-2, impl
    assert _max_diff(jax_run["infer_fused"], jax_run["infer_plain"]) <= 1e-5


def _check_probe(probe, rate=0.25):
    dropped, mean, padded = probe
    # 64 x 16 x 12 = 12,288 kept-or-dropped probabilities: the dropped fraction's standard error
    # is 0.004 and the mean's (keep / (1 - rate), variance rate / (1 - rate)) 0.005.
    assert abs(dropped - rate) < 0.02, probe
    assert abs(mean - 1.0) < 0.03, probe
    assert padded == 0.0, probe


@pytest.mark.parametrize("impl", ["plain", "fused", "auto"])
def test_attention_dropout_drops_the_configured_fraction_and_keeps_the_expectation_jax(jax_run, impl):
    _check_probe(jax_run[f"probe_{impl}"])


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_dropout_with_rbg_bits_drops_the_configured_fraction_and_keeps_the_expectation(jax_run, impl):
    _check_probe(jax_run[f"probe_prng_{impl}"])


@pytest.mark.parametrize("impl", ["plain", "fused", "auto"])
def test_attention_dropout_drops_the_configured_fraction_and_keeps_the_expectation_here(impl):
    from fixtures.attention_probe import dropout_probe

    keras.utils.set_random_seed(3)
    _check_probe(dropout_probe(impl))


def test_cudnn_path_gets_lengths_and_the_attention_dropout(jax_run):
    calls = json.loads(str(jax_run["cudnn_calls"]))
    # Inference with padding (rate 0, the lengths), then one unpadded training call of each of two
    # layers (the config's 0.1, no lengths: cuDNN's kernel without a mask).
    assert [c["dropout_rate"] for c in calls] == [0.0, 0.1, 0.1]
    assert calls[0]["q_seqlen"] == [16, 16, 16, 16] and calls[0]["kv_seqlen"] == [16, 9, 3, 12]
    assert [(c["q_seqlen"], c["kv_seqlen"]) for c in calls[1:]] == [(None, None)] * 2
    for c in calls:
        assert c["shape"] == [4, 16, 4, 16]
    # Each layer its own constant seed, so that layers do not share dropout masks.
    assert calls[1]["seed"] != calls[2]["seed"]
    assert sorted(jax_run["cudnn_seeds"].tolist()) == sorted([calls[1]["seed"], calls[2]["seed"]])
    assert c["dtype"] == "bfloat16"
    assert _rel(jax_run["cudnn_auto"], jax_run["cudnn_plain"]) < 2e-2  # both bf16: bf16 rounding apart
    # float32 activations: "auto" says why it does not take cuDNN and runs the plain path.
    assert str(jax_run["kernel_auto_f32"]) == "plain"
    said = json.loads(str(jax_run["said_gpu"]))
    assert any("bf16 or fp16" in m for m in said.values()), said
    # A refusal by the kernel (at trace time) falls back to the plain path, said once.
    assert _max_diff(jax_run["refused_auto"], jax_run["cudnn_plain"]) == 0.0
    assert any(k.startswith("cudnn-refused:NotImplementedError") for k in said), said


def test_training_with_dropout_and_padding_keeps_off_the_cudnn_gradient_that_aborts(jax_run):
    # JAX's cuDNN kernel aborts the process in the gradient of dropout with a padding mask
    # (kbert.compat): that call runs the plain path, and says why; without dropout cuDNN stays.
    assert int(jax_run["padded_training_calls"]) == 0
    assert str(jax_run["kernel_padded_dropout"]) == "plain"
    assert str(jax_run["kernel_padded_no_dropout"]) == "cudnn"
    assert str(jax_run["kernel_padded_dropout_fixed"]) == "cudnn"  # once a JAX version is known to run it
    # Known to run under an XLA setting of the step: not in a call traced outside such a step ...
    assert str(jax_run["kernel_padded_dropout_outside_step"]) == "plain"
    said = json.loads(str(jax_run["said_gpu"]))
    assert any("aborts the process in the gradient of attention dropout with a padding mask" in m
               for m in said.values()), said


def test_mixed_bfloat16_keeps_float32_where_it_matters(jax_run):
    assert list(jax_run["variable_dtypes"]) == ["float32"]
    assert str(jax_run["probs_dtype"]) == "float32"
    np.testing.assert_allclose(jax_run["probs"].sum(-1), 1.0, atol=1e-6)
    assert str(jax_run["ln_dtype"]) == "bfloat16"
    # LayerNorm in float64; bf16 statistics of rows near 1000 (bf16 spacing 4 there) would miss
    # the spread of the rows (std 4) by far more than the 2^-9 rounding of the bf16 output.
    x = jax_run["ln_in"].astype("float64")
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
    assert _rel(jax_run["ln_out"], ref) < 1e-2


def test_fused_attention_matches_plain_on_this_backend():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 10, 32)).astype("float32")
    mask = (np.arange(10)[None, :] < np.array([10, 4, 7])[:, None]).astype("int32")
    plain = MultiHeadSelfAttention(32, 4, attention_impl="plain")
    fused = MultiHeadSelfAttention(32, 4, attention_impl="fused")
    plain.build((None, None, 32))
    fused.build((None, None, 32))
    fused.set_weights(plain.get_weights())
    np.testing.assert_allclose(keras.ops.convert_to_numpy(fused(x, mask)),
                               keras.ops.convert_to_numpy(plain(x, mask)), atol=1e-5)


def test_attention_impl_choice():
    with pytest.raises(OptionsError, match="attention is 'flash'"):
        MultiHeadSelfAttention(32, 4, attention_impl="flash")
    # The probabilities need the plain path, whatever was asked for.
    kwargs = dict(dtype="float32", head_size=16)
    assert accel.choose_kernel("fused", training=False, dropout_rate=0.0, return_attention=True, **kwargs) == "plain"
    assert accel.choose_kernel("plain", training=False, dropout_rate=0.0, **kwargs) == "plain"
    # TensorFlow: the boolean-mask kernel for "fused" where no dropout is lost, the plain path
    # (with TensorFlow's own fast paths) for "auto" and for training with attention dropout.
    assert accel.choose_kernel("fused", training=False, dropout_rate=0.1, **kwargs) == "keras"
    assert accel.choose_kernel("fused", training=True, dropout_rate=0.0, **kwargs) == "keras"
    assert accel.choose_kernel("fused", training=True, dropout_rate=0.1, **kwargs) == "plain"
    assert accel.choose_kernel("auto", training=False, dropout_rate=0.0, **kwargs) == "plain"
    assert "kernel has no dropout" in " ".join(accel.decisions().values())
    config = BertConfig.preset("tiny", vocab_size=50, max_position_embeddings=16)
    encoder = BertEncoder(config, attention_impl="fused")
    clone = BertEncoder.from_config(json.loads(json.dumps(encoder.get_config())))
    assert clone.attention_impl == "fused"
    assert clone.blocks[0].attention.attention_impl == "fused"
    assert BertEncoder.from_config({"config": config.to_dict()}).attention_impl == "auto"


def test_a_model_compiles_its_training_step_with_the_xla_setting_cudnn_needs(jax_run):
    # ... but in the training step of a model with CompiledStepSettings (kbert's pretrainer and task
    # models): the padded training call reached cuDNN with the config's rate and the lengths, and the
    # compiled step's options keep cuDNN out of XLA's command buffers.
    calls = json.loads(str(jax_run["step_calls"]))  # the symbolic build's inference call, then the step's
    assert [(c["dropout_rate"], c["kv_seqlen"]) for c in calls if c["dropout_rate"]] == [(0.1, "traced")]
    assert int(jax_run["step_traced_cudnn"]) == 1
    route = json.loads(str(jax_run["step_route"]))
    assert route["kernel"] == "cudnn" and route["setting"] == "no-cudnn-command-buffer" and route["runs"]
    buffers = re.findall(r"^xla_gpu_enable_command_buffer: (\w+)", str(jax_run["step_debug_options"]), re.M)
    assert buffers and "CUDNN" not in buffers and "FUSION" in buffers, str(jax_run["step_debug_options"])


def _dropout_stats():
    from kbert.layers import accel

    return accel.DROPOUT_PRNGS, accel.DROPOUT_BITS


@pytest.mark.parametrize("bits", [32, 16, 8])
@pytest.mark.parametrize("impl", ["threefry", "threefry-flat", "rbg", "unsafe_rbg"])
def test_dropout_bits_drop_the_configured_fraction_independently(jax_run, impl, bits):
    assert (impl in _dropout_stats()[0]) and (bits in _dropout_stats()[1])
    stats = json.loads(str(jax_run["dropout_bits"]))[f"{impl}/{bits}"]
    n, rate = 64 * 128 * 128, 0.1
    assert stats["kbert"] == ((impl, bits) != ("threefry", 32))  # (threefry, 32): Keras' own dropout
    # The rate applied is the configured one within half a step of the integer threshold
    # (0.1 -> 26/256 at 8 bits), and the layer drops that fraction (standard error 0.0003).
    assert abs(stats["applied"] - rate) <= 2.0 ** -(bits + 1)
    applied = stats["applied"]
    assert abs(stats["dropped"] - applied) < 4 * (applied * (1 - applied) / n) ** 0.5, stats
    # Kept values scaled by 1 / (1 - applied): the mean stays 1 (standard error 0.0003).
    assert abs(stats["mean"] - 1.0) < 4 * (applied / (1 - applied) / n) ** 0.5, stats
    # Independent masks: two layers, two calls of one layer, and neighbours along each axis agree
    # as independent draws would (1 - 2·r·(1 - r)); a repeated seed or a repeated field agrees more.
    expected = 1 - 2 * applied * (1 - applied)
    for key in ("layers", "steps", "along_last", "along_rows", "along_batch"):
        assert abs(stats[key] - expected) < 4 * (expected * (1 - expected) / (n * 0.98)) ** 0.5, (key, stats)


def test_rematerialized_blocks_give_the_same_gradients_with_dropout(jax_run):
    none, full, dots = jax_run["remat_grads"]
    np.testing.assert_allclose(full, none, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dots, none, rtol=1e-4, atol=1e-5)
    assert _max_diff(none, jax_run["remat_grads_inference"]) > 1e-2  # the masks are in the gradients
