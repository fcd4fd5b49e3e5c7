"""The seam between kbert's layers and the accelerator fast paths (JAX on NVIDIA GPUs first).

``kbert.layers.tf_fast`` holds TensorFlow's CPU formulations; this module decides which attention
kernel a self-attention call runs. The plain ``keras.ops`` code of the attention layer stays the
reference: tests/test_layers_accel*.py hold every path here equal to it.

``attention`` (an option of the attention layer, the block, the encoder, ``load_encoder``, the
task models and the pretrainer; ``--attention`` on the commands) is one of:

- ``"plain"``: the reference, ``softmax(q·kᵀ·scale + mask)·v`` in ``keras.ops`` with the paper's
  dropout on the attention probabilities in training;
- ``"auto"`` (the default): the fastest faithful path for the device. Under JAX on an NVIDIA GPU
  (compute capability 8.0 and up, bf16/fp16 activations, head size a multiple of 8) that is
  cuDNN's flash attention with the padding given as sequence lengths (no bias tensor, no bias
  gradient) and the config's dropout on the attention probabilities inside the kernel (JAX's
  private cuDNN API, behind ``kbert.compat.cudnn_attention``). Except in training with both
  attention dropout and a padding mask: JAX's cuDNN kernel aborts the process in that gradient
  (``kbert.compat.cudnn_dropout_with_padding_refusal``), so those calls run the plain path, while
  inference, training without attention dropout, and unpadded calls keep cuDNN. Anywhere else
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

import collections
import functools
import logging

import keras
from keras import ops

ATTENTION_IMPLS = ("auto", "plain", "fused")
KERNELS = ("plain", "cudnn", "xla", "keras")  # what a call ran: see choose_kernel

logger = logging.getLogger("kbert.attention")
_said: dict = {}


def check_attention_impl(value) -> str:
    """``value`` if it names an attention implementation, else ValueError naming it."""
    if value not in ATTENTION_IMPLS:
        raise ValueError(f"attention is {value!r}; expected one of {', '.join(ATTENTION_IMPLS)}")
    return value


def say_once(key: str, message: str, level=logging.WARNING) -> None:
    """Logs ``message`` the first time ``key`` is seen in this process (and keeps it: ``decisions()``)."""
    if key not in _said:
        _said[key] = message
        logger.log(level, message)


def decisions() -> dict:
    """What this process logged about its attention choices, by key (for reports and the bench)."""
    return dict(_said)


_traced = collections.Counter()


def record_call(kernel: str, training, dropout_applied: bool) -> None:
    """Counts one traced attention call: in training or not, the kernel it ran, whether it dropped
    out attention probabilities."""
    _traced[f"{'train' if training else 'infer'}:{kernel}{'+dropout' if dropout_applied else ''}"] += 1


def traced_calls() -> dict:
    """``{"train:cudnn+dropout": n, "infer:plain": m, ...}``: the attention calls traced in this
    process so far (a compiled step is traced once, so these count layers, not steps)."""
    return dict(_traced)


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
        from kbert import compat

        refusal = compat.cudnn_dropout_with_padding_refusal()
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


# -- dropout bits ---------------------------------------------------------------------------------
_dropout_prng = ["threefry"]
DROPOUT_PRNGS = ("threefry", "rbg", "unsafe_rbg")


def set_dropout_prng(impl: str) -> None:
    """Under JAX, which PRNG draws kbert's dropout masks: "threefry" (Keras' own dropout, the
    default), or "rbg" / "unsafe_rbg" (XLA's RngBitGenerator: far cheaper bits on GPUs and TPUs;
    other masks, the same distribution). Keras keeps threefry keys of two words, so a global
    ``jax_default_prng_impl`` switch breaks Keras' dropout; this one is kbert's dropout only."""
    if impl not in DROPOUT_PRNGS:
        raise ValueError(f"dropout PRNG is {impl!r}; expected one of {', '.join(DROPOUT_PRNGS)}")
    _dropout_prng[0] = impl


def dropout_prng() -> str:
    return _dropout_prng[0] if keras.backend.backend() == "jax" else "threefry"


def jax_dropout(inputs, rate: float, seed):
    """Inverted dropout under JAX with the ``set_dropout_prng`` generator, keyed by a Keras seed
    (two uint32 words, a fresh pair per call from the layer's SeedGenerator)."""
    import jax
    import jax.numpy as jnp

    words = jnp.asarray(seed).astype("uint32")
    # rbg keys are four words: the two of the seed and a mix of them.
    key = jax.random.wrap_key_data(jnp.concatenate([words, words[::-1] ^ jnp.uint32(0x9E3779B9)]),
                                   impl=_dropout_prng[0])
    keep = jax.random.bernoulli(key, 1.0 - rate, inputs.shape)
    return jnp.where(keep, inputs / jnp.asarray(1.0 - rate, inputs.dtype), jnp.zeros((), inputs.dtype))


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
