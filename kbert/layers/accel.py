"""The seam between kbert's layers and the accelerator fast paths (JAX on NVIDIA GPUs first).

``kbert.layers.tf_fast`` holds TensorFlow's CPU formulations; this module decides which attention
kernel a self-attention call runs. The plain ``keras.ops`` code of the attention layer stays the
reference: tests/layers/test_accel.py holds every path here equal to it.

``attention`` (an option of the attention layer, the block, the encoder, ``load_encoder``, the
task models and the pretrainer; ``--attention`` on the commands) is one of:

- ``"plain"``: the reference, ``softmax(q·kᵀ·scale + mask)·v`` in ``keras.ops`` with the paper's
  dropout on the attention probabilities in training;
- ``"auto"`` (the default): the fastest faithful path for the device. Under JAX on an NVIDIA GPU
  (compute capability 8.0 and up, bf16/fp16 activations, head size a multiple of 8) that is
  cuDNN's flash attention with the padding given as sequence lengths (no bias tensor, no bias
  gradient) and the config's dropout on the attention probabilities inside the kernel (JAX's
  private cuDNN API, behind ``kbert.compat.cudnn_attention``). In training with both attention
  dropout and a padding mask, JAX's cuDNN kernel aborts the process in that gradient under XLA's
  default settings: those calls take cuDNN only where ``kbert.compat.cudnn_training_route`` knows
  an XLA setting that runs it, inside a training step compiled with it (``step_jit``,
  ``CompiledStepSettings``), and otherwise run the plain path, while inference, training without
  attention dropout, and unpadded calls keep cuDNN. Anywhere else
  (CPU, TPU, an older GPU, float32, TensorFlow with its own CPU fast paths, torch) the plain path;
  the reason the fast path was not taken is logged once (logger ``kbert.attention``);
- ``"fused"``: a fused kernel wherever one exists: the cuDNN kernel as above, else under JAX
  ``jax.nn.dot_product_attention`` with the same sequence lengths (XLA's attention), else
  ``keras.ops.dot_product_attention`` with a boolean key mask. Those two have no dropout, so in
  training with attention dropout > 0 the plain path runs instead (logged once): no path here
  trains without the configured attention dropout. A model trained without it says so in its
  ``bert_config.json`` (``attention_probs_dropout_prob`` 0).

The kernel is a run-time choice like the dtype: weights, configs and model directories are the
same whatever attention wrote or reads them.

Padding as lengths: BERT's packer pads on the right, so a [batch, S] mask of 1s then 0s is its
row sums. A mask whose values are known (an eager call) and is not right-padded runs the masked
path instead (logged once). Inside a compiled step the values are not known; kbert's own
packers and host batches always pad on the right.

Mixed precision needs nothing here: under ``mixed_bfloat16`` weights stay float32 and are cast to
bf16 for the matmuls; the plain attention takes its softmax in float32 and the fused kernels
accumulate it in float32.
"""

from __future__ import annotations

import contextlib
import functools
import logging

import keras
from keras import ops

from kbert.errors import OptionsError

ATTENTION_IMPLS = ("auto", "plain", "fused")
KERNELS = ("plain", "cudnn", "xla", "keras")  # what a call ran: see choose_kernel

logger = logging.getLogger("kbert.attention")
_said: dict = {}


def check_attention_impl(value) -> str:
    """``value`` if it names an attention implementation, else an OptionsError naming it."""
    if value not in ATTENTION_IMPLS:
        raise OptionsError(f"attention is {value!r}; expected one of {', '.join(ATTENTION_IMPLS)}", option="attention",
                           value=value)
    return value


def say_once(key: str, message: str, level=logging.WARNING) -> None:
    """Logs ``message`` the first time ``key`` is seen in this process (and keeps it: ``decisions()``)."""
    if key not in _said:
        _said[key] = message
        logger.log(level, message)


def decisions() -> dict:
    """What this process logged about its attention choices, by key (for reports and the bench)."""
    return dict(_said)


# Whoever wants to know which kernel each traced attention call ran (the accelerator bench and
# the cuDNN probe count them: kbert.bench.common.TracedCalls); the layers keep no record.
_call_observers: list = []


def observe_calls(observer):
    """Calls ``observer(kernel, training, dropout_applied)`` on every attention call traced from now
    on (a compiled step is traced once, so these are layers, not steps). Returns ``observer``."""
    _call_observers.append(observer)
    return observer


def record_call(kernel: str, training, dropout_applied: bool) -> None:
    """Reports one traced attention call to the observers: in training or not, the kernel it ran,
    whether it dropped out attention probabilities."""
    for observer in tuple(_call_observers):
        observer(kernel, bool(training), bool(dropout_applied))


@functools.lru_cache(maxsize=None)
def cuda_device():
    """The first JAX device if it is an NVIDIA GPU, else None (decided once per process)."""
    if keras.backend.backend() != "jax":
        return None
    import jax

    device = jax.devices()[0]
    version = str(getattr(getattr(device, "client", None), "platform_version", "")).lower()
    nvidia = "cuda" in version or "nvidia" in str(getattr(device, "device_kind", "")).lower()
    return device if device.platform == "gpu" and nvidia else None


@functools.lru_cache(maxsize=None)
def _cudnn_function():
    from kbert import compat

    return compat.cudnn_attention()


def cudnn_refusal(dtype, head_size: int) -> str | None:
    """Why cuDNN's flash attention cannot run a call with these activations here, or None if it can."""
    backend = keras.backend.backend()
    if backend != "jax":
        return f"the Keras backend is {backend} (kbert's cuDNN attention is for JAX)"
    device = cuda_device()
    if device is None:
        import jax

        return f"JAX computes on {jax.devices()[0].platform}, not an NVIDIA GPU"
    capability = tuple(int(x) for x in str(getattr(device, "compute_capability", "0.0")).split("."))
    if capability < (8, 0):
        return f"{device.device_kind} has compute capability {'.'.join(map(str, capability))}; cuDNN's flash " \
               "attention needs 8.0 or later"
    dtype = keras.backend.standardize_dtype(dtype)
    if dtype not in ("bfloat16", "float16"):
        return f"the attention runs in {dtype}; cuDNN's flash attention takes bf16 or fp16 (mixed_bfloat16)"
    limit = 256 if capability >= (9, 0) else 128
    if head_size % 8 or head_size > limit:
        return f"head size {head_size} is not a multiple of 8 up to {limit}"
    function, reason = _cudnn_function()
    return reason if function is None else None


def choose_kernel(impl: str, *, training, dropout_rate: float, dtype, head_size: int,
                  return_attention: bool = False, padding: bool = False) -> str:
    """The kernel one attention call runs: "plain", "cudnn" (JAX, NVIDIA GPU, lengths and dropout),
    "xla" (``jax.nn.dot_product_attention`` with lengths) or "keras" (``keras.ops.dot_product_attention``
    with a mask). ``padding``: the call has a padding mask. Logs once why a faster path was not
    taken, where that is news."""
    if return_attention or impl == "plain":
        return "plain"  # only the plain path returns the probabilities
    dropping = bool(training) and dropout_rate > 0.0
    refusal = cudnn_refusal(dtype, head_size)
    if refusal is None and dropping and padding:
        refusal = _padded_dropout_refusal()
    if refusal is None:
        return "cudnn"
    backend = keras.backend.backend()
    if impl == "auto":
        level = logging.WARNING if cuda_device() is not None else logging.INFO
        say_once(f"auto:{refusal}", f"attention auto: plain attention, not cuDNN flash attention: {refusal}", level)
        return "plain"
    kernel = "xla" if backend == "jax" else "keras"
    if dropping:
        say_once(f"fused-dropout:{kernel}", f"attention fused: {refusal}; the {kernel} attention kernel has no "
                 f"dropout, so training with attention dropout {dropout_rate} runs the plain attention")
        return "plain"
    return kernel


# -- cuDNN in training with dropout and padding --------------------------------------------------
# JAX's cuDNN kernel aborts the process in the gradient of attention dropout with a padding mask
# under XLA's default settings (kbert.compat). compat.cudnn_training_route() says whether it runs
# here, and under which XLA setting of the compiled training step. kbert's models compile their
# training step through step_jit (the CompiledStepSettings mix-in), which gives the step that
# setting and marks its trace; a call traced anywhere else keeps off the kernel.
_route: list = []            # the route of this process, decided once (compat.cudnn_training_route)
_step_setting = [None]       # the XLA setting of the training step being traced, if any
_route_taken: dict = {}      # what the traced training calls with dropout and padding took


def training_route():
    """``kbert.compat.CudnnTrainingRoute`` for this process (decided once)."""
    if not _route:
        from kbert import compat

        _route.append(compat.cudnn_training_route())
    return _route[0]


def assume_cudnn_training_setting(setting: str | None) -> None:
    """Takes the route through ``setting`` (a name of ``kbert.compat.XLA_STEP_SETTINGS``, or None:
    no setting) as known to run, in this process only: what ``compat.CUDNN_DROPOUT_WITH_PADDING_RUNS``
    will say once a probe has shown it. For the probe and the benchmark, which measure a setting
    before it is listed; a setting that does not run aborts the process."""
    from kbert import compat

    if setting is not None and setting not in compat.XLA_STEP_SETTINGS:
        raise OptionsError(f"XLA setting {setting!r}; expected one of {', '.join(compat.XLA_STEP_SETTINGS)}")
    compat.CUDNN_DROPOUT_WITH_PADDING_RUNS = {setting: (0, 0, 0)}
    _route.clear()


def route_taken() -> dict:
    """The route the traced training calls with attention dropout and a padding mask took in this
    process: ``{"kernel": "cudnn" or "plain", "runs", "setting", "compiler_options", "reason", "jax"}``
    (``compat.CudnnTrainingRoute.as_dict`` and the kernel), or {} when no such call was traced."""
    return dict(_route_taken)


def _padded_dropout_refusal() -> str | None:
    route = training_route()
    reason = route.reason
    if route.runs and route.setting is not None and _step_setting[0] != route.setting:
        reason = (f"the gradient of attention dropout with a padding mask runs here only under XLA setting "
                  f"{route.setting!r}, which kbert's models give their compiled training step; this call is "
                  "traced outside one (compile your own step with kbert.layers.accel.step_jit)")
    _route_taken.update(route.as_dict(), kernel="plain" if reason else "cudnn", reason=reason)
    if reason is None:
        how = f" under XLA setting {route.setting!r} ({dict(route.compiler_options)}) of the compiled " \
              "training step" if route.setting else ""
        say_once(f"route:{route.setting}", "attention: training with attention dropout and a padding mask runs "
                 f"cuDNN flash attention{how}", logging.INFO)
    return reason


def step_jit(function, jit=None, **kwargs):
    """``jit(function, **kwargs)`` (default ``jax.jit``) for a training step: with the compiler options
    of the route's XLA setting (``training_route``), and traced with that setting marked, so that
    attention with dropout and a padding mask may take cuDNN's kernel inside it."""
    import jax

    jit = jit or jax.jit
    route = training_route()
    setting = route.setting if route.runs and route.setting is not None and jit is jax.jit else None
    if setting is None:
        return jit(function, **kwargs)

    @functools.wraps(function)
    def traced(*args, **kw):
        previous, _step_setting[0] = _step_setting[0], setting
        try:
            return function(*args, **kw)
        finally:
            _step_setting[0] = previous

    options = {**dict(route.compiler_options), **(kwargs.pop("compiler_options", None) or {})}
    return jit(traced, compiler_options=options, **kwargs)


class CompiledStepSettings:
    """Mix-in for a ``keras.Model``: under JAX on an NVIDIA GPU, where the route to cuDNN's attention
    in training needs an XLA setting (``training_route``), Keras compiles the training step through
    ``step_jit``; elsewhere (and for the test and predict steps) exactly Keras' ``make_train_function``."""

    def make_train_function(self, force=False):
        route = training_route() if keras.backend.backend() == "jax" else None
        if route is None or not route.runs or route.setting is None or cuda_device() is None:
            return super().make_train_function(force)
        from kbert import compat

        with compat.keras_jax_step_jit(lambda jit: functools.partial(step_jit, jit=jit)):
            return super().make_train_function(force)


# -- dropout bits ---------------------------------------------------------------------------------
# Keras' JAX dropout draws a float32 uniform per element, and with jax_threefry_partitionable (the
# default) every element costs a whole threefry2x32 call. kbert's dropout can compare fewer bits
# per element with an integer threshold, from a cheaper generator.
DROPOUT_PRNGS = ("threefry", "threefry-flat", "rbg", "unsafe_rbg")
DROPOUT_BITS = (32, 16, 8)
_dropout_bits = ["threefry", 32]


def set_dropout_prng(impl: str = "threefry", bits: int = 32) -> None:
    """Under JAX, how kbert's dropout layers draw their masks: ``bits`` random bits per element (32,
    16 or 8) compared with the integer threshold round(keep · 2^bits), from ``impl``:

    - "threefry": threefry2x32 as ``jax.random.bits`` draws it (partitionable over devices), the
      narrower draws packed 32 // bits to a word: ``("threefry", 32)`` is Keras' own dropout (the
      default), 16 bits take half its threefry calls, 8 bits a quarter;
    - "threefry-flat": threefry2x32 over one flat counter (JAX's non-partitionable layout: every
      call's 64 bits used, an eighth of the calls at 8 bits); for one device;
    - "rbg", "unsafe_rbg": XLA's RngBitGenerator at that width (Philox where XLA expands it).

    The kept elements are scaled by 2^bits / threshold, so the expectation is exact; the rate
    applied is 1 - threshold / 2^bits (``dropout_rate_applied``): at 8 bits, 0.1 becomes 26/256.
    Keras' own keys stay threefry, which is why the global ``jax_default_prng_impl`` is not used."""
    if impl not in DROPOUT_PRNGS:
        raise OptionsError(f"dropout PRNG is {impl!r}; expected one of {', '.join(DROPOUT_PRNGS)}")
    if bits not in DROPOUT_BITS:
        raise OptionsError(f"dropout bits are {bits!r}; expected one of {', '.join(map(str, DROPOUT_BITS))}")
    _dropout_bits[:] = [impl, bits]


def dropout_prng() -> str:
    return _dropout_bits[0] if keras.backend.backend() == "jax" else "threefry"


def dropout_bits() -> int:
    return _dropout_bits[1] if keras.backend.backend() == "jax" else 32


def kbert_draws_dropout() -> bool:
    """Whether kbert's dropout layers draw their own masks (``jax_dropout``) rather than Keras'."""
    return (dropout_prng(), dropout_bits()) != ("threefry", 32)


def keep_threshold(rate: float, bits: int) -> int:
    """round((1 - rate) · 2^bits): an element is kept when its ``bits`` random bits are below it."""
    return int(round((1.0 - float(rate)) * 2 ** bits))


def dropout_rate_applied(rate: float, bits: int | None = None) -> float:
    """The dropout rate kbert's dropout applies for ``rate`` at ``bits`` (default: the current setting)."""
    bits = dropout_bits() if bits is None else bits
    return 1.0 - min(keep_threshold(rate, bits), 2 ** bits) / 2 ** bits


def jax_dropout(inputs, rate: float, seed):
    """Inverted dropout under JAX with the ``set_dropout_prng`` generator and width, keyed by a Keras
    seed (two uint32 words, a fresh pair per call from the layer's SeedGenerator)."""
    import jax.numpy as jnp

    impl, bits = _dropout_bits
    threshold = keep_threshold(rate, bits)
    if threshold >= 2 ** bits:  # a rate below half a step of the threshold: nothing to drop
        return inputs
    words = jnp.asarray(seed).astype("uint32")
    random = _random_bits(impl, bits, words, tuple(inputs.shape))
    keep = random < jnp.asarray(threshold, random.dtype)
    # The scale in float32: in bf16, 1/0.9 would be 1.109 and bias the expectation.
    scaled = (inputs.astype(jnp.float32) * jnp.float32(2 ** bits / threshold)).astype(inputs.dtype)
    return jnp.where(keep, scaled, jnp.zeros((), inputs.dtype))


def _random_bits(impl: str, bits: int, words, shape: tuple):
    """uint [shape] of ``bits`` uniform random bits each (uint32 for 32, uint16 for 16, uint8 for 8)."""
    import math

    import jax
    import jax.numpy as jnp

    dtype = {32: jnp.uint32, 16: jnp.uint16, 8: jnp.uint8}[bits]
    if impl in ("rbg", "unsafe_rbg"):
        # rbg keys are four words: the two of the seed and a mix of them.
        key = jax.random.wrap_key_data(jnp.concatenate([words, words[::-1] ^ jnp.uint32(0x9E3779B9)]), impl=impl)
        return jax.random.bits(key, shape, dtype)
    per_word = 32 // bits
    if impl == "threefry-flat":
        import jax.extend.random as jex_random

        size = math.prod(shape)
        count = -(-size // per_word)
        packed = jex_random.threefry_2x32(words, jax.lax.iota(jnp.uint32, count))
        return _unpack(packed, bits, dtype).reshape(-1)[:size].reshape(shape)
    key = jax.random.wrap_key_data(words, impl="threefry2x32")
    if per_word == 1 or not shape:
        return jax.random.bits(key, shape, dtype)
    last = shape[-1]
    packed = jax.random.bits(key, shape[:-1] + (-(-last // per_word),), jnp.uint32)
    return _unpack(packed, bits, dtype).reshape(shape[:-1] + (-1,))[..., :last]


def _unpack(words, bits: int, dtype):
    """uint32 [..., W] -> dtype [..., W, 32 // bits]: each word's fields, lowest first."""
    import jax.numpy as jnp

    shifts = jnp.arange(0, 32, bits, dtype=jnp.uint32)
    return ((words[..., None] >> shifts) & jnp.uint32(2 ** bits - 1)).astype(dtype)


# -- rematerialization ---------------------------------------------------------------------------
# Under JAX a transformer block in training may run inside jax.checkpoint, its activations
# recomputed in the backward pass instead of kept. Keras' RematScope cannot do this for kbert's
# blocks: jax.checkpoint traces the block's Python arguments (``training``) as arrays, and the
# dropout layers' seed updates inside it would escape the checkpointed trace. Here the block draws
# its dropout seeds before the checkpoint (``predrawn_seeds``) and its dropout layers use them.
REMAT_POLICIES = ("none", "full", "dots")
_remat = ["none"]
_predrawn: dict = {}


def set_remat(policy: str = "none") -> None:
    """Under JAX, what each transformer block keeps for the backward pass in training: "none" (every
    activation: no recomputation, the default), "full" (its input only: the block's forward runs
    again in the backward pass), "dots" (the outputs of its matrix products without batch dimensions,
    ``jax.checkpoint_policies.dots_with_no_batch_dims_saveable``: the projections and FFN kept,
    the attention, GELU, LayerNorms and dropout recomputed)."""
    if policy not in REMAT_POLICIES:
        raise OptionsError(f"remat policy is {policy!r}; expected one of {', '.join(REMAT_POLICIES)}")
    _remat[0] = policy


def remat_policy() -> str:
    return _remat[0] if keras.backend.backend() == "jax" else "none"


def rematerialized(function):
    """``function`` under ``jax.checkpoint`` with the ``set_remat`` policy."""
    import jax

    policy = {"full": jax.checkpoint_policies.nothing_saveable,
              "dots": jax.checkpoint_policies.dots_with_no_batch_dims_saveable}[_remat[0]]
    return jax.checkpoint(function, policy=policy)


@contextlib.contextmanager
def predrawn_seeds(dropout_layers):
    """Draws each layer's next dropout seed now; inside, those layers use it (``predrawn_seed``)."""
    seeds = {id(layer): layer.seed_generator.next() for layer in dropout_layers
             if getattr(layer, "seed_generator", None) is not None and 0.0 < layer.rate < 1.0}
    _predrawn.update(seeds)
    try:
        yield
    finally:
        for key in seeds:
            _predrawn.pop(key, None)


def predrawn_seed(layer):
    """The seed ``predrawn_seeds`` drew for ``layer``, or None."""
    return _predrawn.get(id(layer))


def padding_lengths(padding_mask):
    """[batch, S] 1/0 mask -> int32 [batch] lengths, or None when a known mask is not right-padded
    (a 0 before a 1 in some row: the lengths would not say which keys are padding)."""
    mask = ops.cast(padding_mask, "int32")
    lengths = ops.sum(mask, axis=1)
    try:
        import numpy as np

        values = np.asarray(ops.convert_to_numpy(mask))
    except Exception:  # a traced mask (inside a compiled step): its values are not known here
        return lengths
    right = np.arange(values.shape[1])[None, :] < values.sum(axis=1)[:, None]
    if not np.array_equal(values != 0, right):
        say_once("not-right-padded", "attention: a padding mask is not right-padded (0s before 1s); that call "
                 "runs the masked attention instead of the sequence-lengths form")
        return None
    return lengths


def attention(kernel: str, query, key, value, padding_mask, scale, *, dropout_rate=0.0, training=None, seed=0):
    """Softmax(query·keyᵀ·scale, padded keys masked)·value with ``kernel`` (not "plain"), or None
    when the kernel refused the call (the caller then runs the plain path; logged once).

    ``query`` [batch, Q, heads, size], ``key`` and ``value`` [batch, S, heads, size] (the layout
    of the projections, no transposes); ``padding_mask`` [batch, S] with 1 for real tokens, or
    None. Returns [batch, Q, heads, size] in the inputs' dtype. ``dropout_rate``, ``training``
    and ``seed`` (a per-layer constant) reach the cuDNN kernel only.
    """
    if kernel == "keras":
        return _masked(query, key, value, padding_mask, scale)
    lengths = None if padding_mask is None else padding_lengths(padding_mask)
    if padding_mask is not None and lengths is None:
        return _masked(query, key, value, padding_mask, scale) if kernel == "xla" else None
    if kernel == "xla":
        import jax

        return jax.nn.dot_product_attention(query, key, value, scale=scale, key_value_seq_lengths=lengths,
                                            implementation="xla")
    if kernel == "cudnn":
        return _cudnn(query, key, value, lengths, scale, dropout_rate if training else 0.0, seed)
    raise ValueError(f"unknown attention kernel {kernel!r}")


def _masked(query, key, value, padding_mask, scale):
    mask = None
    if padding_mask is not None:
        # [batch, 1, 1, S]: broadcast over heads and queries; True keeps a key.
        mask = ops.expand_dims(ops.expand_dims(ops.cast(padding_mask, "bool"), 1), 1)
    return ops.dot_product_attention(query, key, value, mask=mask, scale=scale, flash_attention=None)


def _cudnn(query, key, value, lengths, scale, dropout_rate, seed):
    import jax.numpy as jnp

    function, _ = _cudnn_function()
    batch, q_len = query.shape[0], query.shape[1]
    # Every query row is computed (as in the plain path); padded keys get no weight.
    # No padding mask: no lengths either, cuDNN's kernel without a mask (lengths of the full
    # width would select its padding kernel, which cannot take dropout's gradient: compat).
    q_seqlen = None if lengths is None else jnp.full((batch,), q_len, dtype="int32")
    kv_seqlen = None if lengths is None else jnp.asarray(lengths, "int32")
    try:
        return function(query, key, value, q_seqlen, kv_seqlen, scale=scale, dropout_rate=dropout_rate, seed=seed)
    except (NotImplementedError, ValueError, RuntimeError) as e:
        say_once(f"cudnn-refused:{type(e).__name__}:{e}",
                 f"attention: cuDNN flash attention refused a call ({type(e).__name__}: {e}); that layer runs "
                 "the plain attention")
        return None
