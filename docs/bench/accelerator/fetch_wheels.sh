#!/usr/bin/env bash
# The wheels run_h100.sh installs on the device machine, which has JAX, torch and transformers but
# not keras nor two of its dependencies (namex, optree). Run on the workstation from the
# repository root; .whl/ is kept out of git (.git/info/exclude) and carried by the device call.
set -eu -o pipefail
cd "$(dirname "$0")/../../.."
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >> "$exclude"
v() { python3 -c "import importlib.metadata as m; print(m.version(\"$1\"))"; }
python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  -d .whl "keras==$(v keras)" "namex==$(v namex)" "optree==$(v optree)"
ls -l .whl
