"""Every use of a private Keras / TensorFlow / JAX API in kbert, in one place.

Each entry below reaches into ``keras.src.*``, ``tensorflow.python.*``, ``tf.__internal__``,
``jax._src.*`` or a private member of a Keras / tf.distribute object, because no public API does the same thing (the
comment on each says what it is for). ``tests/top/test_compat.py`` checks every one against the
installed Keras and TensorFlow, so an upgrade that moves or changes one fails there, by name,
rather than somewhere deep in a training run.

Nothing here imports TensorFlow or JAX at module import: the layers import this module under every Keras
backend.
"""

from __future__ import annotations

import contextlib
import dataclasses


# -- TensorFlow ---------------------------------------------------------------------------------
def graph_in_xla_context(graph) -> bool:
    """Whether ``graph`` (or a graph it is nested in) is being compiled by XLA (``jit_compile``).

    No public TensorFlow API answers this; kbert's fast paths need it to step aside inside XLA.
    """
    from tensorflow.python.ops import control_flow_util

    return control_flow_util.GraphOrParentsInXlaContext(graph)


def in_multi_worker_mode(strategy) -> bool:
    """Whether a ``MultiWorkerMirroredStrategy`` spans several workers (not one local worker)."""
    return strategy.extended._in_multi_worker_mode()


@contextlib.contextmanager
def tracing_for_save():
    """Traces made inside are the ones ``tf.saved_model.save`` (default options) looks up.

    TensorFlow keys a tf.function's traces by the context they are made in, and inside
    ``tf.saved_model.save`` that key holds the save options' variable policy
    (``tensorflow/python/eager/polymorphic_function/function_context.py``). So every function an
    export traced beforehand (the concrete functions it passes as signatures, the two input forms
    of the Keras endpoints) was traced again by the save and the first trace thrown away: a third
    of a task export's time. Traced under the same context, the save finds them. No public API
    enters that context. Leave it before calling ``tf.saved_model.save``, which enters it itself
    and refuses to nest. Outside a distribution strategy the policy changes nothing in the graphs:
    they are the ones the save would have traced.
    """
    import tensorflow as tf
    from tensorflow.python.saved_model import save_context

    with save_context.save_context(tf.saved_model.SaveOptions()):
        yield


def __getattr__(name):
    # ``AutoTrackable``: the base of kbert's exported SavedModel objects. ``tf.Module`` is the
    # public alternative, but it adds a name scope and tracks every attribute as a sub-module,
    # which changes the exported object graph; the exports keep the class they were written for.
    if name == "AutoTrackable":
        import tensorflow as tf

        return tf.__internal__.tracking.AutoTrackable
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- Keras configuration ------------------------------------------------------------------------
def keras_backend_while_importing() -> str | None:
    """The backend Keras' configuration has read (KERAS_BACKEND, ~/.keras/keras.json), from the
    module that holds it, or None before Keras has read it. Readable while Keras itself is still
    being imported (kbert.cli_startup asks then), when ``keras.backend.backend()`` is not there yet."""
    import sys

    config = sys.modules.get("keras.src.backend.config")
    return None if config is None else config.backend()


# -- Keras saving -------------------------------------------------------------------------------
def save_weights_only(layer, path) -> None:
    """``.weights.h5`` of a ``keras.Layer`` (Layers, unlike Models, have no public ``save_weights``;
    this is the function ``Model.save_weights`` calls, so heads and encoder share one format)."""
    from keras.src.saving import saving_lib

    saving_lib.save_weights_only(layer, str(path))


def load_weights_only(layer, path) -> None:
    """The reverse of ``save_weights_only``."""
    from keras.src.saving import saving_lib

    saving_lib.load_weights_only(layer, str(path))


# -- Keras Model internals ----------------------------------------------------------------------
def loss_tracker(model):
    """The ``Mean`` metric Keras' trainer keeps for the total loss (reported as ``loss``), or None
    before ``compile``; a model that overrides ``metrics`` has to list it itself."""
    return getattr(model, "_loss_tracker", None)


class LocalReplicaBuild:
    """Mix-in for a ``keras.Model``: build it from the first local replica's batch under tf.distribute.

    Keras 3.15's TensorFlow trainer builds an unbuilt model from the first distributed batch by
    ``strategy.reduce("MEAN", batch)``, which MultiWorkerMirroredStrategy cannot do for a nested
    batch (ValueError converting PerReplica). This overrides the private hook
    ``Model._maybe_symbolic_build`` and uses the private ``_distribute_strategy`` and
    ``_symbolic_build`` it works with.
    """

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        strategy = getattr(self, "_distribute_strategy", None)
        if iterator is not None and strategy is not None:
            import keras
            import tensorflow as tf

            for _, _, it in iterator:
                batch = next(it)
                data_batch = keras.tree.map_structure(
                    lambda v: strategy.experimental_local_results(v)[0]
                    if isinstance(v, tf.distribute.DistributedValues) else v,
                    batch,
                )
                break
            with strategy.scope():
                self._symbolic_build(data_batch=data_batch)
            return
        return super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)


# -- Keras optimizers ---------------------------------------------------------------------------
class ClipGradientsHook:
    """Mix-in for a ``keras.optimizers.Optimizer``: a public-named hook for gradient clipping.

    Keras' ``apply`` clips through the private ``Optimizer._clip_gradients(grads)``. A subclass
    of this mix-in overrides ``clip_gradients`` instead and calls ``keras_clip_gradients`` for
    Keras' own clipping.
    """

    def _clip_gradients(self, grads):
        return self.clip_gradients(grads)

    def clip_gradients(self, grads):
        return self.keras_clip_gradients(grads)

    def keras_clip_gradients(self, grads):
        return super()._clip_gradients(grads)


class StepHooks:
    """Mix-in for a ``keras.optimizers.Optimizer`` on TensorFlow: public names around two private
    steps of Keras' ``apply``.

    * ``step_cache``: a dict that lives for one optimizer step (Keras' ``_backend_apply_gradients``:
      clipping, weight decay, the updates, the step count), None outside one; for tensors a step
      makes once and all its variables share.
    * ``decay_weights(variables)``: Keras' decoupled weight decay (``_apply_weight_decay``); a
      subclass overrides it and calls ``keras_decay_weights`` for Keras' own, or
      ``decay_each(variables, fn)`` to run ``fn(variable)`` for each decayed variable as Keras'
      TensorFlow optimizer does (each variable updated under the distribution strategy).
    """

    step_cache = None

    def _backend_apply_gradients(self, grads, trainable_variables):
        self.step_cache = {}
        try:
            return super()._backend_apply_gradients(grads, trainable_variables)
        finally:
            self.step_cache = None

    def _apply_weight_decay(self, variables):
        return self.decay_weights(variables)

    def decay_weights(self, variables):
        return self.keras_decay_weights(variables)

    def keras_decay_weights(self, variables):
        return super()._apply_weight_decay(variables)

    def decay_each(self, variables, fn):
        import keras
        import tensorflow as tf

        def distributed(distribution, variables, **kwargs):
            for variable in variables:
                if isinstance(variable, keras.Variable):
                    variable = variable.value  # the tf.Variable
                distribution.extended.update(
                    variable, lambda v: fn(v) if self._use_weight_decay(v) else None, group=False)

        tf.__internal__.distribute.interim.maybe_merge_call(distributed, self._distribution_strategy, variables)


def adam_slots(optimizer, variable):
    """``(m, v)``: the first and second moment variables of ``variable`` in a Keras Adam/AdamW
    (kept in the private lists ``_momentums`` / ``_velocities``, indexed by ``_get_variable_index``)."""
    index = optimizer._get_variable_index(variable)
    return optimizer._momentums[index], optimizer._velocities[index]


# -- Keras Layer call conventions ---------------------------------------------------------------
def accept_raw_call_inputs(layer) -> None:
    """Lets ``layer(inputs)`` hand its inputs to ``call`` as they are (Python strings and lists of them,
    numpy string arrays, dicts of those) instead of converting them to tensors of the layer's dtype and
    refusing non-tensors passed positionally: the private switches ``Layer._convert_input_args`` and
    ``Layer._allow_non_tensor_positional_args`` that Keras' own ``StringLookup`` sets. Call it after
    ``Layer.__init__``."""
    layer._convert_input_args = False
    layer._allow_non_tensor_positional_args = True


# -- JAX ------------------------------------------------------------------------------------------
# JAX's cuDNN fused attention with dropout on the attention probabilities. The public
# ``jax.nn.dot_product_attention`` reaches the same kernel but has no dropout; this private
# function takes ``dropout_rate`` (cuDNN draws the mask inside the kernel; XLA advances its Philox
# offset on every execution, so each step gets a new mask; ``seed`` is a compile-time constant).
# Known to work from this JAX version on (keyword arguments and MaskType as below):
CUDNN_ATTENTION_MIN_JAX = (0, 5, 0)
CUDNN_ATTENTION_KEYWORDS = ("q_seqlen", "kv_seqlen", "scale", "mask_type", "seed", "dropout_rate", "qkv_layout")


def _version_tuple(text: str) -> tuple:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(c for c in piece if c.isdigit()) if piece[:1].isdigit() else ""
        parts.append(int(digits) if digits else 0)
    return tuple(parts + [0] * (3 - len(parts)))


# JAX's cuDNN attention aborts the whole process (XLA: "cuda_dnn.cc: Check failed:
# local_device_ordinal.has_value()") when it runs the gradient of a call that has both a padding
# mask (lengths) and dropout: seen with jax 0.11.2 and cuDNN 9.19 on an H200, in
# ``python -m kbert.bench.cudnn_probe`` (docs/bench/accelerator/). The forward with dropout, the
# gradient without dropout, and dropout with no padding mask all ran there. An abort cannot be
# caught, so kbert makes that call only under a setting known to run it.
#
# The likely cause (XLA's source, ``CudnnGraph::PackOperands``): a cuDNN graph with dropout that
# XLA records into a CUDA graph (a "command buffer") is packed without the device ordinal its
# dropout state needs, and ``CUDNN`` is in XLA's default command-buffer set. Under command
# buffers XLA also skips zeroing the rows of the output and of dQ/dK/dV that the kernel leaves
# untouched (openxla/xla PR #46500). So the candidate settings keep cuDNN out of command buffers
# for the compiled training step, as ``jax.jit(..., compiler_options=...)`` (XLA DebugOptions
# fields; a repeated enum takes its values comma-separated, "" for none: checked against the
# installed jaxlib by tests/top/test_compat.py):
XLA_STEP_SETTINGS = {
    # XLA's default command-buffer set (jaxlib 0.10-0.11) less CUDNN
    "no-cudnn-command-buffer": {
        "xla_gpu_enable_command_buffer": "FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CONDITIONAL,DYNAMIC_SLICE_FUSION"},
    "no-command-buffer": {"xla_gpu_enable_command_buffer": ""},
}
# Where the gradient of cuDNN attention with dropout and a padding mask is known to run: a setting
# of XLA_STEP_SETTINGS (or None: the step as XLA compiles it by default) -> the first JAX version
# whose probe (``python -m kbert.bench.cudnn_probe``: every "drop" form and "drop-checks" ok under
# ``jit:SETTING``) ran it. Nothing has run yet: empty, so training with attention dropout and
# padding runs the plain attention. The probe prints the line to put here, e.g.
# ``CUDNN_DROPOUT_WITH_PADDING_RUNS = {"no-cudnn-command-buffer": (0, 11, 2)}``.
CUDNN_DROPOUT_WITH_PADDING_RUNS: dict = {}


@dataclasses.dataclass(frozen=True)
class CudnnTrainingRoute:
    """Whether training may run JAX's cuDNN attention with dropout and a padding mask here, and how.

    ``runs``: it may. ``setting``: the name of the XLA setting (``XLA_STEP_SETTINGS``) the compiled
    training step needs, None for none; ``compiler_options``: that setting's ``jax.jit`` compiler
    options, as sorted (name, value) pairs. ``reason``: why not, where it may not.
    """

    runs: bool
    jax_version: str
    setting: str | None = None
    compiler_options: tuple = ()
    reason: str | None = None

    def as_dict(self) -> dict:
        return {"runs": self.runs, "jax": self.jax_version, "setting": self.setting,
                "compiler_options": dict(self.compiler_options), "reason": self.reason}


def cudnn_training_route(jax_version: str | None = None) -> CudnnTrainingRoute:
    """The route for the installed JAX (or ``jax_version``) from ``CUDNN_DROPOUT_WITH_PADDING_RUNS``:
    no setting first where that runs, else the first listed setting known to run from this version."""
    if jax_version is None:
        import jax

        jax_version = jax.__version__
    version = _version_tuple(jax_version)
    known = sorted(CUDNN_DROPOUT_WITH_PADDING_RUNS.items(), key=lambda item: item[0] is not None)
    for setting, since in known:
        if since is not None and version >= tuple(since):
            options = tuple(sorted(XLA_STEP_SETTINGS[setting].items())) if setting is not None else ()
            return CudnnTrainingRoute(True, jax_version, setting, options)
    return CudnnTrainingRoute(False, jax_version, reason=(
        f"jax {jax_version}'s cuDNN attention aborts the process in the gradient of attention dropout "
        "with a padding mask (seen with jax 0.11.2, cuDNN 9.19), and no XLA setting is known to run it"))


@contextlib.contextmanager
def keras_jax_step_jit(wrap):
    """Inside, Keras' JAX trainer compiles the steps it makes (``make_train_function`` and the
    others) with ``wrap(jit)`` instead of its ``jit`` (``jax.jit``, or flax's ``nnx.jit``): the
    module-level name ``keras.src.backend.jax.trainer.jit`` those methods call. No public Keras API
    passes compiler options to a compiled step; kbert's models use this for their training step."""
    from keras.src.backend.jax import trainer

    original = trainer.jit
    trainer.jit = wrap(original)
    try:
        yield original
    finally:
        trainer.jit = original


def cudnn_attention():
    """``(function, None)``: JAX's cuDNN fused attention with padding lengths and dropout,
    ``function(query, key, value, q_seqlen, kv_seqlen, *, scale, dropout_rate, seed)`` on
    [batch, T, heads, size] inputs (BTNH; both lengths None: no padding mask); or
    ``(None, reason)`` when the installed JAX does not have it in the form kbert was written for
    (the reason names the version or the missing part)."""
    import inspect

    import jax

    version = _version_tuple(jax.__version__)
    if version < CUDNN_ATTENTION_MIN_JAX:
        return None, (f"jax {jax.__version__} is older than "
                      f"{'.'.join(map(str, CUDNN_ATTENTION_MIN_JAX))}, the first kbert's cuDNN attention supports")
    try:
        from jax._src.cudnn import fused_attention_stablehlo as fused
    except ImportError as e:
        return None, f"jax {jax.__version__} has no jax._src.cudnn.fused_attention_stablehlo ({e})"
    target = getattr(fused, "dot_product_attention", None)
    mask_type = getattr(getattr(fused, "MaskType", None), "PADDING", None)
    try:
        parameters = inspect.signature(target).parameters if target is not None else {}
    except (TypeError, ValueError):
        parameters = {}
    missing = [name for name in CUDNN_ATTENTION_KEYWORDS if name not in parameters]
    if target is None or mask_type is None or missing:
        what = ", ".join(missing) or ("MaskType.PADDING" if mask_type is None else "dot_product_attention")
        return None, f"jax {jax.__version__}'s private cuDNN attention lacks {what}"

    no_mask = getattr(fused.MaskType, "NO_MASK", None)

    def attention(query, key, value, q_seqlen, kv_seqlen, *, scale, dropout_rate, seed, bias=None):
        # No lengths (both None): every key is attended to, the kernel without a padding mask.
        # ``bias``: an additive [batch, heads or 1, T, S] bias (the padding as -inf-like values).
        padded = q_seqlen is not None or kv_seqlen is not None
        return target(query, key, value, bias, None, q_seqlen=q_seqlen, kv_seqlen=kv_seqlen, scale=scale,
                      mask_type=mask_type if padded else no_mask, seed=int(seed), dropout_rate=float(dropout_rate),
                      qkv_layout="BTNH")

    return attention, None


def metric_leaves(metric) -> list:
    """[(logged name, metric)] of what Keras' ``fit`` logs for one of ``model.metrics``: the metric
    itself, or for the ``CompileMetrics`` that ``compile(metrics=...)`` makes, the metrics it holds
    (its private ``_flat_metrics`` and ``_flat_weighted_metrics``: a list per output, None where an
    output has none), named as its ``result()`` names them (``OUTPUT_NAME`` where an output has one)."""
    if not hasattr(metric, "_flat_metrics"):
        return [(metric.name, metric)]
    leaves = []
    for group in list(metric._flat_metrics or []) + list(getattr(metric, "_flat_weighted_metrics", None) or []):
        for leaf in (group.metrics if group is not None else []):
            leaves.append((f"{group.output_name}_{leaf.name}" if group.output_name else leaf.name, leaf))
    return leaves
