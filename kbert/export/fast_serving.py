"""An XLA-compiled serving signature for the encoder export (``kbert.export encoder --xla-signature``).

``serving_xla`` takes and returns exactly what ``serving_default`` does, computed by one
XLA-compiled function (``tf.function(jit_compile=True)``) instead of TensorFlow's op-by-op
executor. At batch 1 a small encoder is dominated by the dispatch of its ~265 ops, which XLA fuses
away; for large batches and BERT-Base oneDNN's fused kernels in the plain graph win (docs/serving.md,
"Serving latency", has the measured numbers). So the plain ``serving_default`` stays the default
and the fallback, and a client that sends one request at a time picks ``serving_xla``.

XLA compiles once per input shape (batch, sequence length): send fixed-length requests (the
preprocessor export pads to its seq_length), and the export's warm-up request compiles
batch 1 x ``WARMUP_SEQ_LENGTH`` at load time. TensorFlow Serving runs the signature only when
started with ``--xla_cpu_compilation_enabled=true`` (without it the first call of this signature
returns an error, and its warm-up request fails the model's load: export it only for servers
started with that flag). ``tf.saved_model.load`` in Python runs it as it is.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

XLA_SIGNATURE = "serving_xla"
WARMUP_SEQ_LENGTH = 128


def flat_outputs(outputs) -> dict:
    """The encoder's outputs as serving_default returns them (encoder_outputs_0..L-1)."""
    flat = {"sequence_output": outputs["sequence_output"], "pooled_output": outputs["pooled_output"],
            "default": outputs["pooled_output"]}
    for i, x in enumerate(outputs["encoder_outputs"]):
        flat[f"encoder_outputs_{i}"] = x
    return flat


def add_xla_signature(module, encoder, input_spec) -> dict:
    """Adds ``module.serve_xla`` (the Keras ``encoder`` traced inside ``jit_compile``, so its layers
    take their plain Keras formulation, which XLA fuses) and returns ``{"serving_xla": concrete}``."""

    @tf.function(input_signature=[input_spec], jit_compile=True)
    def serve_xla(inputs):
        return flat_outputs(encoder(inputs, training=False))

    module.serve_xla = serve_xla
    return {XLA_SIGNATURE: serve_xla.get_concrete_function()}


def xla_warmup_requests(input_spec, seq_length=WARMUP_SEQ_LENGTH) -> list[tuple[str, dict]]:
    """One batch-1 request of ``seq_length`` tokens for ``serving_xla`` (compiled at load time)."""
    ids = np.zeros((1, seq_length), np.int32)
    ids[0, :2] = [101, 102]
    mask = np.zeros_like(ids)
    mask[0, :2] = 1
    values = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}
    return [(XLA_SIGNATURE, {name: values[name] for name in input_spec})]
