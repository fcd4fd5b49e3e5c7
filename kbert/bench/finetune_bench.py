"""python -m kbert.bench finetune: fine-tune the same weights on the same data in kbert and its peers.

    python -m kbert.bench finetune --task glue/sst2 [--train-examples 4000 --epochs 1 ...]

Every contender starts from the same Hugging Face checkpoint (default: all-MiniLM-L6-v2 from the
shared data; kbert converts it with kbert.convert.hf), trains on the same random subset of the
training set (same seed) with the same hyper-parameters (AdamW, weight decay 0.01 except biases
and LayerNorm, linear warmup over 10% of the steps then linear decay, gradient norm clipped to 1,
batch size, epochs, at most --seq-length tokens, dropout 0.1 on the classifier input) and is
evaluated on the whole dev set. Each runs in its own process, one after the other:

  kbert         python -m kbert.finetune (in-graph tokenization, per-batch trimming; modes:
                bucketed = batches grouped by length (default), trimmed = random batches cut to
                their longest row, fixed = always --seq-length positions)
  transformers  BertForSequenceClassification (PyTorch), fast tokenizer, batches padded to their
                longest row (DataCollatorWithPadding's rule), --hf-group-by-length for the
                Trainer's length-grouped sampler; only when torch and transformers import
  keras-hub     BertTextClassifier on BertBackbone.from_preset(the same folder), its own
                preprocessor (fixed --seq-length, as keras-hub pads)

It prints dev accuracy and training examples/s (training loop wall time, tokenization included,
evaluation excluded) per contender and writes them to OUT/bench_results.json.

Peers are run as ``python <this file> --peer NAME SPEC.json``, a script that imports neither
kbert nor TensorFlow at module level, so the PyTorch peer does not load TensorFlow.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

MODES = {"bucketed": [], "trimmed": ["--no-bucketing"], "fixed": ["--no-bucketing", "--fixed-length"]}


def _shared_data() -> pathlib.Path:
    """../shared/data next to the repository (KBERT_SHARED_DATA overrides), as the tests find it."""
    from kbert.data.shared import REPO, shared_data_dir

    return shared_data_dir() or REPO.parent / "shared" / "data"


DEFAULT_HF_DIR = _shared_data() / "weights" / "all-MiniLM-L6-v2"


def parse_args(argv):
    from kbert.cli_support import add_arguments
    from kbert.tasks.core.options import FinetuneOptions

    from kbert.cli_support import ArgumentParser, prog


    p = ArgumentParser(prog=f"{prog('bench')} finetune", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    # The training flags are kbert.finetune's (one definition: FinetuneOptions), with the bench's defaults.
    add_arguments(p, FinetuneOptions, only=("task", "data_dir", "init"), defaults={"task": "glue/sst2", "init": None},
                  helps={"task": "a single-text GLUE classification task",
                         "data_dir": "the task's GLUE folder (default: the shared data's)",
                         "init": "kbert model directory of the same weights (default: converted from --hf-dir)"})
    p.add_argument("--hf-dir", default=os.environ.get("KBERT_BENCH_HF_DIR", str(DEFAULT_HF_DIR)),
                   help="Hugging Face checkpoint folder (config.json, model.safetensors, vocab.txt)")
    p.add_argument("--out", default="runs/bench_finetune")
    p.add_argument("--train-examples", type=int, default=4000)
    add_arguments(p, FinetuneOptions, only=("epochs", "batch_size", "learning_rate", "seq_length", "seed"),
                  defaults={"epochs": 1, "seq_length": 128})
    p.add_argument("--peers", default="auto",
                   help="comma-separated: kbert, transformers, keras-hub (auto: kbert and transformers when "
                        "installed, else keras-hub)")
    p.add_argument("--kbert-modes", default="bucketed", help=f"comma-separated, of {list(MODES)}")
    p.add_argument("--hf-group-by-length", action="store_true", help="length-grouped batches for transformers")
    return p.parse_args(argv)


def _shared_glue_dir(task):
    from kbert.data.glue import get_task

    return _shared_data() / "glue" / get_task(task).directory


def _peers(spec: str) -> list:
    if spec != "auto":
        peers = [p.strip() for p in spec.split(",") if p.strip()]
        unknown = set(peers) - {"kbert", "transformers", "keras-hub"}
        if unknown:
            raise SystemExit(f"error: unknown peers {sorted(unknown)}; expected kbert, transformers, keras-hub")
        return peers
    import importlib.util

    has_hf = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))
    return ["kbert", "transformers" if has_hf else "keras-hub"]


def _write_subset(args, out: pathlib.Path) -> pathlib.Path:
    """The training subset and the dev set as JSON, for every contender (kbert reads the same rows
    through --max-train-examples with the same seed: kbert.tasks.core.task_type.subsample)."""
    from kbert.data.glue import read_glue
    from kbert.tasks.core.task_type import subsample

    data_dir = args.data_dir or _shared_glue_dir(args.task)
    train = read_glue(args.task.split("/")[-1], "train", data_dir)
    dev = read_glue(args.task.split("/")[-1], "dev", data_dir)
    if train.label_names is None or any(e["text_b"] is not None for e in train.examples):
        raise SystemExit(f"error: the finetune bench takes a single-text classification task, not {args.task}")
    rows, _ = subsample(train.examples, args.train_examples, args.seed)
    data = {"train": [[e["text_a"], e["label"]] for e in rows], "dev": [[e["text_a"], e["label"]] for e in dev.examples],
            "num_labels": len(train.label_names)}
    path = out / "data.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _run_kbert(args, init, out, mode) -> dict:
    model_dir = out / f"kbert_{mode}"
    command = [sys.executable, "-m", "kbert.finetune", "--task", args.task,
               "--data-dir", str(args.data_dir or _shared_glue_dir(args.task)), "--init", str(init),
               "--model-dir", str(model_dir), "--max-train-examples", str(args.train_examples),
               "--epochs", str(args.epochs), "--batch-size", str(args.batch_size),
               "--learning-rate", str(args.learning_rate), "--seq-length", str(args.seq_length),
               "--seed", str(args.seed), "--quiet", *MODES[mode]]
    _call(command, out / f"kbert_{mode}.log")
    results = json.loads((model_dir / "eval_results.json").read_text())
    # Training time includes the tokenizer pass that measures lengths for bucketing.
    return {"name": f"kbert ({mode})", "dev_accuracy": results["history"][-1]["accuracy"],
            "train_seconds": results["train_seconds"] + results["prepare_seconds"],
            "train_cpu_seconds": results["train_cpu_seconds"] + results["prepare_cpu_seconds"],
            "train_examples": results["train_examples"] * args.epochs}


def _run_peer(args, name, data_path, out) -> dict:
    spec = {"data": str(data_path), "hf_dir": str(args.hf_dir), "epochs": args.epochs, "batch_size": args.batch_size,
            "learning_rate": args.learning_rate, "seq_length": args.seq_length, "seed": args.seed,
            "group_by_length": args.hf_group_by_length, "result": str(out / f"{name}.json")}
    spec_path = out / f"{name}_spec.json"
    spec_path.write_text(json.dumps(spec))
    _call([sys.executable, str(pathlib.Path(__file__).resolve()), "--peer", name, str(spec_path)], out / f"{name}.log")
    return json.loads((out / f"{name}.json").read_text())


def _call(command, log_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    with open(log_path, "w") as log:
        result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    if result.returncode:
        tail = pathlib.Path(log_path).read_text()[-3000:]
        raise SystemExit(f"error: {' '.join(command[:4])} ... failed (exit {result.returncode}); log {log_path}:\n{tail}")


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    peers = _peers(args.peers)
    modes = [m.strip() for m in args.kbert_modes.split(",") if m.strip()]
    if set(modes) - set(MODES):
        raise SystemExit(f"error: unknown --kbert-modes {sorted(set(modes) - set(MODES))}; expected {list(MODES)}")
    data_path = _write_subset(args, out)
    init = args.init
    if "kbert" in peers and init is None:
        init = out / "kbert_init"
        if not (init / "encoder.weights.h5").exists():
            from kbert.convert import hf

            hf.convert(args.hf_dir, init)
    print(f"{args.task}: {args.train_examples} training examples x {args.epochs} epoch(s), batch {args.batch_size}, "
          f"lr {args.learning_rate}, seq_length <= {args.seq_length}; weights {args.hf_dir}", flush=True)
    rows = []
    for peer in peers:
        for mode in (modes if peer == "kbert" else [None]):
            label = f"kbert ({mode})" if mode else peer
            print(f"  running {label} ...", flush=True)
            start = time.time()
            row = _run_kbert(args, init, out, mode) if mode else _run_peer(args, peer, data_path, out)
            row["examples_per_second"] = round(row["train_examples"] / row["train_seconds"], 1)
            row["examples_per_cpu_second"] = round(row["train_examples"] / row["train_cpu_seconds"], 1)
            row["wall_seconds"] = round(time.time() - start, 1)
            rows.append(row)
            print(f"  {row['name']:<28} dev accuracy {row['dev_accuracy']:.4f}   "
                  f"{row['examples_per_second']:7.1f} train examples/s", flush=True)
    print(f"\n{'contender':<44}{'dev accuracy':>14}{'examples/s':>12}{'per CPU-s':>11}")
    for row in rows:
        print(f"{row['name']:<44}{row['dev_accuracy']:>14.4f}{row['examples_per_second']:>12.1f}"
              f"{row['examples_per_cpu_second']:>11.1f}")
    (out / "bench_results.json").write_text(json.dumps({"args": vars(args), "results": rows}, indent=2) + "\n")
    return 0


# ------------------------------------------------------------------------------------- peers


def _peer_data(spec):
    data = json.loads(pathlib.Path(spec["data"]).read_text(encoding="utf-8"))
    return data["train"], data["dev"], data["num_labels"]


def _transformers_peer(spec) -> dict:
    import numpy as np
    import torch
    import transformers

    torch.manual_seed(spec["seed"])
    train, dev, num_labels = _peer_data(spec)
    tokenizer = transformers.AutoTokenizer.from_pretrained(spec["hf_dir"])
    model = transformers.AutoModelForSequenceClassification.from_pretrained(spec["hf_dir"], num_labels=num_labels)
    batch_size, epochs = spec["batch_size"], spec["epochs"]
    steps = -(-len(train) // batch_size) * epochs
    no_decay = ("bias", "LayerNorm.weight")
    groups = [{"params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)], "weight_decay": 0.01},
              {"params": [p for n, p in model.named_parameters() if n.endswith(no_decay)], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=spec["learning_rate"], betas=(0.9, 0.999), eps=1e-6)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, int(0.1 * steps), steps)
    rng = np.random.default_rng(spec["seed"])

    def batches(rows, shuffle):
        order = rng.permutation(len(rows)) if shuffle else np.arange(len(rows))
        chunks = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
        if shuffle and spec["group_by_length"]:  # the Trainer's LengthGroupedSampler idea: sort mega-batches
            lengths = np.array([len(r[0]) for r in rows])
            mega = [order[i:i + 50 * batch_size] for i in range(0, len(order), 50 * batch_size)]
            order = np.concatenate([m[np.argsort(-lengths[m], kind="stable")] for m in mega])
            chunks = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
            chunks = [chunks[i] for i in rng.permutation(len(chunks))]
        for chunk in chunks:
            encoded = tokenizer([rows[i][0] for i in chunk], truncation=True, max_length=spec["seq_length"],
                                padding="longest", return_tensors="pt")
            yield encoded, torch.tensor([rows[i][1] for i in chunk])

    start, cpu_start = time.time(), time.process_time()
    model.train()
    for _ in range(epochs):
        for encoded, labels in batches(train, True):
            loss = model(**encoded, labels=labels).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
    train_seconds, train_cpu_seconds = time.time() - start, time.process_time() - cpu_start
    model.eval()
    correct = 0
    with torch.inference_mode():
        for encoded, labels in batches(dev, False):
            correct += int((model(**encoded).logits.argmax(-1) == labels).sum())
    name = f"transformers {transformers.__version__} (torch {torch.__version__}"
    name += ", length-grouped)" if spec["group_by_length"] else ")"
    return {"name": name, "dev_accuracy": correct / len(dev), "train_seconds": round(train_seconds, 1),
            "train_cpu_seconds": round(train_cpu_seconds, 1), "train_examples": len(train) * epochs}


def _keras_hub_peer(spec) -> dict:
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf

    from kbert.training.optimization import create_optimizer

    keras.utils.set_random_seed(spec["seed"])
    train, dev, num_labels = _peer_data(spec)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
        keras_hub.models.BertTokenizer.from_preset(spec["hf_dir"]), sequence_length=spec["seq_length"])
    model = keras_hub.models.BertTextClassifier(keras_hub.models.BertBackbone.from_preset(spec["hf_dir"]),
                                                num_classes=num_labels, preprocessor=preprocessor, dropout=0.1)
    batch_size, epochs = spec["batch_size"], spec["epochs"]
    steps = -(-len(train) // batch_size) * epochs
    model.compile(optimizer=create_optimizer(spec["learning_rate"], steps, int(0.1 * steps)),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    texts = tf.constant([r[0] for r in train])
    labels = np.array([r[1] for r in train])
    ds = tf.data.Dataset.from_tensor_slices((texts, labels)).shuffle(len(train), seed=spec["seed"]).batch(batch_size)
    start, cpu_start = time.time(), time.process_time()
    model.fit(ds, epochs=epochs, verbose=2)
    train_seconds, train_cpu_seconds = time.time() - start, time.process_time() - cpu_start
    logits = model.predict(tf.constant([r[0] for r in dev]), batch_size=64, verbose=0)
    accuracy = float(np.mean(logits.argmax(-1) == np.array([r[1] for r in dev])))
    return {"name": f"keras-hub {keras_hub.__version__}", "dev_accuracy": accuracy,
            "train_seconds": round(train_seconds, 1), "train_cpu_seconds": round(train_cpu_seconds, 1),
            "train_examples": len(train) * epochs}


def peer_main(argv):
    name, spec_path = argv
    spec = json.loads(pathlib.Path(spec_path).read_text())
    runner = {"transformers": _transformers_peer, "keras-hub": _keras_hub_peer}[name]
    result = runner(spec)
    pathlib.Path(spec["result"]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--peer":
        sys.exit(peer_main(sys.argv[2:]))
    sys.exit(main())
