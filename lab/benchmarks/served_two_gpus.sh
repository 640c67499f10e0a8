#!/usr/bin/env bash
# A worker server for two GPUs (flysearch serve --gpu 0,1) and a study on both (--gpus 0,1): each
# worker must take its own GPU's timer warm (GPU ready at once) and its compile processes from the
# server; then the same study as a command of its own, for comparison. Run on a host with two GPUs
# from the repository root:
#   OUT=/tmp/out bash lab/benchmarks/served_two_gpus.sh
set -e
mkdir -p "$OUT"
T=$(mktemp -d); S=$T/w.sock
python3 -m flysearch serve --evaluator triton --gpu 0,1 --socket $S 2> $T/server.log &
SP=$!
python3 -c "from flysearch.evaluators import wait_warm; print(wait_warm('$S', 180)['kinds'])"
cd $T
for mode in served own; do
  extra=""; [ $mode = served ] && extra="--server $S"
  python3 -m flysearch study run --evaluator triton --shape 4096x4096x4096 --sampler tpe-unseen \
    --budget 96 --gpus 0,1 $extra --storage sqlite:///$mode.db --db $mode-tables.db \
    --json $OUT/two_gpus_$mode.json > /dev/null 2>&1
done
kill -TERM $SP; wait $SP || true
cat $T/server.log
python3 - <<'PY'
import json, os
for mode in ("served", "own"):
    for r in json.load(open(os.path.join(os.environ["OUT"], f"two_gpus_{mode}.json"))):
        print(mode, r["worker"], "gpu", r.get("gpu"), "served", r["served_workers"],
              "timer_ready_s", round(r["timer_ready_s"], 3), "compiled", r["compiled"],
              "wall_s", round(r["wall_s"], 2), "overhead", round(r["overhead"], 4), "device", r["device"])
PY
