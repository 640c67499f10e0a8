#!/bin/bash
# The hard test set's races (lab/hardtest/README.md), one device call on an H100: every feasible config
# of each shape, its top re-timed with cuBLAS beside, into the two folders the freeze record names.
# Usage (on the GPU machine, from the repository root): bash lab/hardtest/race.sh OUT
# then copy OUT/h100_hardtest_* to lab/benchmarks/data/ and commit them, once.
set -eu
OUT=$1; mkdir -p "$OUT"
for family in splitk fused; do
  mkdir -p "$OUT/h100_hardtest_$family"; space=triton_gemm_splitk; [[ $family == fused ]] && space=triton_gemm_splitk_fused
  python3 -m flysearch race run --shapes "lab/hardtest/shapes_$family.toml" --space "$space" \
    --db "/tmp/hardtest_$family.db" --dump "$OUT/h100_hardtest_$family" --deadline 270 \
    --report "$OUT/h100_hardtest_$family/race_report.json" 2>&1 | tail -20; test "${PIPESTATUS[0]}" = 0
done
