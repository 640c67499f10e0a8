#!/bin/bash
# One device call: for each example of $EXAMPLES (default: matmul; matmul and layernorm have
# deadlines), the decorator tunes its first key with an empty Triton cache, then triton.autotune runs over that key's whole feasible list with an empty cache
# (cold) and again with the cache it filled (warm); each phase stops at its deadline (seconds after
# the start). Files go to $OUT. Run from the repository root after the wheels install of the device README.
set -u; B=lab/benchmarks/autotune_examples.py; R=$OUT; T0=$(date +%s); L=$R/log.txt
left() { local s=$(( $1 - ($(date +%s) - T0) )); echo $(( s > 1 ? s : 1 )); }
{ nvidia-smi -L; nproc; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } 2>&1 | tee "$L"
for ex in ${EXAMPLES:-matmul}; do
  case $ex in matmul) c=310; w=420;; layernorm) c=530; w=575;; esac
  echo "== $ex decorator cold at $(( $(date +%s) - T0 )) s" | tee -a "$L"; rm -rf /tmp/td_$ex
  TRITON_CACHE_DIR=/tmp/td_$ex timeout 60 python3 $B tune --examples $ex --keys 1 --store "$R/tune_$ex.db" --out "$R/tune_cold_$ex.json" 2>&1 | tail -2 | tee -a "$L"
  echo "== $ex cold at $(( $(date +%s) - T0 )) s" | tee -a "$L"; rm -rf /tmp/tb_$ex
  TRITON_CACHE_DIR=/tmp/tb_$ex timeout "$(left $c)" python3 $B baseline --examples $ex --subset 100000 --out "$R/baseline_cold_$ex.json" 2>&1 | tail -3 | tee -a "$L"
  echo "== $ex warm at $(( $(date +%s) - T0 )) s" | tee -a "$L"
  TRITON_CACHE_DIR=/tmp/tb_$ex timeout "$(left $w)" python3 $B baseline --examples $ex --subset 100000 --out "$R/baseline_warm_$ex.json" 2>&1 | tail -3 | tee -a "$L"
done
echo "== end at $(( $(date +%s) - T0 )) s" | tee -a "$L"; ls -la $R
