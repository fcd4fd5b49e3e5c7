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
  task-finetune KIND=DATA...  (KIND: tagging, span_qa, multiple_choice; DATA: its data folder; MODEL_DIR:
              the initial model) kbert.training.finetune on small data, each KIND in turn -> a model
              directory OUT/KIND with jax_answers.json and jax_ids.npz: the reloaded model's answers to
              KIND's inputs from raw text and its outputs for packed ids
  task-served KIND=DATA...    the TensorFlow export of each model directory MODEL_DIR/KIND answering the
              same inputs (serving_default) and the same ids (serving_ids) -> OUT/KIND.json, OUT/KIND.npz
              (several kinds per process: each process pays Keras', TensorFlow's or JAX's start once)
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


def classifier(model_dir, dropout=0.0, **settings):
    from kbert.tasks.classification.model import TextClassifier

    return TextClassifier.from_model_dir(model_dir, num_classes=2, seq_length=32, load_head=False,
                                         dropout=dropout, encoder_overrides=NO_DROPOUT, **settings)


def document_step_batches(model):
    """One batch of 4 documents of 1 to 6 windows (document-level training, as the classification
    recipe builds it under each backend)."""
    import numpy as np

    from kbert.tasks.core.base import host_packing
    from kbert.tasks.classification.window_inputs import document_batches

    texts = [" ".join(TEXTS[:k]) for k in (8, 1, 5, 3)]
    packed, document = model.window_ids(np.array(texts, dtype=object))
    host = (model._row_multiple(), model.WIDTH_MULTIPLE) if host_packing() else None
    return document_batches(packed, document, np.array(LABELS[:4]), batch_size=4, shuffle=False, host=host)


def weights(model) -> dict:
    import numpy as np

    return {f"{i}:{v.path}": np.asarray(v.numpy()) for i, v in enumerate(model.weights)}


def set_head(model):
    """The head from a fixed seed-free init: the same numbers under every backend."""
    import numpy as np

    rng = np.random.default_rng(0)
    for v in model.head.weights:
        v.assign(rng.normal(0, 0.02, v.shape).astype("float32"))


# The tagging texts (CoNLL sentences joined by spaces), SQuAD questions and SWAG rows of task-finetune.
TAG_SENTENCES = 6
SQUAD_QUESTIONS = 4
SWAG_CONTEXTS = ["She opened the fridge.", "He put on his running shoes.", "The kettle whistled.",
                 "They boarded the plane."]
SWAG_ENDINGS = [["took out the milk.", "flew to Mars.", "painted the sky.", "ate the door."],
                ["went for a jog.", "sang to the moon.", "drank the shoes.", "mailed a river."],
                ["poured the tea.", "buried the kettle.", "ran away.", "read the kettle."],
                ["took off.", "ate the plane.", "sang.", "knitted a cloud."]]


def write_swag(folder):
    """train.csv and val.csv: each context with its right ending (index 0 above) in each of the 4 slots."""
    import csv

    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("train.csv", "val.csv"):
        with open(folder / name, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source",
                        "ending0", "ending1", "ending2", "ending3", "label"])
            for i, (context, endings) in enumerate(zip(SWAG_CONTEXTS, SWAG_ENDINGS)):
                for slot in range(4):
                    order = [endings[(j - slot) % 4] for j in range(4)]  # endings[0] lands in `slot`
                    n = 4 * i + slot
                    w.writerow([n, f"v{n}", str(n), context, context, "", "gold", *order, slot])


def task_options(kind, model_dir, out, data):
    from kbert.tasks.core.options import FinetuneOptions

    common = dict(init=str(model_dir), model_dir=str(out), seed=0, eval_batch_size=8, warmup_proportion=0.0)
    if kind == "tagging":
        return FinetuneOptions(task="conll2003", data_dir=str(data), seq_length=32, batch_size=8, epochs=5,
                               learning_rate=2e-3, max_train_examples=32, max_eval_examples=16, **common)
    if kind == "span_qa":
        from kbert.tasks.span_qa.task import SquadOptions

        squad = str(pathlib.Path(data) / "dev-v1.1.json")
        return FinetuneOptions(task="squad/v1.1", train_file=squad, eval_file=squad, seq_length=64, batch_size=16,
                               epochs=5, learning_rate=2e-3, max_train_examples=24, max_eval_examples=6,
                               task_options=SquadOptions(train_articles=":36", eval_articles="36:", doc_stride=32,
                                                         max_query_length=16), **common)
    if kind == "multiple_choice":
        return FinetuneOptions(task="swag", data_dir=str(data), seq_length=32, batch_size=8, epochs=5,
                               learning_rate=3e-3, **common)
    raise SystemExit(f"unknown task kind {kind!r}")


def task_inputs(kind, data):
    """The raw inputs both backends answer: a dict of lists."""
    data = pathlib.Path(data)
    if kind == "tagging":
        from kbert.data.conll import read_conll

        sentences = read_conll(data / "valid.txt").examples[:TAG_SENTENCES]
        return {"text": [" ".join(s["words"]) for s in sentences]}
    if kind == "span_qa":
        from kbert.data.squad import read_squad
        from kbert.tasks.span_qa.task import select_articles

        path = data / "dev-v1.1.json"
        examples = select_articles(read_squad(path).examples, "36:", path)[:SQUAD_QUESTIONS]
        return {"question": [e["question"] for e in examples], "context": [e["context"] for e in examples]}
    return {"context": list(SWAG_CONTEXTS), "choices": [list(e) for e in SWAG_ENDINGS]}


def jax_answers(kind, model, inputs):
    """(answers from raw text, {input ids..., outputs...} numpy) of a model under the current backend."""
    import numpy as np

    if kind == "tagging":
        answers = model.predict_entities(inputs["text"])
        ids, _, _ = model.features(model.pieces(texts=inputs["text"]))
        ids = {k: v.numpy() for k, v in ids.items()}
        logits = model.predict_ids(ids)
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return answers, {**ids, "token_probabilities": e / e.sum(axis=-1, keepdims=True)}
    if kind == "span_qa":
        predictions = model.answer(inputs["question"], inputs["context"])
        answers = [{"text": p.text, "start": p.start_char, "end": p.end_char, "probability": p.probability}
                   for p in predictions]
        ids, _ = model.window_arrays(model.windows(inputs["question"], inputs["context"]))
        return answers, {**ids, **model.predict_ids(ids)}
    logits = model.predict_logits({"text_a": np.array(inputs["context"], dtype=object),
                                   "choices": np.array(inputs["choices"], dtype=object)})
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return [], {"probabilities": e / e.sum(axis=-1, keepdims=True)}


def served_answers(kind, served, inputs, ids):
    """The same from a TensorFlow export: serving_default on the raw inputs, serving_ids on ``ids``."""
    import numpy as np
    import tensorflow as tf

    out = {k: v.numpy() for k, v in served.signatures["serving_default"](
        **{k: tf.constant(v) for k, v in inputs.items()}).items()}
    by_ids = {}
    if kind != "multiple_choice":
        by_ids = {k: v.numpy() for k, v in served.signatures["serving_ids"](
            **{k: tf.constant(ids[k]) for k in ("input_word_ids", "input_mask", "input_type_ids")}).items()}
    if kind == "tagging":
        answers = []
        for i, text in enumerate(inputs["text"]):
            n, m = int(out["num_words"][i]), int(out["num_entities"][i])
            words = [{"text": text[int(s):int(e)], "start": int(s), "end": int(e), "tag": t.decode()}
                     for s, e, t in zip(out["word_start"][i][:n], out["word_end"][i][:n], out["tags"][i][:n])]
            entities = [{"type": out["entity_type"][i][j].decode(), "text": out["entity_text"][i][j].decode(),
                         "start": int(out["entity_start"][i][j]), "end": int(out["entity_end"][i][j])}
                        for j in range(m)]
            answers.append({"words": words, "entities": entities})
        return answers, {"token_probabilities": by_ids["token_probabilities"]}
    if kind == "span_qa":
        answers = [{"text": t.decode(), "start": int(s), "end": int(e), "probability": float(p)}
                   for t, s, e, p in zip(out["answer_text"], out["answer_start"], out["answer_end"], out["score"])]
        return answers, {"start_logits": by_ids["start_logits"], "end_logits": by_ids["end_logits"]}
    return [], {"probabilities": out["probabilities"]}


def main(job, model_dir, out, *args):
    import numpy as np

    if job == "task-served":
        import json

        import tensorflow as tf

        from kbert.export.task import export_task

        out = pathlib.Path(out)
        out.mkdir(parents=True, exist_ok=True)
        for kind, data in (arg.split("=", 1) for arg in args):
            trained = pathlib.Path(model_dir) / kind
            served = tf.saved_model.load(str(export_task(trained, out / f"{kind}.savedmodel", warmup=False)))
            ids = dict(np.load(trained / "jax_ids.npz"))
            answers, outputs = served_answers(kind, served, task_inputs(kind, data), ids)
            (out / f"{kind}.json").write_text(json.dumps(answers, ensure_ascii=False), encoding="utf-8")
            np.savez(out / f"{kind}.npz", **outputs)
        return

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
        # The same for document-level training of windows: a batch of long texts, their windows pooled.
        model = classifier(model_dir, long_documents="windows", doc_stride=8)
        set_head(model)
        model.compile(create_optimizer(1e-3, 10, 0, weight_decay=0.01))
        before = weights(model)
        model.fit(document_step_batches(model), epochs=1, verbose=0)
        after = weights(model)
        moved = max(float(np.max(np.abs(after[k] - before[k]))) for k in after)
        np.savez(pathlib.Path(out).with_name(pathlib.Path(out).stem + "-documents.npz"), moved=moved, **after)
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
    elif job == "task-finetune":
        import json

        from kbert.tasks.core.base import load_task_model
        from kbert.training.finetune import finetune

        for kind, data in (arg.split("=", 1) for arg in args):
            trained = pathlib.Path(out) / kind
            results = finetune(task_options(kind, model_dir, trained, data), progress_bar=False,
                               log=lambda *a, **k: None)
            model = load_task_model(trained)
            answers, outputs = jax_answers(kind, model, task_inputs(kind, data))
            (trained / "jax_answers.json").write_text(
                json.dumps({"loss": results["train_loss"], "best": results["best"], "backend": results.get("backend"),
                            "answers": answers}, ensure_ascii=False), encoding="utf-8")
            np.savez(trained / "jax_ids.npz", **outputs)
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
    from kbert.cli_startup import decline_optional_imports

    decline_optional_imports()  # starts as a kbert command does (none of TF's optional integrations is used)
    main(*sys.argv[1:])
