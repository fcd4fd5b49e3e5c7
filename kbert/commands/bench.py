"""usage: kbert bench {encoder,train,tokenize,pipeline,serve,finetune,pretrain,accelerator} [ARGS...]
(also python -m kbert.bench ...)

Each benchmark lives in its own module of this package and exposes ``main(argv)``;
``python -m kbert.bench NAME --help`` lists its arguments. --verbose (anywhere on the line) shows
TensorFlow's start-up messages, warnings and tracebacks.
"""

import importlib
import sys

BENCHMARKS = {
    "encoder": "inference and training step of the encoder: kbert vs keras-hub, transformers, Model Garden",
    "train": "the pre-training step (and --loss-curve): kbert vs peers",
    "tokenize": "tokenization + packing throughput vs keras-hub and Rust tokenizers",
    "pipeline": "the tf.data MLM+NSP input pipeline vs keras-hub's",
    "serve": "latency of an exported SavedModel (one request at a time, or N clients + batching) vs ONNX Runtime",
    "finetune": "fine-tuning throughput and accuracy vs transformers",
    "pretrain": "kbert vs keras-hub BertMaskedLM: steps/s and held-out MLM accuracy",
    "accelerator": "pre-training and SQuAD training steps on a GPU/TPU under JAX (no TensorFlow) vs transformers",
}


def usage() -> str:
    width = max(map(len, BENCHMARKS))
    return "\n".join([__doc__.strip(), "", "benchmarks:"]
                     + [f"  {name:<{width}}  {help_}" for name, help_ in BENCHMARKS.items()])


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if not argv or argv[0] not in BENCHMARKS:
        print(f"kbert bench: error: choose one of: {', '.join(BENCHMARKS)} (see kbert bench --help)", file=sys.stderr)
        return 1
    name = argv.pop(0)
    try:
        module = importlib.import_module(f"kbert.bench.{name}_bench")
    except ModuleNotFoundError as e:
        if e.name == f"kbert.bench.{name}_bench":
            print(f"kbert bench: error: benchmark {name!r} is not implemented yet", file=sys.stderr)
            return 1
        raise
    return module.main(argv)
