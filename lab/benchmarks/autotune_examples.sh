#!/bin/bash
# One device call of lab/benchmarks/autotune_examples.py (see its docstring): the cold tune with an empty
# Triton cache while every race config compiles into another cache on the other cores, a second
# process's dispatch, the race's timings, the winners re-timed with the race's top, and
# triton.autotune on a subset; each phase stops at its deadline (seconds after the start) so that
# the results are packed before the call's limit (OUT/runs.tgz, OUT/races.tgz). Env: EXAMPLES, KEYS,
# HELDOUT=1 (the first held-out keys, autotune_heldout_keys.toml), HELDOUT=2 or 3 (the second or
# third, autotune_heldout{2,3}_keys.toml) or KEYS_FILE (any such file), SCALE, SUBSET. The final phase
# re-times every key in the cold store, those a later phase tuned there included.
# Usage: lab/benchmarks/autotune_examples.sh OUT [PHASES]
set -u
OUT=$1; PHASES=${2:-"cold warm dispatch race final baseline"}
case ${HELDOUT:-} in
  "") KF=${KEYS_FILE:-} ;;
  1) KF=lab/benchmarks/autotune_heldout_keys.toml ;;
  2) KF=lab/benchmarks/autotune_heldout2_keys.toml ;;
  3) KF=lab/benchmarks/autotune_heldout3_keys.toml ;;
  *) echo "HELDOUT must be 1, 2 or 3, not $HELDOUT" >&2; exit 2 ;;
esac
B="lab/benchmarks/autotune_examples.py"; X="--examples ${EXAMPLES:-softmax,layernorm,matmul} --keys ${KEYS:-8} ${KF:+--keys-file $KF}"; R=/tmp/runs; mkdir -p "$R" /tmp/races; L=$R/log.txt
export PYTHONUNBUFFERED=1
T0=$(date +%s)
# Deadlines scale with $SCALE percent (100: the whole call takes about 590 s).
SCALE=${SCALE:-100}
left() { local s=$(( $1 * SCALE / 100 - ($(date +%s) - T0) )); echo $(( s > 1 ? s : 1 )); }
phase() { echo "== $1 at $(( $(date +%s) - T0 )) s" | tee -a "$L"; }
{ nvidia-smi -L; nproc; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } 2>&1 | tee "$L"
if [[ $PHASES == *race* ]]; then  # compile every race config on 12 cores, into the race's own cache
  TRITON_CACHE_DIR=/tmp/rc nohup python3 $B race $X --step compile --workers 12 --out /tmp/races > /tmp/pool.log 2>&1 &
  POOL=$!
fi
if [[ $PHASES == *cold* ]]; then  # an empty Triton cache
  phase cold; TRITON_CACHE_DIR=/tmp/tc timeout "$(left 200)" python3 $B tune $X --store "$R/cold.db" --out "$R/cold.json" 2>&1 | tee -a "$L"
fi
if [[ $PHASES == *warm* ]]; then  # a fresh store, the cache the cold run filled
  phase warm; TRITON_CACHE_DIR=/tmp/tc timeout "$(left 260)" python3 $B tune $X --store "$R/warm.db" --out "$R/warm.json" 2>&1 | tee -a "$L"
fi
if [[ $PHASES == *dispatch* ]]; then
  phase dispatch; TRITON_CACHE_DIR=/tmp/tc timeout "$(left 290)" python3 $B dispatch $X --store "$R/cold.db" --out "$R/dispatch.json" 2>&1 | tail -5 | tee -a "$L"
fi
if [[ $PHASES == *race* ]]; then
  phase "race (waiting for the compiles)"; timeout "$(left 340)" tail --pid=$POOL -f /dev/null; cat /tmp/pool.log >> "$L"
  phase race; TRITON_CACHE_DIR=/tmp/rc timeout "$(left 525)" python3 $B race $X --step time --out /tmp/races 2>&1 | tee -a "$L"
fi
if [[ $PHASES == *final* ]]; then
  phase final; TRITON_CACHE_DIR=/tmp/rc timeout "$(left 565)" python3 $B final $X --races /tmp/races --runs "$R" --store "$R/cold.db" --out "$R/final.json" 2>&1 | tee -a "$L"
fi
if [[ $PHASES == *baseline* ]]; then  # triton.autotune over a random subset: an empty cache, then the cache it filled
  phase baseline; rm -rf /tmp/tb; TRITON_CACHE_DIR=/tmp/tb timeout "$(left 575)" python3 $B baseline $X --subset ${SUBSET:-16} --out "$R/baseline_cold.json" 2>&1 | tail -5 | tee -a "$L"
  phase "baseline warm"; TRITON_CACHE_DIR=/tmp/tb timeout "$(left 590)" python3 $B baseline $X --subset ${SUBSET:-16} --out "$R/baseline_warm.json" 2>&1 | tail -5 | tee -a "$L"
fi
phase pack; tar czf "$OUT/races.tgz" -C /tmp/races --exclude='race-store.db*' . ; ls -la "$R" | tee -a "$L"
tar czf "$OUT/runs.tgz" -C "$R" .  # one file: the device returns a few files per call
