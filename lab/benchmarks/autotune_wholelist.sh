#!/bin/bash
# Device calls: triton.autotune over an example's whole feasible list for its first key, beside the
# decorator's search of the same key. $STEPS lists ex/phase@deadline tokens (deadline: seconds after
# this call's start at which the phase is stopped), run in order:
#   decorator  the decorator tunes the key with an empty Triton cache;
#   cold       triton.autotune over all feasible configs with an empty cache ($CACHE/tb_<ex>);
#   warm       again, with the cache the cold phase filled (its file count is logged first: a warm
#              phase on a machine that did not run the cold one would start empty, and says so).
# CACHE (default /tmp) may name an ignored folder of the working tree, which a warm machine keeps
# between calls. Files go to $OUT. Example:
#   STEPS="matmul/decorator@60 matmul/cold@590" CACHE=.tcache bash lab/benchmarks/autotune_wholelist.sh
# Run from the repository root after the wheels install of the device README.
set -u; B=lab/benchmarks/autotune_examples.py; R=$OUT; C=${CACHE:-/tmp}; T0=$(date +%s); L=$R/log.txt
left() { local s=$(( $1 - ($(date +%s) - T0) )); echo $(( s > 1 ? s : 1 )); }
mkdir -p "$C"
{ nvidia-smi -L; nproc; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } 2>&1 | tee "$L"
for step in ${STEPS:-matmul/decorator@60 matmul/cold@590}; do
  ex=${step%%/*}; rest=${step#*/}; phase=${rest%@*}; at=${rest#*@}
  echo "== $ex $phase at $(( $(date +%s) - T0 )) s (deadline $at s)" | tee -a "$L"
  case $phase in
    decorator) rm -rf "$C/td_$ex"
      TRITON_CACHE_DIR=$C/td_$ex timeout "$(left "$at")" python3 $B tune --examples "$ex" --keys 1 \
        --store "$R/tune_$ex.db" --out "$R/tune_cold_$ex.json" 2>&1 | tail -2 | tee -a "$L";;
    cold) rm -rf "$C/tb_$ex"
      TRITON_CACHE_DIR=$C/tb_$ex timeout "$(left "$at")" python3 $B baseline --examples "$ex" \
        --subset 100000 --out "$R/baseline_cold_$ex.json" 2>&1 | tail -3 | tee -a "$L";;
    warm) echo "cache $C/tb_$ex holds $(find "$C/tb_$ex" -type f 2>/dev/null | wc -l) files" | tee -a "$L"
      TRITON_CACHE_DIR=$C/tb_$ex timeout "$(left "$at")" python3 $B baseline --examples "$ex" \
        --subset 100000 --out "$R/baseline_warm_$ex.json" 2>&1 | tail -3 | tee -a "$L";;
  esac
done
echo "== end at $(( $(date +%s) - T0 )) s" | tee -a "$L"; ls -la "$R"
