"""Dropout that runs as one XLA-compiled kernel in TensorFlow training (see kbert.layers.tf_fast),
and under JAX may draw fewer bits, from another PRNG (``kbert.layers.accel.set_dropout_prng``)."""

import keras

from kbert.layers import accel, tf_fast


class Dropout(keras.layers.Dropout):
    """``keras.layers.Dropout`` (same config, same seed-generator state) that, in training and
    where ``tf_fast.kernels_enabled``, runs as the fused kernel; otherwise exactly Keras' layer."""

    def call(self, inputs, training=False):
        if self._fusable(inputs, training):
            return tf_fast.dropout(inputs, self.rate, self.seed_generator.next())
        if training and 0.0 < self.rate < 1.0 and self.noise_shape is None:
            seed = accel.predrawn_seed(self)  # inside a rematerialized block (accel.set_remat)
            if seed is not None or accel.kbert_draws_dropout():
                return accel.jax_dropout(inputs, self.rate, self.seed_generator.next() if seed is None else seed)
        return super().call(inputs, training=training)

    def add_to(self, inputs, residual, training=False):
        """``residual + self(inputs)``, the add fused into the dropout kernel where it applies."""
        if self._fusable(inputs, training) and residual.shape == inputs.shape and residual.dtype == inputs.dtype:
            return tf_fast.dropout(inputs, self.rate, self.seed_generator.next(), residual=residual)
        return residual + self(inputs, training=training)

    def _fusable(self, inputs, training):
        return bool(training) and 0.0 < self.rate < 1.0 and self.noise_shape is None and tf_fast.kernels_enabled(inputs)
