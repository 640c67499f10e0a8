"""What ``@flysearch.autotune`` itself costs a call, on a CPU: its dispatch with the launch taken out.

    python lab/benchmarks/autotune_dispatch_cpu.py --out lab/benchmarks/results/autotune_dispatch_cpu.md

On a GPU the decorator's cost per call is the difference of two host times of about 15-50 us each
(``autotune_examples.md``), so a few microseconds of it are hard to tell from the launch's own
spread. Here the launch is replaced by a function that does nothing: for each example kernel
(``examples/*.py``, meta tensors of its first key's shape), Triton's launch (the ``JITFunction.run``
the decorator calls) is replaced by a no-op, the kernel is decorated again with
``flysearch.autotune``, and one key's winner is put in its dispatch table as a tuned store would.
Two callables are then timed in interleaved rounds: *direct*, the no-op called as a direct launch
calls ``run`` (the kernel's arguments, the grid and the chosen config's values), and *autotune*,
``kernel[grid](...)`` through the decorator. Their difference is what the decorator adds:
finding the key's values in the arguments, one dictionary lookup, and merging the config into the
call. Medians over rounds of the per-call time (``timeit``, ``--calls`` calls a round).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import platform
import random
import statistics
import sys
import tempfile
import timeit
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import flysearch  # noqa: E402
from flysearch.compare import code_commit  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

EXAMPLES = ("softmax", "layernorm", "matmul")


def _example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _noop(*args: Any, **kwargs: Any) -> None:
    return None


def measure(name: str, calls: int, rounds: int, folder: str) -> dict[str, Any]:
    module = _example(name)  # a fresh import: its kernel is this measurement's alone
    key = module.KEYS[0]
    args = module.make_args(key, "meta")  # tensors with a shape and no memory
    grid = module.grid(args)
    module.kernel_fn.run = _noop  # the launch, taken out of both sides
    tuned = flysearch.autotune(space=module.SPACE, key=module.KEY,
                               store=f"{folder}/{name}.db")(module.kernel_fn)
    config = {p.name: p.values[0] for p in module.SPACE.params}  # any config: its values are only passed on
    tuned.tuner.best[tuned.args.values((), args)] = config  # what a tuned store gives the key
    via = tuned[grid]

    def direct() -> None:
        _noop(grid=grid, warmup=False, **args, **config)

    def autotune() -> None:
        via(**args)

    samples: dict[str, list[float]] = {"direct": [], "autotune": []}
    for r in range(rounds):
        order = [("direct", direct), ("autotune", autotune)]
        random.Random(r).shuffle(order)
        for label, fn in order:
            samples[label].append(timeit.timeit(fn, number=calls) / calls * 1e6)
    med = {k: statistics.median(v) for k, v in samples.items()}
    return {"example": name, "key": ",".join(f"{k}={v}" for k, v in sorted(key.items())),
            "args": len(args), "direct_us": med["direct"], "autotune_us": med["autotune"],
            "overhead_us": med["autotune"] - med["direct"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", type=Path,
                    default=ROOT / "lab" / "benchmarks" / "results" / "autotune_dispatch_cpu.md")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:  # the stores, never opened: every key is in memory
        rows = [measure(name, a.calls, a.rounds, folder) for name in EXAMPLES]
    lines = [
        "# The decorator's own cost a call, on a CPU (the launch taken out)", "",
        f"- command: `python lab/benchmarks/autotune_dispatch_cpu.py --calls {a.calls} --rounds {a.rounds}`",
        f"- commit: {code_commit(ROOT, outputs=[RESULTS])}",
        f"- hardware: {platform.machine()} CPU, {platform.processor() or 'unknown model'}; no GPU (the "
        "launch is a no-op)",
        f"- versions: Python {platform.python_version()}, torch {version('torch')}, "
        f"triton {version('triton')}",
        f"- date: {dt.date.today().isoformat()}",
        f"- medians over {a.rounds} interleaved rounds of {a.calls:,} calls each", "",
        "| example | key | kernel arguments | direct us | autotune us | the decorator's cost us |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['example']} | {r['key']} | {r['args']} | {r['direct_us']:.2f} | "
                     f"{r['autotune_us']:.2f} | {r['overhead_us']:.2f} |")
    lines += ["", "The GPU figures (a real launch on both sides, `autotune_examples.md`) add the launch's "
              "own spread to this cost; the target is at most 5 us a call."]
    a.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
