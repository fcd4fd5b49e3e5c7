"""The Model Garden (tf-models-official) peer of the kbert benches, run as a child process.

tf-models-official 2.20 pins TensorFlow 2.20 (and Keras 2, as tf_keras), so it cannot live in
kbert's environment (TensorFlow 2.21). It runs in a Python environment of its own::

    python -m venv mg-venv && mg-venv/bin/pip install "tf-models-official==2.20.0" "tensorflow==2.20.*"
    python -m kbert.bench encoder --model-garden-python mg-venv/bin/python ...

and answers the parent's timing requests like the transformers peer (protocol in
``kbert.bench.common.SubprocessPeer``); the parent puts this kbert on its PYTHONPATH.

spec: ``task`` ("encoder" or "train"), ``config`` (BertConfig fields), ``batch_size``,
``seq_length``, ``precision`` ("float32" or "mixed_bfloat16"), ``threads``, ``xla`` (list of
booleans: a row per XLA setting), ``predictions`` (train), ``warmup``, ``flops`` (per item).
Models: ``tfm.nlp.networks.BertEncoder`` (inference) and ``tfm.nlp.models.BertPretrainerV2`` with
a 2-class ``next_sentence`` head (train: MLM at the masked positions + NSP, tf_keras AdamW with
weight decay 0.01 and global norm clipping 1.0, one GradientTape step in a tf.function).
"""

from __future__ import annotations

import sys
from importlib import metadata

from kbert.bench.common import child_main, warm_up_rows


def build(spec):
    import numpy as np
    import tensorflow as tf
    import tensorflow_models as tfm
    import tf_keras

    threads = int(spec["threads"])
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    cfg = spec["config"]
    batch, seq = int(spec["batch_size"]), int(spec["seq_length"])
    bf16 = spec["precision"] == "mixed_bfloat16"
    if bf16:
        tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
    approximate = cfg["hidden_act"] != "gelu_exact"  # kbert's "gelu" is the original's tanh form
    rng = np.random.default_rng(0)
    inputs = {
        "input_word_ids": tf.constant(rng.integers(1, cfg["vocab_size"], (batch, seq)).astype("int32")),
        "input_mask": tf.ones((batch, seq), tf.int32),
        "input_type_ids": tf.zeros((batch, seq), tf.int32),
    }

    def encoder():
        return tfm.nlp.networks.BertEncoder(
            vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"], num_layers=cfg["num_hidden_layers"],
            num_attention_heads=cfg["num_attention_heads"], max_sequence_length=cfg["max_position_embeddings"],
            type_vocab_size=cfg["type_vocab_size"], inner_dim=cfg["intermediate_size"],
            inner_activation=lambda x: tf_keras.activations.gelu(x, approximate=approximate),
            output_dropout=cfg["hidden_dropout_prob"], attention_dropout=cfg["attention_probs_dropout_prob"],
            initializer=tf_keras.initializers.TruncatedNormal(stddev=cfg["initializer_range"]), dict_outputs=True)

    version = f"Model Garden {metadata.version('tf-models-official')}"
    prec = ", mixed_bfloat16" if bf16 else ""
    fns = {}
    if spec["task"] == "encoder":
        model = encoder()
        for jit in spec.get("xla", [False, True]):
            fn = tf.function(lambda x: model(x, training=False)["sequence_output"], jit_compile=jit)
            fns[f"{version} ({'XLA' if jit else 'no XLA'}{prec})"] = lambda fn=fn: fn(inputs).numpy()
    elif spec["task"] == "train":
        preds = int(spec["predictions"])
        features = dict(inputs, masked_lm_positions=tf.constant(np.stack(
            [np.sort(rng.permutation(np.arange(1, seq))[:preds]) for _ in range(batch)]).astype("int32")))
        labels = tf.constant(rng.integers(0, cfg["vocab_size"], (batch, preds)).astype("int32"))
        weights = tf.ones((batch, preds), tf.float32)
        nsp_labels = tf.constant(rng.integers(0, 2, (batch,)).astype("int32"))
        for jit in spec.get("xla", [False, True]):
            model = tfm.nlp.models.BertPretrainerV2(
                encoder_network=encoder(),
                mlm_activation=lambda x: tf_keras.activations.gelu(x, approximate=approximate),
                classification_heads=[tfm.nlp.layers.ClassificationHead(
                    inner_dim=cfg["hidden_size"], num_classes=2, dropout_rate=cfg["hidden_dropout_prob"],
                    name="next_sentence")])
            model(features)
            optimizer = tf_keras.optimizers.AdamW(learning_rate=1e-4, weight_decay=0.01, beta_1=0.9, beta_2=0.999,
                                                  epsilon=1e-6, global_clipnorm=1.0)

            def step(model=model, optimizer=optimizer):
                with tf.GradientTape() as tape:
                    out = model(features, training=True)
                    mlm = tf_keras.losses.sparse_categorical_crossentropy(
                        labels, tf.cast(out["mlm_logits"], tf.float32), from_logits=True)
                    nsp = tf_keras.losses.sparse_categorical_crossentropy(
                        nsp_labels, tf.cast(out["next_sentence"], tf.float32), from_logits=True)
                    loss = tf.reduce_sum(mlm * weights) / (tf.reduce_sum(weights) + 1e-5) + tf.reduce_mean(nsp)
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(grads, model.trainable_variables))
                return loss

            fn = tf.function(step, jit_compile=jit)
            fns[f"{version} ({'XLA' if jit else 'no XLA'}{prec}), AdamW"] = lambda fn=fn: float(fn())
    else:
        raise ValueError(f"unknown task {spec['task']!r}")
    infos = warm_up_rows(fns, spec, batch, f"tf-{spec['precision']}")
    return infos, fns, f"{version}, TensorFlow {tf.__version__}"


if __name__ == "__main__":
    sys.exit(child_main(build))
