#!/usr/bin/env bash
# One run of `python -m kbert.bench accelerator` on a machine with an NVIDIA GPU (H100/H200 class):
# kbert on Keras' JAX backend against transformers (torch), under 8 minutes, raw output under $OUT.
#
# Needs: python3 with jax[cuda12] (or cuda13), torch with CUDA, transformers, numpy, keras (with
# namex and optree); TensorFlow is neither needed nor imported. If keras is missing and .whl/
# holds its wheels (fetch_wheels.sh), they are installed into /tmp/site first.
#
#   bash docs/bench/accelerator/run_h100.sh              # the probe, then the goal cases (~8 min)
#   bash docs/bench/accelerator/run_h100.sh levers       # the probe's training forms, then the levers
#   bash docs/bench/accelerator/run_h100.sh CASE ...     # the probe, then these cases (e.g. pretrain-base-128)
#
# First the cuDNN attention probe (python -m kbert.bench.cudnn_probe, about a minute: which forms of
# cuDNN's flash attention run on this GPU, the training forms under XLA's default settings and with
# cuDNN kept out of command buffers, each in its own process; $OUT/probe.jsonl). Its summary names
# the route for kbert's training call with attention dropout and padding ($OUT/route.txt: the
# benchmark variant route-SETTING, or empty). Then the goal cases (pretrain-large-128,
# pretrain-base-512, squad-base-384), kbert through that route (what `auto` runs once
# kbert/compat.py lists it) and transformers, with a top-15 device ops table per kbert line. With
# no route, kbert's pre-training lines run full rows (no padding mask: cuDNN's kernel without one,
# with dropout) and SQuAD runs auto (the plain attention in training). `levers` measures, on the goal
# case and through the route, the dropout bits, rematerialization, Triton GEMMs, full rows and the
# step loop, each its own line. Lines that the deadline (DEADLINE, default 390 s for the benchmark
# itself) leaves no time for are written as skipped.
# Every line is appended to $OUT/accelerator.jsonl as soon as it is measured.
#
# Dry run on any CPU (tiny model; writes under runs/):
#   OUT=runs/bench/accelerator-dry bash docs/bench/accelerator/run_h100.sh --dry-run
set -u -o pipefail
cd "$(dirname "$0")/../../.."

ARGS="$*"
DRY=0
if [ "${1:-}" = "--dry-run" ]; then DRY=1; shift; fi
OUT=${OUT:-runs/bench/accelerator-gpu}
DEADLINE=${DEADLINE:-390}
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
  echo "command: bash docs/bench/accelerator/run_h100.sh $ARGS"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

left() { echo $((DEADLINE - (SECONDS - probed))); }
PROFILE=(--profile-dir "$OUT/profile")
bench() { python3 -m kbert.bench accelerator "${TINY[@]}" --out "$OUT/accelerator.jsonl" --append \
            "${PROFILE[@]}" --timeout 150 --deadline "$(left)" "$@" 2>&1 | tee -a "$OUT/log.txt"; }
: > "$OUT/accelerator.jsonl"
: > "$OUT/probe.jsonl"
: > "$OUT/route.txt"

# The probe: every form under XLA's defaults, the training forms also with cuDNN out of command
# buffers (for the whole process, and for the compiled gradient alone) and with no command buffers.
PROBE=()
if [ "$DRY" = 1 ]; then
  PROBE=(--only fwd,drop-grad,drop-checks,q21-fallback --settings default,jit:no-cudnn-command-buffer --jobs 2)
elif [ "${1:-}" = "levers" ]; then
  PROBE=(--only full-drop-grad,drop-grad,drop-grad-512,bias-drop-grad,drop-checks,q21-fallback,remat-drop-checks
         --settings jit:no-cudnn-command-buffer,jit:no-command-buffer)
fi
python3 -m kbert.bench.cudnn_probe --jobs 8 "${PROBE[@]}" --out "$OUT/probe.jsonl" --timeout 45 --deadline 100 \
  --route-file "$OUT/route.txt" 2>&1 | tee -a "$OUT/log.txt"
probed=$SECONDS
ROUTE=$(cat "$OUT/route.txt")
echo "run_h100.sh: probe done in $((SECONDS - start)) s; route for kbert's training call: ${ROUTE:-none}" | tee -a "$OUT/log.txt"

# kbert's line for a case: through the route where the probe found one; else full rows for
# pre-training (no padding mask) and auto for SQuAD. A lever joins the goal case's line ("+").
variant() { if [ -n "$ROUTE" ]; then echo "$ROUTE"; elif [ "${1%%-*}" = pretrain ]; then echo full-rows; else echo default; fi; }
BASE=$(variant pretrain-large-128)
joined() { local out=() v; for v in "$@"; do out+=("$v+$BASE"); done; (IFS=,; echo "${out[*]}"); }

if [ "${1:-}" = "levers" ]; then
  # In the order of what they may gain (the deadline skips the tail); no profile: more lines fit.
  LEVERS=(default prng-threefry-16 prng-rbg-8 prng-threefry-flat-8 remat-dots triton-gemm prng-threefry-8
          prng-rbg-16 remat-full spe-1)
  if [ "$BASE" != full-rows ]; then LEVERS+=(full-rows); fi
  if [ "$DRY" = 1 ]; then LEVERS=(default prng-threefry-16); fi
  PROFILE=()
  bench --case pretrain-large-128 --systems kbert --variant "$(joined "${LEVERS[@]}")"
else
  if [ $# -gt 0 ]; then CASES=("$@"); elif [ "$DRY" = 1 ]; then CASES=(pretrain-large-128);
  else CASES=(pretrain-large-128 pretrain-base-512 squad-base-384); fi
  for c in "${CASES[@]}"; do
    bench --case "$c" --variant "$(variant "$c")"
  done
fi
cat "$OUT"/profile/top-ops-*.md > "$OUT/top-ops.md" 2>/dev/null || true
rm -rf "$OUT/profile/plugins"  # the raw traces; the tables above are what is kept
echo "run_h100.sh: done in $((SECONDS - start)) s; lines in $OUT/accelerator.jsonl: $(wc -l < "$OUT/accelerator.jsonl")"
