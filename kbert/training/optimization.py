"""AdamW (or LAMB) with linear warmup then linear decay, as google-research/bert ``optimization.py``."""

from __future__ import annotations

import keras
from keras import ops

from kbert import compat
from kbert.errors import OptionsError

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


class _ClipAfterAllReduce(compat.ClipGradientsHook):
    """Gradient clipping on the *global* gradient under tf.distribute.

    Keras clips each replica's partial gradient and only then all-reduces (sums) them, so a
    2-replica run clips differently from a 1-device run with the same global batch. Here the
    gradients are summed first, clipped, and divided by the replica count so that Keras' own sum
    afterwards gives back exactly the clipped global gradient.
    """

    def clip_gradients(self, grads):
        if keras.backend.backend() != "tensorflow" or (
            self.clipnorm is None and self.global_clipnorm is None and self.clipvalue is None
        ):
            return self.keras_clip_gradients(grads)
        import tensorflow as tf

        ctx = tf.distribute.get_replica_context()
        if ctx is None or ctx.num_replicas_in_sync == 1:
            return self._clip_local(grads)
        present = [i for i, g in enumerate(grads) if g is not None]
        summed = ctx.all_reduce(tf.distribute.ReduceOp.SUM, [grads[i] for i in present])
        clipped = self._clip_local(list(summed))
        out = list(grads)
        for i, g in zip(present, clipped):
            out[i] = g / ctx.num_replicas_in_sync
        return out

    def _clip_local(self, grads):
        if self.global_clipnorm is None or self.clipnorm is not None or self.clipvalue is not None:
            return self.keras_clip_gradients(grads)
        return clip_by_global_norm(grads, self.global_clipnorm)


def clip_by_global_norm(grads, clip_norm):
    """Keras' ``clip_by_global_norm`` (same scale, same NaN/inf behaviour) in fewer passes, on TensorFlow.

    Keras squares every gradient into a new tensor, sums it, then multiplies every gradient by the
    scale, even when the norm is under ``clip_norm`` and the scale is 1: three passes over the ~30M
    gradient floats of BERT-Small. Here the squared norm of each gradient is one ``l2_loss``
    reduction, and the gradients are multiplied only when the norm exceeds ``clip_norm`` (or is
    not finite). The saving per step: docs/bench/code-notes.
    """
    import tensorflow as tf

    present = [i for i, g in enumerate(grads) if g is not None]
    if not present:
        return list(grads)
    dense = [tf.convert_to_tensor(grads[i]) for i in present]
    squares = [2.0 * tf.nn.l2_loss(tf.cast(g, tf.float32)) for g in dense]
    norm = tf.sqrt(tf.add_n(squares))
    clip = tf.cast(clip_norm, tf.float32)
    scale = clip * tf.minimum(1.0 / norm, 1.0 / clip) + (norm - norm)  # NaN for a non-finite norm

    def scaled():
        return [g * tf.cast(scale, g.dtype) for g in dense]

    kept = tf.cond(norm <= clip, lambda: [tf.identity(g) for g in dense], scaled)
    out = list(grads)
    for i, g in zip(present, kept):
        out[i] = g
    return out


class AdamW(compat.StepHooks, _ClipAfterAllReduce, keras.optimizers.AdamW):
    """Keras' AdamW; on TensorFlow each variable's update is one fused kernel.

    Keras writes Adam as some ten element-wise ops per variable, each a pass over memory
    (their share of a step: docs/bench/code-notes). TensorFlow's
    ``ResourceApplyAdam`` computes the same formula (``alpha = lr * sqrt(1 - beta_2^t) /
    (1 - beta_1^t)``, ``m += (g - m)(1 - beta_1)``, ``v += (g^2 - v)(1 - beta_2)``,
    ``var -= alpha * m / (sqrt(v) + epsilon)``) in one pass. Weight decay, clipping,
    the schedule and the variables are Keras' own. Other backends, AMSGrad, and variables
    without a resource handle take Keras' path.
    """

    def update_step(self, gradient, variable, learning_rate):
        if keras.backend.backend() != "tensorflow" or self.amsgrad or not hasattr(variable, "handle"):
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf

        m, v = compat.adam_slots(self, variable)
        s = self._step_scalars(variable.dtype, learning_rate)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle, m=m.handle, v=v.handle, beta1_power=s["beta1_power"],
            beta2_power=s["beta2_power"], lr=s["lr"], beta1=s["beta1"], beta2=s["beta2"], epsilon=s["epsilon"],
            grad=tf.cast(tf.convert_to_tensor(gradient), variable.dtype))

    # A step's scalars (the beta powers, the learning rate, the decay rate) are made once per step
    # and dtype, not once per variable: Keras evaluates the schedule again in every variable's weight
    # decay, and the update above cast and raised the betas per variable, some 20 graph ops per
    # variable that every traced training step built and ran (about a fifth of the time to trace
    # MiniLM's training step, ~100 variables). The values are the same: each scalar comes from the
    # same ops, computed once. They are kept in ``step_cache`` (compat.StepHooks), which lives for
    # one step (one step's graph, or one eager step), so no tensor outlives the step that made it.
    def _step_scalars(self, dtype, learning_rate):
        """{name: scalar tensor of ``dtype``} for this step; ``learning_rate`` as given to update_step."""
        import tensorflow as tf

        cache = self.step_cache
        key = (dtype, id(learning_rate))
        if cache is not None and key in cache:
            return cache[key]
        step = tf.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        scalars = dict(beta1=beta_1, beta2=beta_2, beta1_power=tf.pow(beta_1, step), beta2_power=tf.pow(beta_2, step),
                       lr=tf.cast(learning_rate, dtype), epsilon=tf.cast(self.epsilon, dtype))
        if cache is not None:
            cache[key] = scalars
        return scalars

    def decay_weights(self, variables):
        """Keras' decoupled weight decay on TensorFlow (``variable -= variable * wd * lr``, as Keras
        computes it), with ``wd`` and ``lr`` made once per step and dtype (see above)."""
        if keras.backend.backend() != "tensorflow" or self.weight_decay is None:
            return self.keras_decay_weights(variables)
        import tensorflow as tf

        cache = {} if self.step_cache is None else self.step_cache

        def decay(variable):
            if ("decay", variable.dtype) not in cache:
                cache[("decay", variable.dtype)] = (tf.cast(self.weight_decay, variable.dtype),
                                                    tf.cast(self.learning_rate, variable.dtype))
            wd, lr = cache[("decay", variable.dtype)]
            variable.assign_sub(variable * wd * lr)

        self.decay_each(variables, decay)


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
        raise OptionsError(f"unknown optimizer {optimizer!r}; expected 'adamw' or 'lamb'", option="optimizer",
                           value=optimizer)
    opt.exclude_from_weight_decay(var_names=NO_DECAY)
    return opt
