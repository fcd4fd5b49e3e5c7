"""One job of tests/test_training_backends.py in its own process: a Keras backend is chosen per
process (KERAS_BACKEND before Keras is imported), so each backend's side of a comparison runs here.

    python tests/backend_worker.py JOB MODEL_DIR OUT [ARGS...]

Jobs (each writes OUT, an .npz or a model directory):
  step        one optimizer step (dropout off) on BATCH from MODEL_DIR's weights -> the new weights
  fit         STEPS steps of data-parallel fit over every device -> the new weights
              (ARGS: steps, then for several processes: coordinator address, processes, process id)
  finetune    fine-tune a classifier on TEXTS (loss must fall) -> a model directory OUT and
              OUT/jax_probabilities.npz (its predictions for TEXTS)
  pretrain    pre-train BERT-Tiny for STEPS steps on MODEL_DIR's records into OUT (resuming there)
  served      the TensorFlow SavedModel export of model directory MODEL_DIR answering TEXTS -> npz
"""

from __future__ import annotations

import os
import pathlib
import sys

TEXTS = ["the cat sat on a mat", "a good day in the garden", "the dog ran far away from home",
         "she saw a big red ball", "it was a bad night", "he made a good ball", "the mat was red",
         "a cat and a dog"]
LABELS = [0, 1, 0, 1, 0, 1, 0, 1]
NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def classifier(model_dir, dropout=0.0):
    from kbert.tasks.classifier import TextClassifier

    return TextClassifier.from_model_dir(model_dir, num_classes=2, seq_length=32, load_head=False,
                                         dropout=dropout, encoder_overrides=NO_DROPOUT)


def weights(model) -> dict:
    import numpy as np

    return {f"{i}:{v.path}": np.asarray(v.numpy()) for i, v in enumerate(model.weights)}


def set_head(model):
    """The head from a fixed seed-free init: the same numbers under every backend."""
    import numpy as np

    rng = np.random.default_rng(0)
    for v in model.head.weights:
        v.assign(rng.normal(0, 0.02, v.shape).astype("float32"))


def main(job, model_dir, out, *args):
    import numpy as np

    if job == "served":
        import tensorflow as tf

        from kbert.export.task import export_task

        served = tf.saved_model.load(str(export_task(model_dir, pathlib.Path(out).with_suffix(".savedmodel"),
                                                     warmup=False)))
        result = served.signatures["serving_default"](tf.constant(TEXTS))
        np.savez(out, probabilities=result["probabilities"].numpy())
        return
    import keras

    from kbert.training.optimization import create_optimizer

    if job == "step":
        model = classifier(model_dir)
        set_head(model)
        model.compile(create_optimizer(1e-3, 10, 0, weight_decay=0.01))
        before = weights(model)
        model.fit(np.array(TEXTS, dtype=object), np.array(LABELS), batch_size=len(TEXTS), epochs=1, shuffle=False,
                  verbose=0)
        after = weights(model)
        moved = max(float(np.max(np.abs(after[k] - before[k]))) for k in after)
        np.savez(out, moved=moved, **after)
    elif job == "fit":
        from kbert.training.devices import setup_devices

        steps = int(args[0])
        multi = dict(coordinator_address=args[1], num_processes=int(args[2]), process_id=int(args[3])) \
            if len(args) > 1 else {}
        devices = setup_devices(global_batch_size=8, **multi)
        keras.utils.set_random_seed(0)  # every process must create the same initial values
        model = classifier(model_dir)
        set_head(model)
        model.compile(create_optimizer(1e-3, steps, 0))
        texts = np.array(TEXTS * steps, dtype=object)
        model.fit(texts, np.array(LABELS * steps), batch_size=8, epochs=1, shuffle=False, verbose=0)
        np.savez(out, devices=devices.count, processes=devices.processes, **weights(model))
    elif job == "finetune":
        keras.utils.set_random_seed(0)
        model = classifier(model_dir, dropout=0.1)
        model.compile(create_optimizer(3e-3, 60, 0))
        history = model.fit(np.array(TEXTS * 4, dtype=object), np.array(LABELS * 4), batch_size=8, epochs=15,
                            verbose=0)
        model.save_model_dir(out)
        np.savez(pathlib.Path(out) / "jax_probabilities.npz", loss=np.array(history.history["loss"]),
                 probabilities=model.predict_proba(np.array(TEXTS, dtype=object)))
    elif job == "pretrain":  # MODEL_DIR: a folder with vocab.txt and train-*.tfrecord; ARGS: steps
        from kbert.training.pretrain import PretrainOptions, pretrain

        losses = []

        class Losses(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                losses.append(float(logs["loss"]))

        data = pathlib.Path(model_dir)
        options = PretrainOptions(train_data=str(data / "train-*.tfrecord"), model_dir=str(out), config="tiny",
                                  vocab=str(data / "vocab.txt"), seq_length=32, max_predictions=5, batch_size=8,
                                  steps=int(args[0]), checkpoint_every=10, learning_rate=1e-3, warmup_steps=0, seed=0)
        results = pretrain(options, callbacks_for=lambda *layers: [Losses()])
        np.savez(pathlib.Path(out) / f"losses-{results['steps']}.npz", losses=np.array(losses))
    else:
        raise SystemExit(f"unknown job {job!r}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main(*sys.argv[1:])
