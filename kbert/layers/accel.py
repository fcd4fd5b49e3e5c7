"""The seam between kbert's layers and the accelerator fast paths of Keras 3 (JAX on GPUs and TPUs).

``kbert.layers.tf_fast`` holds TensorFlow's CPU formulations; this module holds what makes the
same layers fast on accelerators under any Keras backend. The plain ``keras.ops`` code in each
layer stays the reference: tests/test_layers_accel.py holds every path here equal to it.

* ``attention``: fused scaled dot-product attention, ``keras.ops.dot_product_attention``, which
  on NVIDIA GPUs under JAX reaches cuDNN's flash attention (bf16/fp16 inputs, compute capability
  8.0 and up), and elsewhere XLA's own attention (on TPUs too: Keras takes its Splash kernel only
  for a mask known when tracing, and a padding mask is not). The padding mask is
  passed as a boolean key mask, so padded keys get no weight, as in the plain path.
* ``ATTENTION_IMPLS`` / ``use_fused``: which attention a layer runs, an explicit option of the
  attention layer, the block and the encoder (``attention_impl``):

  - ``"plain"`` (the default): the reference, with the paper's dropout on the attention
    probabilities in training;
  - ``"fused"``: always the fused kernel. ``keras.ops.dot_product_attention`` has no dropout, so
    in training the attention probabilities are NOT dropped out (the hidden-state dropouts after
    the attention output and the FFN still are): a model trained this way is trained with
    ``attention_probs_dropout_prob`` 0, whatever its config says;
  - ``"auto"``: fused where nothing changes (on a GPU or TPU, and not in training with attention
    dropout > 0), plain otherwise.

Mixed precision needs nothing here: under ``keras.mixed_precision.set_global_policy("mixed_bfloat16")``
weights stay float32 and are cast to bf16 for the matmuls; Keras' LayerNormalization computes its
statistics in float32, the plain attention takes its softmax in float32, the fused kernels
accumulate the softmax in float32, and the pre-training and fine-tuning losses cast logits to
float32.
"""

from __future__ import annotations

import functools

import keras
from keras import ops

ATTENTION_IMPLS = ("plain", "fused", "auto")


def check_attention_impl(value) -> str:
    """``value`` if it names an attention implementation, else ValueError naming it."""
    if value not in ATTENTION_IMPLS:
        raise ValueError(f"attention_impl is {value!r}; expected one of {', '.join(ATTENTION_IMPLS)}")
    return value


@functools.lru_cache(maxsize=None)
def on_accelerator() -> bool:
    """Whether the Keras backend computes on a GPU or TPU (decided once per process)."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return jax.default_backend() in ("gpu", "cuda", "rocm", "tpu")
    if backend == "torch":
        import torch

        return torch.cuda.is_available()
    return False  # TensorFlow takes its own fast paths (kbert.layers.tf_fast)


def use_fused(impl: str, *, training, dropout_rate: float, return_attention: bool = False) -> bool:
    """Whether a layer with ``attention_impl=impl`` runs ``attention`` for this call.

    Never when the caller wants the attention probabilities (the fused kernels do not return them).
    """
    if return_attention or impl == "plain":
        return False
    if impl == "fused":
        return True
    return on_accelerator() and not (training and dropout_rate > 0.0)


def attention(query, key, value, padding_mask, scale):
    """Softmax(query·keyᵀ·scale, padded keys masked)·value, as one fused op.

    ``query`` [batch, Q, heads, size], ``key`` and ``value`` [batch, S, heads, size] (the layout
    of the projections, no transposes); ``padding_mask`` [batch, S] with 1 for real tokens, or
    None. Returns [batch, Q, heads, size] in the inputs' dtype.
    """
    mask = None
    if padding_mask is not None:
        # [batch, 1, 1, S]: broadcast over heads and queries; True keeps a key.
        mask = ops.expand_dims(ops.expand_dims(ops.cast(padding_mask, "bool"), 1), 1)
    return ops.dot_product_attention(query, key, value, mask=mask, scale=scale, flash_attention=None)
