"""``@flysearch.autotune`` on kernels flysearch does not ship, against an exhaustive race (Hopper GPU).

The three kernels of ``examples/`` (a fused softmax, a layer norm forward, a GEMM with its own
parameter names), eight keys each, are tuned by the decorator as a user would run it, and raced
exhaustively over the same feasible spaces. Phases (each one process; run them in this order on one
machine, the first with an empty Triton cache):

    tune      --store S.db --out cold.json   tune every key in order (cold cache: a fresh TRITON_CACHE_DIR)
    tune      --store W.db --out warm.json   again with a fresh store and the cache the cold run filled
    dispatch  --store S.db --out dispatch.json   a second process: every key from the store, tunes counted
                                              (0 expected), outputs checked, and the decorator's overhead
                                              per call against launching the chosen config directly
    baseline  --subset 32 --out base.json     triton.autotune over a random subset of each first key's
                                              feasible configs, cold (fresh cache) and warm (a new process)
    race      --out DIR                       every feasible config of every key (compiled on all cores
                                              first), its top re-timed in rounds: DIR/*.table.json.gz
    final     --races DIR --runs RUNS --out final.json   the cold and warm winners and the race's top 3
                                              re-timed together in interleaved rounds (--store S.db: also
                                              the winners of keys a later phase tuned into S)

Every phase needs a GPU; ``lab/benchmarks/autotune_examples_report.py`` writes the report from the
files (anywhere). The device call that made the committedresult is in the result file's provenance.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import multiprocessing
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

EXAMPLES = ("softmax", "layernorm", "matmul")
N_KEYS = 8
# A dry run on a CPU (TRITON_INTERPRET=1 FLYSEARCH_BENCH_DEVICE=cpu) shrinks every key to at most
# SMALL per size, so that the interpreter gets through; timings then mean nothing.
DEVICE = os.environ.get("FLYSEARCH_BENCH_DEVICE", "cuda")


def _race_protocol() -> Any:
    from flysearch.evaluators import TimingProtocol

    return TimingProtocol(batches=3, min_batch_ms=0.25, warmup=1)  # every config once; its top re-timed


RACE_PROTOCOL = None  # set in main (flysearch is imported late, after sys.path)
SMALL = int(os.environ.get("FLYSEARCH_BENCH_SMALL", "256"))


def _example(name: str) -> ModuleType:
    return importlib.import_module(f"examples.{name}")


HELDOUT = ROOT / "lab" / "benchmarks" / "autotune_heldout_keys.toml"
KEYSET: dict[str, Path | None] = {"file": None}  # set in main: --heldout or --keys-file picks the keys


def _keys(module: ModuleType, n: int) -> list[dict[str, int]]:
    if KEYSET["file"] is not None:
        import tomllib

        keys = tomllib.loads(KEYSET["file"].read_text())[module.__name__.rsplit(".", 1)[-1]][:n]
    else:
        keys = list(module.KEYS[:n])
    if DEVICE == "cpu":  # rows (and M) down to SMALL, the other sizes down to 256 (a few apart)
        return [{k: min(v, SMALL if k in ("n_rows", "M") else 256 // (i % 2 + 1)) for k, v in key.items()}
                for i, key in enumerate(keys)]
    return keys


def _sync() -> None:
    if DEVICE == "cuda":
        import torch

        torch.cuda.synchronize()


def key_text(values: Mapping[str, Any]) -> str:
    """Key values or a config as a race table and the store name them: ``a=1,b=2``, sorted."""
    return ",".join(f"{k}={v}" for k, v in sorted(values.items()))


KERNEL_NAMES = {example: f"{example}_kernel" for example in EXAMPLES}  # each example's kernel function


def store_winners(store: str | Path) -> dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]]:
    """Every key a tune store holds a winner for: (kernel name, key) -> (config, the tuner's report)."""
    from flysearch.tune import TuneStore, store_url

    return {(t.name, t.key): (t.config, t.report) for t in TuneStore(store_url(str(store))).tuned()
            if t.state == "done" and t.config}


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


def _tuned(module: ModuleType, store: str, protocol: Any = None) -> Any:
    import flysearch

    return flysearch.autotune(
        protocol=protocol,
        space=module.SPACE,
        key=module.KEY,
        reference=module.reference,
        outputs=module.OUTPUTS,
        rtol=module.RTOL,
        atol=module.ATOL,
        store=store,
    )(module.kernel_fn)


def _machine() -> dict[str, Any]:
    import torch
    import triton

    device = torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE
    return {
        "device": device,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC"),
    }


def _free() -> None:
    if DEVICE == "cuda":
        import torch

        torch.cuda.synchronize()
        torch.cuda.empty_cache()


# -- tune: the decorator as a user runs it ---------------------------------------------------------


def tune(store: str, out: Path, examples: list[str], n_keys: int) -> None:

    cache = os.environ.get("TRITON_CACHE_DIR", "")
    done: dict[str, Any] = {"machine": _machine(), "cache": cache, "runs": []}
    for name in examples:
        module = _example(name)
        tuned = _tuned(module, store)
        for key in _keys(module, n_keys):
            args = module.make_args(key, DEVICE)
            _sync()
            t0 = time.perf_counter()
            config = tuned.tune(**args, grid=module.grid(args))
            _sync()
            wall = time.perf_counter() - t0
            report = next(
                t.report for t in tuned.store.tuned(name=tuned.tuner.name) if t.key == key_text(key)
            )
            done["runs"].append(
                {
                    "example": name,
                    "key": key_text(key),
                    "wall_s": round(wall, 3),
                    "config": config,
                    "report": report,
                }
            )
            print(
                f"{name} {key_text(key)}: {wall:.1f} s, {report['compiles']} compiles "
                f"({report['sampler']}), {report['winner_ms']:.4f} ms",
                flush=True,
            )
            _write_json(out, done)
            del args
            _free()


# -- dispatch: a second process ----------------------------------------------------------------------


def _per_call_us(fn: Callable[..., Any], args: dict[str, Any], extra: dict[str, Any], calls: int) -> float:
    """Host microseconds per call of ``fn(**args, **extra)`` over *calls* calls (fewer than the
    GPU's launch queue holds, so the host never waits on the GPU)."""

    _sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(**args, **extra)
    spent = time.perf_counter() - t0
    _sync()
    return spent / calls * 1e6


def dispatch(
    store: str, out: Path, examples: list[str], n_keys: int, calls: int = 200, rounds: int = 7
) -> None:
    import torch

    result: dict[str, Any] = {"machine": _machine(), "keys": [], "overhead": []}
    for name in examples:
        module = _example(name)
        tuned = _tuned(module, store)
        tunes: list[Any] = []
        real_tune = tuned.tuner.tune

        def counted(*a: Any, _real: Any = real_tune, _tunes: list[Any] = tunes, **k: Any) -> Any:
            _tunes.append(a)
            return _real(*a, **k)

        tuned.tuner.tune = counted
        for i, key in enumerate(_keys(module, n_keys)):
            args = module.make_args(key, DEVICE)
            g = module.grid(args)
            expected = module.reference(**args)
            expected = expected if isinstance(expected, tuple) else (expected,)
            tuned[g](**args)
            _sync()
            right = all(
                torch.allclose(args[o].float(), e.float(), rtol=module.RTOL, atol=module.ATOL)
                for o, e in zip(module.OUTPUTS, expected, strict=True)
            )
            result["keys"].append(
                {"example": name, "key": key_text(key), "tunes": len(tunes), "right": right}
            )
            if i == 0:  # the decorator's cost per call, against launching its config directly
                best = tuned.best_config(**{k: args[k] for k in module.KEY})
                direct = module.kernel_fn[g]
                via = tuned[g]
                samples: dict[str, list[float]] = {"direct": [], "autotune": []}
                for r in range(rounds):
                    order = [("direct", direct, best), ("autotune", via, {})]
                    random.Random(r).shuffle(order)
                    for label, fn, extra in order:
                        samples[label].append(_per_call_us(fn, args, extra, calls))
                med = {k: statistics.median(v) for k, v in samples.items()}
                result["overhead"].append(
                    {
                        "example": name,
                        "key": key_text(key),
                        "calls": calls,
                        "rounds": rounds,
                        "direct_us": med["direct"],
                        "autotune_us": med["autotune"],
                        "overhead_us": med["autotune"] - med["direct"],
                        "samples": samples,
                    }
                )
            del args, expected
            _free()
        _write_json(out, result)
    print(
        json.dumps(
            {
                "tunes": sum(k["tunes"] for k in result["keys"]),
                "wrong": sum(not k["right"] for k in result["keys"]),
                "overhead_us": [round(o["overhead_us"], 2) for o in result["overhead"]],
            }
        )
    )


# -- baseline: triton.autotune over the same configs ------------------------------------------------


def _triton_config(params: Mapping[str, Any]) -> Any:
    import triton

    from flysearch.tune import LAUNCH_OPTIONS

    options = {k: params[k] for k in LAUNCH_OPTIONS if k in params}
    kwargs = {k: v for k, v in params.items() if k not in options}
    return triton.Config(kwargs, **options)


def baseline(out: Path, examples: list[str], subset: int, seed: int = 0) -> None:
    """triton.autotune's wall clock to its winner over *subset* random feasible configs of each
    example's first key (this process's cache as it is: run it with a fresh TRITON_CACHE_DIR for
    the cold figure, and again for the warm one)."""
    import triton

    from flysearch.tune import KeyValues

    cache = os.environ.get("TRITON_CACHE_DIR", "")
    result: dict[str, Any] = {"machine": _machine(), "cache": cache, "runs": []}
    for name in examples:
        module = _example(name)
        key = _keys(module, 1)[0]
        feasible = module.SPACE.enumerate(KeyValues.of(key), _arch()).feasible
        chosen = random.Random(seed).sample(feasible, min(subset, len(feasible)))
        kernel = triton.autotune(configs=[_triton_config(c.as_dict()) for c in chosen], key=module.KEY)(
            module.kernel_fn
        )
        args = module.make_args(key, DEVICE)
        g = module.grid(args)
        _sync()
        t0 = time.perf_counter()
        kernel[g](**args)
        _sync()
        wall = time.perf_counter() - t0
        result["runs"].append(
            {
                "example": name,
                "key": key_text(key),
                "configs": len(chosen),
                "n_feasible": len(feasible),
                "wall_s": round(wall, 3),
                "per_config_s": round(wall / len(chosen), 4),
            }
        )
        print(f"triton.autotune {name} {key_text(key)}: {len(chosen)} configs in {wall:.1f} s", flush=True)
        _write_json(out, result)
        del args
        _free()


def _arch() -> Any:
    import torch

    from flysearch.space import arch_of_device, get_arch

    return arch_of_device(torch.cuda.get_device_name()) if DEVICE == "cuda" else get_arch("sm_90")


# -- race: the ground truth -------------------------------------------------------------------------


def _compile_job(job: tuple[str, dict[str, int], dict[str, Any]]) -> tuple[str, str, str, float | None]:
    """Compile one config for sm_90 into Triton's cache (a race's launches then only load it); its
    seconds, ``None`` when it failed (the race records the failure when it launches it)."""
    from examples.check_space import compile_for_sm90

    name, key, values = job
    t0 = time.perf_counter()
    try:
        ok = compile_for_sm90(name, key, values)["ok"]
    except Exception:  # the interpreter of a dry run has nothing to compile
        ok = False
    return name, key_text(key), key_text(values), time.perf_counter() - t0 if ok else None


def race(out: Path, examples: list[str], n_keys: int, workers: int, step: str = "both") -> None:
    """The race: *step* ``compile`` fills Triton's cache on *workers* cores (no GPU needed),
    ``time`` launches every config (each binary loaded from the cache), ``both`` overlaps them."""
    from flysearch.evaluators import RetimeSettings
    from flysearch.tables import dump_table_file
    from flysearch.tune import KeyValues

    out.mkdir(parents=True, exist_ok=True)
    arch = _arch()
    plan = {
        name: [
            (key, _example(name).SPACE.enumerate(KeyValues.of(key), arch).feasible)
            for key in _keys(_example(name), n_keys)
        ]
        for name in examples
    }
    jobs = [
        (name, key, c.as_dict())
        for name in examples
        for key, configs in plan[name]
        for c in configs
        if step != "time" and not (out / f"{name}__{key_text(key)}.table.json.gz").exists()
    ]
    cold: dict[tuple[str, str, str], float | None] = {}
    t_start = time.perf_counter()
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    futures = {name: [] for name in examples}
    for job in jobs:
        futures[job[0]].append(pool.submit(_compile_job, job))
    with contextlib.ExitStack() as stack:
        stack.callback(pool.shutdown, cancel_futures=True)
        for name in examples:
            for f in futures[name]:
                n, k, c, s = f.result()
                cold[(n, k, c)] = s
            print(
                f"{name}: {len(futures[name])} compiles done at {time.perf_counter() - t_start:.0f} s",
                flush=True,
            )
            if step == "compile":
                continue
            module = _example(name)
            tuned = _tuned(module, str(out / "race-store.db"), RACE_PROTOCOL)  # a race stores nothing
            for key, _configs in plan[name]:
                path = out / f"{name}__{key_text(key)}.table.json.gz"
                if path.exists():
                    continue
                args = module.make_args(key, DEVICE)
                t0 = time.perf_counter()
                table = tuned.race(
                    **args,
                    grid=module.grid(args),
                    retime=RetimeSettings(rounds=5, within=0.02, min_k=4, max_k=8),
                )
                for row in table.rows.values():
                    row.extra["pool_compile_s"] = cold.get((name, key_text(key), row.key))
                dump_table_file(table, path)
                best = table.confirmed_best()
                spent = time.perf_counter() - t0
                print(
                    f"{name} {key_text(key)}: {len(table)} configs raced in {spent:.0f} s, "
                    f"{len(table.ok_rows())} ok, best {best.key} "
                    f"{table.retimed_ms().get(best.key, best.time_ms):.4f} ms",
                    flush=True,
                )
                del args
                _free()


# -- final: the winners against the race's top, in one set of rounds --------------------------------


def final(
    races: Path, runs: Path, out: Path, examples: list[str], n_keys: int, rounds: int = 10,
    store: str | None = None,
) -> None:
    """The cold and warm winners (``runs/{cold,warm}.json``; with *store*, also the store's winner of
    each key those files lack, labelled cold) re-timed with the race's top 3 in interleaved rounds."""
    from flysearch.evaluators import TimingProtocol, interleaved_rounds, time_launches
    from flysearch.tables import read_table_file

    winners: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for label in ("cold", "warm"):
        path = runs / f"{label}.json"
        if path.exists():
            for r in json.loads(path.read_text())["runs"]:
                winners.setdefault((r["example"], r["key"]), {})[label] = r["config"]
    example_of = {kernel: example for example, kernel in KERNEL_NAMES.items()}
    for (kernel, key), (config, _report) in (store_winners(store) if store else {}).items():
        winners.setdefault((example_of.get(kernel, kernel), key), {}).setdefault("cold", config)
    result: dict[str, Any] = {"machine": _machine(), "rounds": rounds, "pairs": []}
    protocol = TimingProtocol()
    for name in examples:
        module = _example(name)
        for key in _keys(module, n_keys):
            path = races / f"{name}__{key_text(key)}.table.json.gz"
            if not path.exists() or (name, key_text(key)) not in winners:
                continue
            meta, rows = read_table_file(path)
            from flysearch.tables import GroundTruth

            table = GroundTruth(meta, {r.key: r for r in rows})
            top = [r.key for r in table.ranked()[:3]]
            entries = {f"race{i + 1}": table.rows[k].params for i, k in enumerate(top)}
            entries.update(winners[(name, key_text(key))])
            args = module.make_args(key, DEVICE)
            g = module.grid(args)
            launch = module.kernel_fn[g]

            def time_one(
                label: str, g: Any = g, args: Any = args, launch: Any = launch, entries: Any = entries
            ) -> float:
                params = entries[label]
                return time_launches(lambda _i: launch(**args, **params), protocol)[0]

            samples, failed = interleaved_rounds(list(entries), time_one, rounds, key=lambda s: s)
            med = {k: statistics.median(v) for k, v in samples.items() if v}
            optimum = min(med[k] for k in med if k.startswith("race"))
            pair = {
                "example": name,
                "key": key_text(key),
                "median_ms": med,
                "failed": failed,
                "configs": entries,
                "race_top": top,
                "n_configs": len(table),
                **{f"{label}_ratio": med[label] / optimum for label in ("cold", "warm") if label in med},
            }
            result["pairs"].append(pair)
            ratios = [
                f"{label} {pair[label + '_ratio']:.4f}"
                for label in ("cold", "warm")
                if label + "_ratio" in pair
            ]
            print(f"{name} {key_text(key)}: " + ", ".join(ratios), flush=True)
            _write_json(out, result)
            del args
            _free()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=("tune", "dispatch", "baseline", "race", "final"))
    parser.add_argument("--store")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--races", type=Path)
    parser.add_argument("--runs", type=Path)
    parser.add_argument("--examples", default=",".join(EXAMPLES))
    parser.add_argument("--keys", type=int, default=N_KEYS)
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    parser.add_argument("--subset", type=int, default=32)
    parser.add_argument("--commit", default="")
    parser.add_argument("--step", choices=("compile", "time", "both"), default="both")
    parser.add_argument("--heldout", action="store_true",
                        help=f"the keys of {HELDOUT.name}, not the examples' KEYS")
    parser.add_argument("--keys-file", type=Path,
                        help="the keys of this TOML file (a list per example, as in the held-out files)")
    a = parser.parse_args(argv)
    if a.heldout and a.keys_file:
        parser.error("--heldout and --keys-file both name the keys; give one")
    KEYSET["file"] = HELDOUT if a.heldout else a.keys_file
    examples = a.examples.split(",")
    if a.phase == "tune":
        tune(a.store, a.out, examples, a.keys)
    elif a.phase == "dispatch":
        dispatch(a.store, a.out, examples, a.keys)
    elif a.phase == "baseline":
        baseline(a.out, examples, a.subset)
    elif a.phase == "race":
        global RACE_PROTOCOL
        RACE_PROTOCOL = _race_protocol()
        race(a.out, examples, a.keys, a.workers, a.step)
    else:
        final(a.races, a.runs, a.out, examples, a.keys, store=a.store)


if __name__ == "__main__":
    main()
