"""kbert.compat: each private Keras / TensorFlow API kbert uses still behaves as kbert expects.

A failure here after a Keras or TensorFlow upgrade names the entry of kbert/compat.py to rework.
"""

import inspect
import pathlib
import re

import keras
import numpy as np
import pytest

from conftest import require
import tensorflow as tf

from kbert import compat

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_no_private_api_outside_compat():
    pattern = re.compile(r"keras(_hub)?\.src\b|tensorflow\.python\b|tf\.__internal__|\._in_multi_worker_mode\b|"
                         r"\._loss_tracker\b|\._get_variable_index\b|\._momentums\b|\._velocities\b|"
                         r"\._(maybe_)?symbolic_build\b|\._distribute_strategy\b|\._clip_gradients\b|"
                         r"\._convert_input_args\b|\._allow_non_tensor_positional_args\b|jax\._src\b|"
                         r"\._flat_(weighted_)?metrics\b")
    hits = [f"{path.relative_to(REPO)}:{n}: {line.strip()}"
            for folder in ("kbert", "pipelines") for path in sorted((REPO / folder).rglob("*.py"))
            if path.name != "compat.py"
            for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, "private APIs outside kbert/compat.py:\n" + "\n".join(hits)


def test_keras_backend_while_importing():
    assert compat.keras_backend_while_importing() == keras.backend.backend()


def test_graph_in_xla_context():
    seen = {}

    def probe(x, key):
        seen[key] = compat.graph_in_xla_context(tf.compat.v1.get_default_graph())
        return x + 1

    tf.function(lambda x: probe(x, "plain"))(tf.ones([2]))
    tf.function(lambda x: probe(x, "xla"), jit_compile=True)(tf.ones([2]))
    outer = tf.function(lambda x: tf.function(lambda y: probe(y, "nested"))(x), jit_compile=True)
    outer(tf.ones([2]))
    assert seen == {"plain": False, "xla": True, "nested": True}


def test_in_multi_worker_mode():
    # True for several workers is covered by models/test_pretrainer's two-worker run.
    assert compat.in_multi_worker_mode(tf.distribute.MirroredStrategy(["/cpu:0"])) is False


def test_auto_trackable_saves_and_restores_a_function(tmp_path):
    assert issubclass(compat.AutoTrackable, tf.__internal__.tracking.Trackable)
    assert not issubclass(compat.AutoTrackable, tf.Module)
    obj = compat.AutoTrackable()
    obj.scale = tf.Variable(3.0)
    obj.f = tf.function(lambda x: x * obj.scale, input_signature=[tf.TensorSpec([None], tf.float32)])
    tf.saved_model.save(obj, str(tmp_path / "m"))
    restored = tf.saved_model.load(str(tmp_path / "m"))
    np.testing.assert_array_equal(restored.f(tf.constant([1.0, 2.0])), [3.0, 6.0])
    with pytest.raises(AttributeError, match="NoSuchThing"):
        compat.NoSuchThing  # noqa: B018


def _traced_module():
    """A module whose function counts its traces (a Python side effect runs only while tracing)."""
    traces = []
    module = tf.Module()
    module.scale = tf.Variable(3.0)

    def f(x):
        traces.append(1)
        return x * module.scale

    module.f = tf.function(f, input_signature=[tf.TensorSpec([None], tf.float32)])
    return module, traces


def test_tracing_for_save_makes_the_save_reuse_the_trace(tmp_path):
    # Without it, tf.saved_model.save traces a function traced beforehand again (what the helper is for).
    module, traces = _traced_module()
    signatures = {"serving_default": module.f.get_concrete_function()}
    tf.saved_model.save(module, str(tmp_path / "plain"), signatures=signatures)
    assert len(traces) == 2
    module, traces = _traced_module()
    with compat.tracing_for_save():
        signatures = {"serving_default": module.f.get_concrete_function()}
    tf.saved_model.save(module, str(tmp_path / "once"), signatures=signatures)
    assert len(traces) == 1
    restored = tf.saved_model.load(str(tmp_path / "once"))
    np.testing.assert_array_equal(restored.f(tf.constant([1.0, 2.0])), [3.0, 6.0])
    np.testing.assert_array_equal(restored.signatures["serving_default"](x=tf.constant([2.0]))["output_0"], [6.0])


def test_layer_weights_round_trip(tmp_path):
    keras.utils.set_random_seed(0)
    a, b = keras.layers.Dense(3), keras.layers.Dense(3)
    a.build((None, 4))
    b.build((None, 4))
    compat.save_weights_only(a, tmp_path / "a.weights.h5")
    compat.load_weights_only(b, tmp_path / "a.weights.h5")
    for wa, wb in zip(a.weights, b.weights):
        np.testing.assert_array_equal(wa.numpy(), wb.numpy())


def test_loss_tracker_is_the_reported_loss():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    assert compat.loss_tracker(model) is None or isinstance(compat.loss_tracker(model), keras.metrics.Mean)
    model.compile(optimizer="sgd", loss="mse")
    logs = model.fit(np.ones((4, 2)), np.zeros((4, 1)), batch_size=4, verbose=0).history
    tracker = compat.loss_tracker(model)
    assert isinstance(tracker, keras.metrics.Mean) and tracker.name == "loss"
    assert float(tracker.result()) == pytest.approx(logs["loss"][-1])


def test_metric_leaves_name_what_fit_logs():
    # Two outputs, a metric each and a weighted one: every logged metric is a leaf, named as logged.
    inputs = keras.Input((3,))
    model = keras.Model(inputs, {"a": keras.layers.Dense(2, name="a")(inputs), "b": keras.layers.Dense(1, name="b")(inputs)})
    model.compile(optimizer="sgd", loss={"a": "sparse_categorical_crossentropy", "b": "mse"},
                  metrics={"a": ["accuracy"], "b": ["mae"]}, weighted_metrics={"b": ["mse"]})
    logs = model.fit(np.ones((4, 3)), {"a": np.zeros((4,)), "b": np.zeros((4, 1))}, batch_size=4, verbose=0).history
    leaves = dict(pair for metric in model.metrics for pair in compat.metric_leaves(metric))
    assert set(leaves) == set(logs), (set(leaves), set(logs))  # the per-output losses are Mean metrics too
    for name, leaf in leaves.items():
        assert float(leaf.result()) == pytest.approx(logs[name][-1]), name
    plain = keras.metrics.Mean(name="m")
    assert compat.metric_leaves(plain) == [("m", plain)]


def test_local_replica_build_overrides_the_hook_keras_calls():
    hook = inspect.signature(keras.Model._maybe_symbolic_build)
    assert list(hook.parameters) == ["self", "iterator", "data_batch"]
    assert "data_batch" in inspect.signature(keras.Model._symbolic_build).parameters

    class Recording(compat.LocalReplicaBuild, keras.Model):
        calls = []

        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)

        def call(self, x):
            return self.dense(x)

        def _maybe_symbolic_build(self, iterator=None, data_batch=None):
            Recording.calls.append((iterator is not None, data_batch is not None))
            return super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        model = Recording()
        model.compile(optimizer="sgd", loss="mse")
    assert getattr(model, "_distribute_strategy", None) is strategy
    model.fit(np.ones((4, 2)), np.zeros((4, 1)), batch_size=2, verbose=0)
    assert Recording.calls and model.built


def test_clip_gradients_hook_is_what_apply_calls():
    calls = []

    class Hooked(compat.ClipGradientsHook, keras.optimizers.SGD):
        def clip_gradients(self, grads):
            calls.append(len(grads))
            return self.keras_clip_gradients(grads)

    var = keras.Variable([3.0, 4.0])
    opt = Hooked(learning_rate=1.0, global_clipnorm=1.0)
    opt.apply([tf.constant([3.0, 4.0])], [var])
    assert calls == [1]
    np.testing.assert_allclose(var.numpy(), [3.0 - 0.6, 4.0 - 0.8], rtol=1e-6)  # Keras' clipping ran


def test_adam_slots_are_the_moments():
    var = keras.Variable([1.0, -2.0])
    opt = keras.optimizers.AdamW(learning_rate=0.1, beta_1=0.9, beta_2=0.99)
    g = np.array([0.5, -1.5], "float32")
    opt.apply([tf.constant(g)], [var])
    m, v = compat.adam_slots(opt, var)
    np.testing.assert_allclose(m.numpy(), 0.1 * g, rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), 0.01 * g * g, rtol=1e-5)


def test_accept_raw_call_inputs_hands_strings_to_call_as_they_are():
    class Echo(keras.layers.Layer):
        def call(self, inputs):
            return inputs

    texts = ["a text", "another"]
    with pytest.raises(ValueError, match="Only input tensors may be passed as positional arguments"):
        Echo()(texts)  # Keras' default: what the switches turn off
    layer = Echo()
    compat.accept_raw_call_inputs(layer)
    assert layer(texts) is texts
    strings = np.array([b"x", b"y"], dtype=object)
    assert layer(strings) is strings


def test_cudnn_attention_is_the_private_jax_function_kbert_was_written_for():
    jax = require("jax")
    function, reason = compat.cudnn_attention()
    # The installed JAX (0.10 here) has it; its keyword arguments are the ones the wrapper passes.
    assert reason is None and callable(function), reason
    from jax._src.cudnn import fused_attention_stablehlo as fused

    parameters = inspect.signature(fused.dot_product_attention).parameters
    assert set(compat.CUDNN_ATTENTION_KEYWORDS) <= set(parameters)
    assert parameters["dropout_rate"].default == 0.0 and fused.MaskType.PADDING.name == "PADDING"
    assert compat._version_tuple(jax.__version__) >= compat.CUDNN_ATTENTION_MIN_JAX
    # Without a GPU the function refuses at trace time (cuDNN not found, or bf16 required), which
    # kbert.layers.accel catches to fall back; it never returns a wrong number silently.
    q = np.zeros((1, 8, 2, 8), "float32")
    lengths = np.full((1,), 8, "int32")
    with pytest.raises((RuntimeError, NotImplementedError, ValueError)):
        function(q, q, q, lengths, lengths, scale=1.0, dropout_rate=0.1, seed=1)


def test_cudnn_attention_refuses_an_old_jax(monkeypatch):
    jax = require("jax")
    monkeypatch.setattr(jax, "__version__", "0.4.20")
    function, reason = compat.cudnn_attention()
    assert function is None and "0.4.20 is older than" in reason


def test_xla_step_settings_are_compiler_options_the_installed_jaxlib_takes():
    jax = require("jax")
    import jax.numpy as jnp

    def step(x):
        return jnp.sin(x) * 2

    for name, options in compat.XLA_STEP_SETTINGS.items():
        # Accepted as per-function compiler options (a repeated enum: names comma-separated, "" none).
        jax.jit(step, compiler_options=options).lower(jnp.ones(3)).compile()
        assert "CUDNN" not in options["xla_gpu_enable_command_buffer"].split(","), name
    # What a setting that jaxlib does not know would do: refused at compile time, not ignored.
    with pytest.raises(Exception, match="not a valid enum value"):
        jax.jit(step, compiler_options={"xla_gpu_enable_command_buffer": "FUSION,NO_SUCH_TYPE"}).lower(
            jnp.ones(3)).compile()


def test_cudnn_training_route_reads_the_table_of_settings_known_to_run(monkeypatch):
    monkeypatch.setattr(compat, "CUDNN_DROPOUT_WITH_PADDING_RUNS", {})
    route = compat.cudnn_training_route("0.11.2")
    assert not route.runs and "aborts the process" in route.reason and route.setting is None
    monkeypatch.setattr(compat, "CUDNN_DROPOUT_WITH_PADDING_RUNS", {"no-cudnn-command-buffer": (0, 11, 2)})
    assert not compat.cudnn_training_route("0.11.1").runs
    route = compat.cudnn_training_route("0.11.2")
    assert route.runs and route.reason is None and route.setting == "no-cudnn-command-buffer"
    assert dict(route.compiler_options) == compat.XLA_STEP_SETTINGS["no-cudnn-command-buffer"]
    assert route.as_dict()["compiler_options"] == compat.XLA_STEP_SETTINGS["no-cudnn-command-buffer"]
    # No setting needed (a fixed JAX) goes first, whatever the table's order.
    monkeypatch.setattr(compat, "CUDNN_DROPOUT_WITH_PADDING_RUNS", {"no-command-buffer": (0, 11, 0), None: (0, 12, 0)})
    assert compat.cudnn_training_route("0.11.5").setting == "no-command-buffer"
    route = compat.cudnn_training_route("0.12.0")
    assert route.runs and route.setting is None and route.compiler_options == ()


def test_keras_jax_step_jit_replaces_the_jit_keras_trainer_compiles_its_steps_with():
    require("jax")
    from keras.src.backend.jax import trainer

    # make_train_function calls the module-level name `jit`; the context swaps it and puts it back.
    assert "jit" in trainer.JAXTrainer.make_train_function.__code__.co_names
    original = trainer.jit
    seen = []
    with compat.keras_jax_step_jit(lambda jit: lambda f, **kw: seen.append((jit, f, kw))) as keras_jit:
        assert keras_jit is original
        trainer.jit("step", donate_argnums=0)
    assert seen == [(original, "step", {"donate_argnums": 0})] and trainer.jit is original
