#!/usr/bin/env bash
# The suite's device check: the 1-GPU part of the benchmark suite (docs/profiling.md) on the
# lent GPU. Writes $OUT/suite.csv (the measurements CSV) and $OUT/suite.log (one line per case:
# steps/s with its interval, peak memory, power; or the failure), prints them as they come and
# the total time. Run from the repository root; CI never runs this.
#   PY=python3 OUT=/tmp/out GPU_TYPE=h200 bash tests/device/profile_suite.sh
set -u -o pipefail
PY=${PY:-python3}
OUT=${OUT:-/tmp/gogh-device-out}
GPU_TYPE=${GPU_TYPE:-h200}
CASE_TIMEOUT_S=${CASE_TIMEOUT_S:-120}
mkdir -p "$OUT"
CASES=$($PY -c 'from catalog.profiling.cases import SINGLE_GPU_CASES; print(",".join(c.name for c in SINGLE_GPU_CASES))') || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
started=$(date +%s)
PYTHONUNBUFFERED=1 $PY -m catalog.profiling --cases "$CASES" --device cuda --gpu-type "$GPU_TYPE" \
    --out "$OUT/suite.csv" --case-timeout-s "$CASE_TIMEOUT_S" 2>&1 | tee "$OUT/suite.log"
status=$?
echo "1-GPU suite: $(( $(date +%s) - started )) s in all (exit status $status); $(( $(wc -l <"$OUT/suite.csv") - 1 )) row(s) in $OUT/suite.csv"
exit $status
