"""The shared harness of ``python -m kbert.bench ...``.

* options every model bench takes (``add_model_args``) and the cases they describe;
* thread settings, applied before TensorFlow starts (``configure_threads``);
* runners: a callable timed in this process (``InProcess``) or a candidate living in a child
  process (``SubprocessPeer``, used for torch / transformers, which must not share this process's
  thread pools);
* ``interleave``: every round runs every candidate (the matmul peaks first, then the models in a
  rotated order), so load on a shared machine hits them all alike; statistics are over all timed
  iterations;
* matmul peaks measured in the same rounds, FLOP counts, and the table, whose last line is the
  worst ratio kbert / fastest peer.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

from kbert.errors import Error


class PeerError(Error, RuntimeError):
    """A peer process that could not start or answer (its message says why)."""


def default_shared_data() -> pathlib.Path | None:
    """../shared/data next to the repository (KBERT_SHARED_DATA overrides), or None."""
    from kbert.data.shared import shared_data_dir

    return shared_data_dir()


MODEL_GARDEN_NOTE = (
    "n/a: tf-models-official 2.20 pins TensorFlow 2.20 and cannot be installed beside TF 2.21; give a "
    "Python that has it with --model-garden-python (see kbert/bench/mg_peer.py)"
)
MODEL_GARDEN_PYTHON_ENV = "KBERT_BENCH_MODEL_GARDEN_PYTHON"
PEERS = ("keras-hub", "hf", "model-garden", "ort")


# -- options and cases ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Case:
    config: str
    batch_size: int
    seq_length: int = 128
    precision: str = "float32"

    @property
    def label(self):
        from kbert.config import PRESETS

        layers, hidden, _ = PRESETS[self.config]
        return (f"BERT-{self.config.capitalize()} (L{layers}/H{hidden}) batch {self.batch_size} "
                f"seq {self.seq_length} {self.precision}")


def add_model_args(parser: argparse.ArgumentParser, *, config="small", batch_size=32, suites=None):
    parser.add_argument("--config", default=config, help="BERT size preset: tiny, mini, small, medium, base, large")
    parser.add_argument("--batch-size", type=int, default=batch_size)
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--precision", default="float32", choices=("float32", "mixed_bfloat16"))
    parser.add_argument("--case", action="append", default=[], metavar="CONFIG:BATCH[:PRECISION]",
                        help="a case to run (repeatable); replaces --config/--batch-size/--precision")
    if suites:
        parser.add_argument("--suite", choices=sorted(suites),
                            help="a named list of cases: " + "; ".join(
                                f"{k} = {', '.join(v)}" for k, v in sorted(suites.items())))
    parser.add_argument("--vs", default="keras-hub,hf,model-garden,ort",
                        help="peers, comma-separated: keras-hub (always available), hf (transformers + "
                             "torch in a subprocess, when installed), model-garden (tf-models-official in "
                             "a subprocess of --model-garden-python), ort (ONNX Runtime, plain and "
                             "transformer-optimized, in a subprocess; encoder bench only); 'none' for kbert alone")
    parser.add_argument("--model-garden-python", default=os.environ.get(MODEL_GARDEN_PYTHON_ENV),
                        help="a Python with tf-models-official 2.20 and TensorFlow 2.20 installed (default: "
                             f"${MODEL_GARDEN_PYTHON_ENV}); without it the Model Garden rows are skipped")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (each runs every candidate)")
    parser.add_argument("--reps", type=int, default=1, help="timed iterations per candidate per round")
    parser.add_argument("--warmup", type=int, default=2, help="untimed iterations per candidate after building")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="intra-op threads for TensorFlow and torch (default: all cores)")
    parser.add_argument("--xla", default="auto", choices=("auto", "on", "off", "both"),
                        help="XLA for kbert (auto: kbert's default, off) and for keras-hub (auto: both, "
                             "the faster counts as the peer)")
    parser.add_argument("--hf-compile", default="auto", choices=("auto", "on", "off"),
                        help="torch.compile for transformers (auto/on: eager and compiled rows)")
    parser.add_argument("--no-peak", action="store_true", help="skip the matmul-peak rows")


def parse_cases(args, suites=None) -> list[Case]:
    specs = list(args.case)
    if getattr(args, "suite", None):
        specs += suites[args.suite]
    if not specs:
        return [Case(args.config, args.batch_size, args.seq_length, args.precision)]
    cases = []
    for spec in specs:
        parts = spec.split(":")
        if not 2 <= len(parts) <= 3:
            raise SystemExit(f"error: --case {spec!r}: expected CONFIG:BATCH[:PRECISION]")
        precision = parts[2] if len(parts) == 3 else args.precision
        if precision in ("bf16", "bfloat16"):
            precision = "mixed_bfloat16"
        cases.append(Case(parts[0], int(parts[1]), args.seq_length, precision))
    return cases


def peers(args) -> set[str]:
    names = {p.strip() for p in args.vs.split(",") if p.strip() and p.strip() != "none"}
    unknown = names - set(PEERS)
    if unknown:
        raise SystemExit(f"error: --vs {args.vs!r}: unknown peer(s) {', '.join(sorted(unknown))}; "
                         f"expected {', '.join(PEERS)} or none")
    return names


# -- threads and environment ---------------------------------------------------------------------
def configure_threads(threads: int) -> None:
    """TensorFlow: ``threads`` intra-op threads, 1 inter-op thread (BERT's graph is a chain: a
    second inter-op thread only competes for the same cores). Must run before TF executes anything.
    """
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # already initialised (e.g. in a test process): keep what it has
        pass


def machine_line(threads) -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
        model = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                      if line.startswith("model name")), cpu)
        flags = next((line.split(":", 1)[1].split() for line in info.splitlines()
                      if line.startswith("flags")), [])
        isa = [f for f in ("avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_tile") if f in flags]
        cpu = f"{model} [{' '.join(isa) or 'no AVX-512'}]"
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default (on)")
    return (f"machine: {os.cpu_count()} CPUs, {cpu}; threads {threads}; "
            f"TF_ENABLE_ONEDNN_OPTS={onednn}; load average {load}")


def versions(*names) -> str:
    from importlib import metadata

    out = []
    for name in names:
        try:
            out.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(f"{name} (not installed)")
    return ", ".join(out)


def have(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


# -- FLOPs ---------------------------------------------------------------------------------------
def encoder_flops(config, seq_length) -> float:
    """Multiply-add FLOPs (x2) of the encoder's matmuls for one sequence: projections, attention, pooler."""
    h, i, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    per_layer = 2 * seq_length * (4 * h * h + 2 * h * i) + 2 * 2 * seq_length * seq_length * h
    return layers * per_layer + 2 * h * h


def pretraining_flops(config, seq_length, predictions) -> float:
    """Forward + backward (3x forward) FLOPs of one pre-training example: encoder, MLM head at
    ``predictions`` positions (transform + tied decoder), NSP."""
    h, v = config.hidden_size, config.vocab_size
    head = 2 * predictions * (h * h + h * v) + 2 * h * 2
    return 3 * (encoder_flops(config, seq_length) + head)


# -- runners -------------------------------------------------------------------------------------
class Runner:
    """One timed candidate. ``run(n)`` returns the seconds of n iterations, each blocking."""

    name = "?"
    framework = "tf"  # which matmul peak it is measured against
    group = "peer"    # "kbert", "peer", or "peak"
    items = 1         # sequences (or examples) per iteration
    flops = 0.0       # FLOPs per iteration
    unit = "seq"

    def run(self, n: int) -> list[float]:
        raise NotImplementedError

    def close(self):
        pass


class InProcess(Runner):
    def __init__(self, name, fn, *, group="peer", items=1, flops=0.0, framework="tf", unit="seq"):
        self.name, self.fn, self.group, self.items, self.flops = name, fn, group, items, flops
        self.framework, self.unit = framework, unit

    def run(self, n):
        times = []
        for _ in range(n):
            start = time.perf_counter()
            self.fn()
            times.append(time.perf_counter() - start)
        return times


def tf_matmul_peak(precision: str, size: int = 2048) -> InProcess:
    """A ``size``^3 matmul in TensorFlow (float32, or bfloat16 for mixed_bfloat16), no XLA."""
    import tensorflow as tf

    dtype = tf.bfloat16 if precision == "mixed_bfloat16" else tf.float32
    a = tf.cast(tf.random.stateless_normal((size, size), seed=(1, 2)), dtype)
    b = tf.cast(tf.random.stateless_normal((size, size), seed=(3, 4)), dtype)
    fn = tf.function(lambda a, b: tf.reduce_sum(tf.cast(tf.matmul(a, b)[0, :8], tf.float32)))
    fn(a, b).numpy()
    name = f"matmul peak TF {dtype.name} {size}^3"
    return InProcess(name, lambda: fn(a, b).numpy(), group="peak", flops=2.0 * size**3,
                     framework=f"tf-{precision}")


class SubprocessPeer:
    """A child process (``python -m MODULE SPEC_JSON``) hosting several timed candidates.

    Protocol (JSON lines): the child prints ``{"ready": [{name, items, flops, framework}...],
    "versions": "..."}`` once built and warmed up (or ``{"error": "..."}``), then answers
    ``{"op": "run", "name": N, "n": k}`` with ``{"times": [...]}`` (seconds, timed in the child) and
    ``{"op": "quit"}`` by exiting. While the child runs, this process waits on the pipe, so the two
    never compete for the cores.
    """

    def __init__(self, module: str, spec: dict, threads: int, timeout: float = 3600, python: str | None = None):
        env = dict(os.environ)
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
                   TOKENIZERS_PARALLELISM="false", TF_CPP_MIN_LOG_LEVEL="3")
        # The child must import this kbert (the one running the bench), whatever is installed.
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
        self.proc = subprocess.Popen(
            [python or sys.executable, "-m", module, json.dumps(spec)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=None, text=True, env=env, bufsize=1)
        self.timeout = timeout
        hello = self._read()
        if "error" in hello:
            self.close()
            raise PeerError(hello["error"])
        self.versions = hello.get("versions", "")
        self.runners = [_ChildRunner(self, c) for c in hello["ready"]]

    def _read(self):
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise PeerError(f"peer process exited with code {self.proc.wait()}")
            line = line.strip()
            if line.startswith("{"):
                return json.loads(line)
            print(f"  [peer] {line}", file=sys.stderr)  # stray output of the libraries

    def request(self, **message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        reply = self._read()
        if "error" in reply:
            raise PeerError(reply["error"])
        return reply

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def model_garden_peer(args, peers, notes: list, **spec):
    """The Model Garden child (kbert.bench.mg_peer) when asked for and a Python for it is given,
    else None with the reason in ``notes``."""
    if "model-garden" not in peers:
        return None
    python = getattr(args, "model_garden_python", None)
    if not python:
        notes.append(f"Model Garden: {MODEL_GARDEN_NOTE}")
        return None
    if not os.path.exists(python):
        raise SystemExit(f"error: --model-garden-python {python!r} does not exist")
    xla = {"auto": [False, True], "both": [False, True], "on": [True], "off": [False]}[args.xla]
    print("  building the Model Garden peer ...", file=sys.stderr, flush=True)
    try:
        return SubprocessPeer("kbert.bench.mg_peer", dict(spec, threads=args.threads, warmup=args.warmup, xla=xla),
                              args.threads, python=python)
    except PeerError as e:
        # The usual cause is a Python without tf-models-official: one line naming it, not a traceback.
        raise SystemExit(f"error: the Model Garden peer could not start in --model-garden-python {python!r} "
                         f"({e}); that Python needs tf-models-official (see kbert/bench/mg_peer.py)") from None


class _ChildRunner(Runner):
    def __init__(self, peer, info):
        self.peer = peer
        self.name = info["name"]
        self.items = info.get("items", 1)
        self.flops = info.get("flops", 0.0)
        self.framework = info.get("framework", "torch")
        self.group = info.get("group", "peer")
        self.unit = info.get("unit", "seq")
        self.concurrency = info.get("concurrency", 0)

    def run(self, n):
        return self.peer.request(op="run", name=self.name, n=n)["times"]


def warm_up_rows(fns: dict, spec: dict, items: int, framework: str) -> list:
    """Runs each of a child's candidates ``spec["warmup"]`` times (at least once) and returns
    their info dicts for the ``ready`` message."""
    infos = []
    for name, fn in fns.items():
        for _ in range(max(1, int(spec.get("warmup", 2)))):
            fn()
        infos.append(dict(name=name, items=items, flops=float(spec.get("flops", 0.0)) * items,
                          framework=framework, group="peer"))
    return infos


def child_main(build):
    """The child side of SubprocessPeer: ``build(spec)`` -> ([info dicts], {name: fn}, versions)."""
    spec = json.loads(sys.argv[1])
    out = sys.stdout
    try:
        infos, fns, vers = build(spec)
    except Exception as e:  # noqa: BLE001 - reported to the parent, which prints it
        out.write(json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n")
        out.flush()
        return 1
    out.write(json.dumps({"ready": infos, "versions": vers}) + "\n")
    out.flush()
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("op") == "quit":
            break
        try:
            fn = fns[message["name"]]
            times = []
            if hasattr(fn, "run_many"):  # several requests in flight (kbert.bench.concurrency)
                times = fn.run_many(int(message["n"]))
            for _ in range(0 if times else int(message["n"])):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            out.write(json.dumps({"times": times}) + "\n")
        except Exception as e:  # noqa: BLE001
            out.write(json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n")
        out.flush()
    return 0


# -- interleaved timing --------------------------------------------------------------------------
def warm_up(runners, n):
    for runner in runners:
        if n > 0 and not isinstance(runner, _ChildRunner):  # children warm up themselves
            runner.run(n)


def interleave(runners, rounds: int, reps: int = 1, pause: float = 0.02, progress=True):
    """{name: [seconds per iteration]}: each round runs peaks first, then the others rotated."""
    peaks = [r for r in runners if r.group == "peak"]
    others = [r for r in runners if r.group != "peak"]
    times = {r.name: [] for r in runners}
    for i in range(rounds):
        k = i % len(others) if others else 0
        for runner in peaks + others[k:] + others[:k]:
            times[runner.name].extend(runner.run(reps))
            time.sleep(pause)  # let spinning worker threads of the previous candidate park
        if progress:
            print(f"  round {i + 1}/{rounds} done", file=sys.stderr, flush=True)
    return times


# -- table ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class Row:
    name: str
    group: str
    median: float
    low: float
    high: float
    rate: float
    gflops: float
    peak_pct: float | None
    unit: str


def summarize(runners, times) -> list[Row]:
    peak = {}
    for r in runners:
        if r.group == "peak":
            peak[r.framework] = r.flops / statistics.median(times[r.name]) / 1e9
    rows = []
    for r in runners:
        t = times[r.name]
        med = statistics.median(t)
        gflops = r.flops / med / 1e9 if r.flops else 0.0
        ref = peak.get(r.framework)
        rows.append(Row(r.name, r.group, med, min(t), max(t), r.items / med, gflops,
                        100.0 * gflops / ref if ref and r.group != "peak" and gflops else None, r.unit))
    return rows


def best_ratio(rows):
    """(kbert rate / fastest peer rate, kbert row, peer row), kbert = its fastest row."""
    kbert = [r for r in rows if r.group == "kbert"]
    others = [r for r in rows if r.group == "peer"]
    if not kbert or not others:
        return None
    k = max(kbert, key=lambda r: r.rate)
    p = max(others, key=lambda r: r.rate)
    return k.rate / p.rate, k, p


def print_table(title, rows, notes=(), file=None):
    file = file or sys.stdout
    unit = rows[0].unit if rows else "seq"
    name_w = max([len(r.name) for r in rows] + [9]) + 2
    print(f"\n== {title}", file=file)
    print(f"{'candidate':<{name_w}}{'median ms':>11}{'min–max ms':>19}{unit + '/s':>11}"
          f"{'GFLOP/s':>10}{'% peak':>8}", file=file)
    for r in rows:
        rate = "" if r.group == "peak" else _fmt_rate(r.rate)
        pct = f"{r.peak_pct:.0f}%" if r.peak_pct is not None else ""
        gf = f"{r.gflops:,.0f}" if r.gflops else ""
        spread = f"{r.low * 1e3:,.1f}–{r.high * 1e3:,.1f}"
        print(f"{r.name:<{name_w}}{r.median * 1e3:>11,.1f}{spread:>19}{rate:>11}{gf:>10}{pct:>8}", file=file)
    for note in notes:
        print(f"{note}", file=file)
    ratio = best_ratio(rows)
    if ratio:
        value, k, p = ratio
        print(f"ratio kbert / fastest peer: {value:.2f}  ({k.name} vs {p.name})", file=file)
    file.flush()
    return ratio


def _fmt_rate(rate):
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:,.1f}"


def print_worst(results, file=None):
    """The last line of every bench: the worst kbert / fastest-peer ratio over its cases."""
    file = file or sys.stdout
    results = [(title, r) for title, r in results if r]
    if not results:
        print("worst ratio kbert / fastest peer: n/a (no peer measured)", file=file)
        return
    title, (value, k, p) = min(results, key=lambda x: x[1][0])
    print(f"worst ratio kbert / fastest peer: {value:.2f}  ({title}: {k.name} vs {p.name})", file=file)


class TracedCalls:
    """The attention calls traced while it observes them (``kbert.layers.accel.observe_calls``):
    ``counts`` is ``{"train:cudnn+dropout": n, "infer:plain": m, ...}``."""

    def __init__(self):
        self.counts: dict = {}

    def __call__(self, kernel: str, training: bool, dropout_applied: bool) -> None:
        key = f"{'train' if training else 'infer'}:{kernel}{'+dropout' if dropout_applied else ''}"
        self.counts[key] = self.counts.get(key, 0) + 1

    def training(self) -> dict:
        """The training calls, by kernel (``{"cudnn+dropout": n, ...}``)."""
        return {k[len("train:"):]: n for k, n in self.counts.items() if k.startswith("train:")}
