"""kbert's AdamW (fused update on TensorFlow) against Keras' AdamW, step by step."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.training.optimization import AdamW, NO_DECAY, WarmupLinearDecay


def _run(optimizer_class, steps=6, sparse=False, eager=False, **kwargs):
    rng = np.random.default_rng(0)
    variables = [keras.Variable(rng.normal(size=(7, 5)).astype("float32"), name="dense_kernel"),
                 keras.Variable(rng.normal(size=(5,)).astype("float32"), name="dense_bias")]
    optimizer = optimizer_class(learning_rate=WarmupLinearDecay(1e-2, 10, 2), weight_decay=0.1, beta_1=0.9,
                                beta_2=0.999, epsilon=1e-6, global_clipnorm=1.0, **kwargs)
    optimizer.exclude_from_weight_decay(var_names=NO_DECAY)
    optimizer.build(variables)

    def step(grads):
        if sparse:  # an embedding-style gradient for the kernel
            grads = [tf.IndexedSlices(tf.gather(grads[0], [1, 4]), tf.constant([1, 4]), tf.constant([7, 5])), grads[1]]
        optimizer.apply_gradients(zip(grads, variables))

    step = step if eager else tf.function(step)

    for _ in range(steps):
        step([tf.constant(rng.normal(size=v.shape).astype("float32") * 3.0) for v in variables])
    return [v.numpy() for v in variables] + [v.numpy() for v in optimizer.variables if v.shape != ()]


@pytest.mark.parametrize("sparse, eager", [(False, False), (True, False), (False, True)])
def test_fused_update_matches_keras_adamw(sparse, eager):
    """Step by step in a traced step and eagerly (where a step's scalars kept for the next one
    would show: the step count and the schedule move every step)."""
    ours, keras_own = _run(AdamW, sparse=sparse, eager=eager), _run(keras.optimizers.AdamW, sparse=sparse, eager=eager)
    assert len(ours) == len(keras_own) == 2 + 4
    for a, b in zip(ours, keras_own):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7)
    assert not np.allclose(ours[0], _run(AdamW, steps=0)[0])  # the weights moved


def test_a_traced_step_evaluates_the_schedule_once_for_all_variables():
    """Keras evaluates the learning-rate schedule again in every variable's weight decay; kbert's
    AdamW makes a step's scalars once (kbert.training.optimization), whatever the variable count."""
    calls = []

    class Counted(WarmupLinearDecay):
        def __call__(self, step):
            calls.append(step)
            return super().__call__(step)

    variables = [keras.Variable(np.ones((3, 2), "float32"), name=f"kernel_{i}") for i in range(5)]
    optimizer = AdamW(learning_rate=Counted(1e-2, 10, 2), weight_decay=0.1)
    optimizer.build(variables)
    tf.function(lambda: optimizer.apply_gradients([(tf.ones((3, 2)), v) for v in variables])).get_concrete_function()
    assert len(calls) == 2, len(calls)  # one for the updates, one for the decay


def test_fused_path_is_taken_and_amsgrad_falls_back():
    """The update runs as ResourceApplyAdam (not Keras' element-wise ops); AMSGrad, which the
    fused kernel lacks, still matches Keras."""
    variable = keras.Variable(np.ones((3, 2), "float32"))
    optimizer = AdamW(learning_rate=1e-3)
    optimizer.build([variable])
    graph = tf.function(lambda g: optimizer.apply_gradients([(g, variable)])).get_concrete_function(
        tf.TensorSpec((3, 2), tf.float32)).graph
    assert "ResourceApplyAdam" in {op.type for op in graph.get_operations()}
    for a, b in zip(_run(AdamW, amsgrad=True), _run(keras.optimizers.AdamW, amsgrad=True)):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("factor", [0.01, 1.0, 30.0, np.inf, np.nan])
def test_global_norm_clipping_matches_keras(factor):
    """kbert's clip_by_global_norm = Keras' for norms under and over the clip, non-finite norms,
    None entries and an IndexedSlices gradient."""
    from keras.src.optimizers.base_optimizer import clip_by_global_norm as keras_clip

    from kbert.training.optimization import clip_by_global_norm

    rng = np.random.default_rng(1)
    dense = [rng.normal(size=(6, 4)).astype("float32"), rng.normal(size=(3,)).astype("float32")]
    dense[0][2, 1] = factor  # pushes the norm under (0.01), over (30) the clip, or to inf / NaN
    dense = [d * (0.05 if factor == 0.01 else 1.0) for d in dense]
    sparse = tf.IndexedSlices(tf.constant(rng.normal(size=(2, 4)).astype("float32")),
                              tf.constant([0, 0]), tf.constant([5, 4]))  # repeated row: sums
    grads = [tf.constant(dense[0]), None, sparse, tf.constant(dense[1])]
    ours = clip_by_global_norm(grads, 1.0)
    theirs = keras_clip([None if g is None else tf.convert_to_tensor(g) for g in grads], 1.0)
    assert ours[1] is None
    for a, b in zip(ours, theirs):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=0)
    norm = float(tf.linalg.global_norm([tf.convert_to_tensor(g) for g in grads if g is not None]))
    if np.isfinite(norm) and norm > 1.0:
        assert float(tf.linalg.global_norm([g for g in ours if g is not None])) == pytest.approx(1.0, rel=1e-5)
