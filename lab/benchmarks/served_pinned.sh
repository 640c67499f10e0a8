#!/usr/bin/env bash
# A worker server started without --gpu holds a timer whose GPU context is on the default GPU.
# A study run with --gpus 0 (CUDA_VISIBLE_DEVICES=0 for its timer) must not get that timer, a
# study without --gpus must. Run on a GPU host from the repository root:
#   OUT=/tmp/out bash lab/benchmarks/served_pinned.sh
set -e
mkdir -p "$OUT"
T=$(mktemp -d); S=$T/w.sock
python3 -m flysearch serve --evaluator triton --compile-workers 14 --socket $S 2> $T/server.log &
SP=$!
python3 -c "from flysearch.evaluators import wait_warm; wait_warm('$S', 120)"
cd $T
python3 -m flysearch study run --evaluator triton --shape 4096x4096x4096 --sampler tpe-unseen --budget 24 --gpus 0 --server $S --storage sqlite:///s.db --db t.db --json $OUT/pinned_gpu0.json > /dev/null 2>&1
python3 -m flysearch study run --evaluator triton --shape 4096x4096x4096 --sampler tpe-unseen --budget 24 --server $S --storage sqlite:///s2.db --db t2.db --json $OUT/pinned_none.json > /dev/null 2>&1
kill -TERM $SP; wait $SP || true
cat $T/server.log
python3 - <<'PY'
import json, os
for n in ("pinned_gpu0", "pinned_none"):
    r = json.load(open(os.path.join(os.environ["OUT"], n + ".json")))[0]
    print(n, "served", r["served_workers"], "timer_ready_s", round(r["timer_ready_s"], 3), "compiles", r["summary"]["compiles"], "device", r["device"])
PY
