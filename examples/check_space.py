"""Check the examples' spaces: feasible configs per key, and how a random sample of them fares.

    python examples/check_space.py                 # feasible configs per (example, key) on sm_90
    python examples/check_space.py --compile 40    # + compile 40 sampled configs per example for
                                                   #   sm_90 on this machine (no GPU needed)
    python examples/check_space.py --run 40        # on a GPU: launch 40 sampled configs per key
                                                   #   and compare with the reference

A sampled config is a feasible config of a key drawn at random among the example's keys. It is
compiled with the signature, constexprs and alignment attributes that launching it with that key's
arguments would give (Triton's own binder, fed meta tensors), so it is the binary the launch runs.
A compiled config *launches* when its shared memory fits one block (227 KiB on sm_90); its
registers and spill bytes are read from the cubin.
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing
import random
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the examples import as examples.<name>, as from the repo root

EXAMPLES = ("softmax", "layernorm", "matmul")
ARCH = "sm_90"


def _example(name: str) -> ModuleType:
    return importlib.import_module(f"examples.{name}")


def feasible(module: ModuleType, key: Mapping[str, int]) -> tuple[list[Any], Counter[str]]:
    """The configs of *module*'s space that every constraint keeps for *key* on sm_90, and how many
    each constraint was the first to reject."""
    from flysearch import get_arch

    arch = get_arch(ARCH)
    kept, removed = [], Counter[str]()
    for config in module.SPACE.configs():
        reason = module.SPACE.reject_reason(config, key, arch)
        if reason is None:
            kept.append(config)
        else:
            removed[reason] += 1
    return kept, Counter({c.name: removed[c.name] for c in module.SPACE.constraints if removed[c.name]})


def sample(module: ModuleType, n: int, seed: int = 0) -> list[tuple[dict[str, int], Any]]:
    """*n* distinct (key, config) pairs: a key drawn at random, then one of its feasible configs."""
    rng = random.Random(seed)
    by_key = [(key, feasible(module, key)[0]) for key in module.KEYS]
    pairs: dict[tuple[int, str], tuple[dict[str, int], Any]] = {}
    while len(pairs) < n:
        i = rng.randrange(len(by_key))
        key, configs = by_key[i]
        config = rng.choice(configs)
        pairs[(i, config.key)] = (key, config)
    return list(pairs.values())


def compile_for_sm90(name: str, key: Mapping[str, int], values: Mapping[str, Any]) -> dict[str, Any]:
    """Compile example *name*'s kernel for *key* and the config *values*, as a launch would, for
    sm_90; its compile seconds, shared memory, registers and spill bytes, or the error."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    from flysearch.kernels import compiled_resources

    fn = _example(name).kernel_fn
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    kwargs = {**_example(name).make_args(key, "meta"), **values}
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound, specialization, options = binder(**kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, options)
    start = time.perf_counter()
    try:
        compiled = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=target,
                                  options=options.__dict__)
    except Exception as exc:  # a failed compile is a result here
        return {"ok": False, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"}
    return {"ok": True, "seconds": time.perf_counter() - start, **compiled_resources(compiled)}


def _pool(workers: int) -> ProcessPoolExecutor:
    # Spawned, not forked: the parent may hold a CUDA context.
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


def _compile_job(job: tuple[str, dict[str, int], dict[str, Any]]) -> dict[str, Any]:
    return compile_for_sm90(*job)


def report_feasible() -> None:
    for name in EXAMPLES:
        module = _example(name)
        print(f"{name}: {module.SPACE.size} configs, key {module.KEY}")
        for key in module.KEYS:
            kept, removed = feasible(module, key)
            cuts = ", ".join(f"{c} -{n}" for c, n in removed.items())
            print(f"  {key}: {len(kept)} feasible ({cuts})")


def report_compiles(n: int, workers: int) -> None:
    from flysearch import get_arch

    limit = get_arch(ARCH).max_lds_per_block
    for name in EXAMPLES:
        pairs = sample(_example(name), n)
        jobs = [(name, key, config.as_dict()) for key, config in pairs]
        with _pool(workers) as pool:
            results = list(pool.map(_compile_job, jobs))
        ok = [r for r in results if r["ok"]]
        fits = [r for r in ok if r["shared"] <= limit]
        spills = [r for r in ok if r["spills"] is None or r["spills"] > 0]
        if ok:
            seconds = sorted(r["seconds"] for r in ok)
            registers = [r["registers"] for r in ok if r["registers"] is not None]
            print(f"{name}: {len(ok)}/{n} compile for {ARCH}, {len(fits)}/{n} fit shared memory "
                  f"(max {max(r['shared'] for r in ok)} B), {len(spills)} spill or unread; registers "
                  f"{min(registers, default=0)}..{max(registers, default=0)}; compile s median "
                  f"{seconds[len(seconds) // 2]:.2f} max {seconds[-1]:.2f}")
        else:
            print(f"{name}: 0/{n} compile for {ARCH}")
        for (key, config), r in zip(pairs, results, strict=True):
            if not r["ok"] or r["shared"] > limit or r["spills"] != 0:
                print(f"  {key} {config.key}: {r}")


def _run_key(module: ModuleType, key: Mapping[str, int], configs: Sequence[Any], time_them: bool) -> str:
    """Launch each of *configs* with *key*'s arguments on the GPU and check its outputs."""
    import torch
    import triton.testing

    args = module.make_args(key, "cuda")
    expected = module.reference(**args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    outcome: Counter[str] = Counter()
    times: list[float] = []
    for config in configs:
        values = config.as_dict()
        for out in module.OUTPUTS:
            args[out].fill_(float("nan"))
        try:
            module.launch(module.kernel_fn, args, **values)
            torch.cuda.synchronize()
        except Exception as exc:  # a failed launch is a result here
            outcome["failed"] += 1
            print(f"  {key} {config.key}: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
            continue
        right = all(torch.allclose(args[o], e, rtol=module.RTOL, atol=module.ATOL)
                    for o, e in zip(module.OUTPUTS, expected, strict=True))
        outcome["right" if right else "wrong"] += 1
        if not right:
            print(f"  {key} {config.key}: wrong result")
        elif time_them:
            times.append(triton.testing.do_bench(lambda v=values: module.launch(module.kernel_fn, args, **v)))
    spread = (f", ms best {min(times):.3f} median {sorted(times)[len(times) // 2]:.3f} worst {max(times):.3f}"
              if times else "")
    return f"{dict(outcome)} of {len(configs)}{spread}"


def report_runs(n: int, keys: Sequence[int] | None, time_them: bool, workers: int) -> None:
    """Launch *n* sampled feasible configs of each key on the GPU; count right, wrong and failed."""
    import torch

    for name in EXAMPLES:
        module = _example(name)
        chosen = [module.KEYS[i] for i in keys] if keys is not None else module.KEYS
        plan = []
        for i, key in enumerate(chosen):
            configs = feasible(module, key)[0]
            plan.append((key, random.Random(i).sample(configs, min(n, len(configs)))))
        # Fill Triton's cache on every core first; the launches below then only load binaries.
        jobs = [(name, key, c.as_dict()) for key, configs in plan for c in configs]
        with _pool(workers) as pool:
            failed = sum(not r["ok"] for r in pool.map(_compile_job, jobs))
        print(f"{name}: {failed} of {len(jobs)} compiles failed")
        for key, configs in plan:
            print(f"{name} {key}: {_run_key(module, key, configs, time_them)}")
            torch.cuda.empty_cache()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile", type=int, metavar="N", help="compile N sampled configs per example")
    parser.add_argument("--run", type=int, metavar="N", help="launch N sampled configs per key on a GPU")
    parser.add_argument("--keys", type=int, nargs="*", help="with --run: the indices of the keys to run")
    parser.add_argument("--time", action="store_true", help="with --run: time the right configs")
    parser.add_argument("--workers", type=int, default=2, help="compile processes")
    opts = parser.parse_args()
    report_feasible()
    if opts.compile:
        report_compiles(opts.compile, opts.workers)
    if opts.run:
        report_runs(opts.run, opts.keys, opts.time, opts.workers)


if __name__ == "__main__":
    main()
