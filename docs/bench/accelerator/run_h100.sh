#!/usr/bin/env bash
# The H100 run of `python -m kbert.bench accelerator` (kbert on Keras' JAX backend vs transformers),
# made for the workplace's `device` tool: one call, under 6 minutes, raw output under $OUT.
#
# Before the call, on the workstation, from the repository root (the device machine has JAX, torch
# and transformers but no keras, and can fetch nothing):
#   bash docs/bench/accelerator/fetch_wheels.sh        # keras + namex + optree wheels into .whl/
# The call (device tool `run`, carry [".whl"], timeout_s 420):
#   bash docs/bench/accelerator/run_h100.sh [CASE ...]
# With no CASE it runs every case, the goal case first, and skips what the deadline (DEADLINE,
# default 330 s for the benchmark itself) leaves no time for; a second call with the skipped
# cases finishes the table. Every (case, system) line is appended to $OUT/accelerator.jsonl as
# soon as it is measured, so a call cut short still returns what it measured.
#
# Dry run on any CPU (tiny model, no wheels; writes under runs/):
#   OUT=runs/bench/h100-dry bash docs/bench/accelerator/run_h100.sh --dry-run
set -u -o pipefail
cd "$(dirname "$0")/../../.."

DRY=0
if [ "${1:-}" = "--dry-run" ]; then DRY=1; shift; fi
OUT=${OUT:-runs/bench/accelerator-h100}
DEADLINE=${DEADLINE:-330}
mkdir -p "$OUT"
start=$SECONDS

if [ "$DRY" = 0 ]; then
  ls .whl/*.whl >/dev/null 2>&1 || { echo "run_h100.sh: error: no wheels in .whl/ (run fetch_wheels.sh and carry .whl)" >&2; exit 1; }
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
  TINY=()
else
  TINY=(--tiny)
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 USE_TF=0 TF_CPP_MIN_LOG_LEVEL=3

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  git log -1 --format='commit %H' 2>/dev/null || true
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv 2>&1 || true
  python3 - <<'PY'
import importlib.metadata as m, sys
print("python", sys.version.split()[0])
for name in ("keras", "jax", "jaxlib", "torch", "transformers", "numpy", "optree", "namex"):
    try:
        print(name, m.version(name))
    except m.PackageNotFoundError:
        print(name, "(not installed)")
import importlib.util
print("tensorflow", "installed (not used)" if importlib.util.find_spec("tensorflow") else "not installed")
PY
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

left() { echo $((DEADLINE - (SECONDS - start))); }

CASES=()
for c in "$@"; do CASES+=(--case "$c"); done

# kbert (fused attention) and transformers on every case, goal case first.
python3 -m kbert.bench accelerator "${TINY[@]}" "${CASES[@]}" --out "$OUT/accelerator.jsonl" \
  --deadline "$(left)" --timeout 150 2>&1 | tee "$OUT/log.txt"

# If time is left: kbert's reference attention (with its attention-probability dropout) on the
# goal case, to measure what "fused" gains and gives up.
if [ "$(left)" -gt 60 ] && { [ $# -eq 0 ] || [[ " $* " == *" pretrain-large-128 "* ]]; }; then
  python3 -m kbert.bench accelerator "${TINY[@]}" --case pretrain-large-128 --systems kbert \
    --attention-impl plain --out "$OUT/accelerator.jsonl" --append --deadline "$(left)" --timeout 150 \
    2>&1 | tee -a "$OUT/log.txt"
fi
echo "run_h100.sh: done in $((SECONDS - start)) s; lines in $OUT/accelerator.jsonl: $(wc -l < "$OUT/accelerator.jsonl")"
