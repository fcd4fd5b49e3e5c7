"""python -m kbert.bench {encoder,train,tokenize,pipeline,serve,finetune,pretrain} ...

Each benchmark lives in its own module of this package and exposes ``main(argv)``.
"""

import importlib
import sys

BENCHMARKS = ("encoder", "train", "tokenize", "pipeline", "serve", "finetune", "pretrain")


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in BENCHMARKS:
        print(__doc__.strip(), file=sys.stderr)
        print(f"\nchoose one of: {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    name = argv.pop(0)
    try:
        module = importlib.import_module(f"kbert.bench.{name}_bench")
    except ModuleNotFoundError as e:
        if e.name == f"kbert.bench.{name}_bench":
            print(f"benchmark {name!r} is not implemented yet", file=sys.stderr)
            return 2
        raise
    return module.main(argv)


if __name__ == "__main__":
    sys.exit(main())
