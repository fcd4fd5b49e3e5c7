#!/usr/bin/env bash
# One run of `python -m kbert.bench accelerator` on a machine with an NVIDIA GPU (H100/H200 class):
# kbert on Keras' JAX backend against transformers (torch), under 8 minutes, raw output under $OUT.
#
# Needs: python3 with jax[cuda12] (or cuda13), torch with CUDA, transformers, numpy, keras (with
# namex and optree); TensorFlow is neither needed nor imported. If keras is missing and .whl/
# holds its wheels (fetch_wheels.sh), they are installed into /tmp/site first.
#
#   bash docs/bench/accelerator/run_h100.sh [CASE ...]
#
# First the cuDNN attention probe (python -m kbert.bench.cudnn_probe, about 10 s: which forms of
# cuDNN's flash attention run on this GPU, each in its own process; $OUT/probe.jsonl). Then, with
# no CASE: the goal case (pretrain-large-128), pretrain-base-512 and squad-base-384, each kbert
# (attention auto, what the commands run: in training with attention dropout and padding that is
# the plain attention, see docs/accelerators.md) and transformers, with a top-15 device ops table
# per kbert line; then, while time is left, the levers on the goal case (rbg dropout bits, Triton
# GEMMs, both, and cuDNN without attention dropout, a departure from BERT recorded as such). Lines
# that the deadline (DEADLINE, default 400 s for the benchmark itself) leaves no time for are
# written as skipped; run the script again with the cases named (e.g. pretrain-base-128
# pretrain-large-512) for the rest.
# Every line is appended to $OUT/accelerator.jsonl as soon as it is measured.
#
# Dry run on any CPU (tiny model, one case; writes under runs/):
#   OUT=runs/bench/accelerator-dry bash docs/bench/accelerator/run_h100.sh --dry-run
set -u -o pipefail
cd "$(dirname "$0")/../../.."

DRY=0
if [ "${1:-}" = "--dry-run" ]; then DRY=1; shift; fi
OUT=${OUT:-runs/bench/accelerator-gpu}
DEADLINE=${DEADLINE:-400}
mkdir -p "$OUT"
start=$SECONDS

if ! python3 -c "import keras" >/dev/null 2>&1; then
  if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site
  else
    echo "run_h100.sh: error: keras is not installed (pip install keras, or put its wheels in .whl/: fetch_wheels.sh)" >&2
    exit 1
  fi
fi
TINY=()
if [ "$DRY" = 1 ]; then TINY=(--tiny); fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 USE_TF=0 TF_CPP_MIN_LOG_LEVEL=3

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  git log -1 --format='commit %H' 2>/dev/null || true
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv 2>&1 || true
  python3 - <<'PY'
import importlib.metadata as m, sys
print("python", sys.version.split()[0])
for name in ("keras", "jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin", "nvidia-cudnn-cu12",
             "nvidia-cudnn-cu13", "torch", "transformers", "numpy", "optree", "namex"):
    try:
        print(name, m.version(name))
    except m.PackageNotFoundError:
        pass
import importlib.util
print("tensorflow", "installed (not used)" if importlib.util.find_spec("tensorflow") else "not installed")
PY
  echo "command: bash docs/bench/accelerator/run_h100.sh $*"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

left() { echo $((DEADLINE - (SECONDS - start))); }
bench() { python3 -m kbert.bench accelerator "${TINY[@]}" --out "$OUT/accelerator.jsonl" --append \
            --profile-dir "$OUT/profile" --timeout 150 --deadline "$(left)" "$@" 2>&1 | tee -a "$OUT/log.txt"; }
: > "$OUT/accelerator.jsonl"
: > "$OUT/probe.jsonl"
python3 -m kbert.bench.cudnn_probe --out "$OUT/probe.jsonl" --timeout 100 2>&1 | tee -a "$OUT/log.txt"

if [ $# -gt 0 ]; then
  CASES=(); for c in "$@"; do CASES+=(--case "$c"); done
  bench "${CASES[@]}"
elif [ "$DRY" = 1 ]; then
  bench --case pretrain-large-128 --variant default,prng-rbg
else
  bench --case pretrain-large-128 --case pretrain-base-512 --case squad-base-384
  if [ "$(left)" -gt 60 ]; then
    bench --case pretrain-large-128 --systems kbert --variant prng-rbg,triton-gemm,prng-rbg+triton-gemm,no-attention-dropout
  fi
fi
cat "$OUT"/profile/top-ops-*.md > "$OUT/top-ops.md" 2>/dev/null || true
rm -rf "$OUT/profile/plugins"  # the raw traces; the tables above are what is kept
echo "run_h100.sh: done in $((SECONDS - start)) s; lines in $OUT/accelerator.jsonl: $(wc -l < "$OUT/accelerator.jsonl")"
