"""AdamW (or LAMB) with linear warmup then linear decay, as google-research/bert ``optimization.py``."""

from __future__ import annotations

import keras
from keras import ops

# Google's AdamW excludes LayerNorm and bias from weight decay. Keras matches these as substrings
# of variable paths: kbert's layer norms are named "*layer_norm*" and their weights gamma/beta.
NO_DECAY = ["bias", "gamma", "beta", "layer_norm", "LayerNorm"]


@keras.saving.register_keras_serializable("kbert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to ``peak`` over ``warmup_steps``, then linear decay to ``end`` at ``total_steps``.

    Keras has PolynomialDecay (power 1 = linear) and warmup only inside CosineDecay; this composes
    the original schedule in a few lines.
    """

    def __init__(self, peak, total_steps, warmup_steps=0, end=0.0):
        self.peak = float(peak)
        self.total_steps = int(total_steps)
        self.warmup_steps = int(warmup_steps)
        self.end = float(end)
        self.decay = keras.optimizers.schedules.PolynomialDecay(
            self.peak, max(1, self.total_steps - self.warmup_steps), self.end, power=1.0
        )

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warm = self.peak * step / max(1, self.warmup_steps)
        decayed = self.decay(ops.maximum(step - self.warmup_steps, 0.0))
        return ops.where(step < self.warmup_steps, warm, decayed)

    def get_config(self):
        return dict(peak=self.peak, total_steps=self.total_steps, warmup_steps=self.warmup_steps, end=self.end)


class _ClipAfterAllReduce:
    """Gradient clipping on the *global* gradient under tf.distribute.

    Keras clips each replica's partial gradient and only then all-reduces (sums) them, so a
    2-replica run clips differently from a 1-device run with the same global batch. Here the
    gradients are summed first, clipped, and divided by the replica count so that Keras' own sum
    afterwards gives back exactly the clipped global gradient.
    """

    def _clip_gradients(self, grads):
        if keras.backend.backend() != "tensorflow" or (
            self.clipnorm is None and self.global_clipnorm is None and self.clipvalue is None
        ):
            return super()._clip_gradients(grads)
        import tensorflow as tf

        ctx = tf.distribute.get_replica_context()
        if ctx is None or ctx.num_replicas_in_sync == 1:
            return super()._clip_gradients(grads)
        present = [i for i, g in enumerate(grads) if g is not None]
        summed = ctx.all_reduce(tf.distribute.ReduceOp.SUM, [grads[i] for i in present])
        clipped = super()._clip_gradients(list(summed))
        out = list(grads)
        for i, g in zip(present, clipped):
            out[i] = g / ctx.num_replicas_in_sync
        return out


class AdamW(_ClipAfterAllReduce, keras.optimizers.AdamW):
    pass


class Lamb(_ClipAfterAllReduce, keras.optimizers.Lamb):
    pass


def create_optimizer(
    learning_rate,
    total_steps,
    warmup_steps=0,
    weight_decay=0.01,
    optimizer="adamw",
    clipnorm=1.0,
):
    schedule = WarmupLinearDecay(learning_rate, total_steps, warmup_steps)
    if optimizer == "adamw":
        opt = AdamW(
            learning_rate=schedule, weight_decay=weight_decay, beta_1=0.9, beta_2=0.999,
            epsilon=1e-6, global_clipnorm=clipnorm,
        )
    elif optimizer == "lamb":
        opt = Lamb(
            learning_rate=schedule, weight_decay=weight_decay, beta_1=0.9, beta_2=0.999,
            epsilon=1e-6, global_clipnorm=clipnorm,
        )
    else:
        raise ValueError(f"unknown optimizer {optimizer!r}; expected 'adamw' or 'lamb'")
    opt.exclude_from_weight_decay(var_names=NO_DECAY)
    return opt
