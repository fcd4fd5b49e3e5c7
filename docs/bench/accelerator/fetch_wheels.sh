#!/usr/bin/env bash
# keras and two of its dependencies (namex, optree) as wheels in .whl/, for a GPU machine that has
# JAX, torch and transformers but cannot install keras itself: run_h100.sh installs them from
# .whl/ when keras is missing. Run from the repository root on a machine with network access;
# .whl/ is kept out of git (.git/info/exclude). The versions are those installed here.
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
