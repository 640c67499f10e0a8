"""How the configs aiter ships for its Triton GEMM meet flysearch's ``aiter_triton_gemm`` space.

    python lab/benchmarks/aiter_triton_coverage.py --compile --sample 200 \
        --out lab/benchmarks/results/aiter_triton_coverage.md

Data: every config of ``_gemm_a16_w16_kernel`` in the installed amd-aiter's Triton GEMM configs
(``{MI300X,MI350X}-GEMM-A16W16[-N=..-K=..].json``), read by
``_aiter_shipped.shipped_configs``. For each: is every value inside the space's value
sets, and which rules reject it at its own M bucket (``_aiter_shipped.coverage``;
a bucket is checked at its bound, ``any`` at M=16384; configs of the default file, which serves every
N and K, only against the rules that read neither). Then the space's size and feasible counts at a
few shapes.

``--compile`` compiles each shipped config for its arch through the ``triton-amd-compile`` evaluator
(:class:`flysearch.evaluators.TritonAmdCompileEvaluator`: the installed Triton's AMD backend on a CPU,
nothing launched, specialized by Triton's own launch binder as aiter's wrapper would launch it at the
bucket's M), and sets the analytic LDS and register rules beside what the compiler did: the compiled
LDS against ``lds_bytes``, VGPR/AGPR counts and VGPR spills against ``registers_fit``; and it checks
that the configs ``waves_per_eu_honored`` alone rejects compile to the code of their
``waves_per_eu=0`` twin (the evaluator's ``code_sha256``). ``--sample N`` compiles N configs drawn
(seeded) from the space among those every other rule keeps at 4096^3, each at its own
``waves_per_eu``, and counts how often ``registers_fit`` agrees with the compiler's spills.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from _aiter_shipped import ANY_M as AITER_TRITON_ANY_M  # noqa: E402
from _aiter_shipped import Coverage as AiterTritonCoverage  # noqa: E402
from _aiter_shipped import ShippedConfig as AiterShippedConfig  # noqa: E402
from _aiter_shipped import coverage as aiter_triton_coverage  # noqa: E402
from _aiter_shipped import shipped_configs as aiter_triton_shipped  # noqa: E402

from flysearch.compare import code_commit  # noqa: E402
from flysearch.evaluators import TritonAmdCompileEvaluator  # noqa: E402
from flysearch.kernels import (  # noqa: E402
    aiter_triton_lds_bytes,
    aiter_triton_register_demand,
    aiter_triton_space,
    aiter_triton_vgpr_budget,
    aiter_version,
)
from flysearch.space import Config, Shape, get_arch  # noqa: E402
from flysearch.tables import Outcome  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

ARCHS = ("gfx942", "gfx950")
SHAPES = (Shape(1, 4096, 4096), Shape(16, 4096, 4096), Shape(256, 4096, 4096), Shape(4096, 4096, 4096),
          Shape(16384, 4096, 4096))
SAMPLE_SHAPE = Shape(4096, 4096, 4096)
Job = tuple[str, Config, Shape]  # (arch, config, shape)


# -- compiling aiter's kernel on a CPU -----------------------------------------------------------


def _compile_all(jobs: list[Job], workers: int) -> list[dict[str, Any]]:
    """Compile each job through the ``triton-amd-compile`` evaluator (one per arch; the jobs of one
    shape at a time on all its workers): the evaluator's resources and ``seconds`` per job, or
    ``error`` (the evaluator's detail) for a compile that failed."""
    out: dict[int, dict[str, Any]] = {}
    for arch in ARCHS:
        mine = [i for i, (a, _, _) in enumerate(jobs) if a == arch]
        if not mine:
            continue
        with TritonAmdCompileEvaluator(arch, workers=workers) as ev:
            for shape in dict.fromkeys(jobs[i][2] for i in mine):
                group = [i for i in mine if jobs[i][2] == shape]
                for i, c in zip(group, ev.compile_many([jobs[i][1] for i in group], shape), strict=True):
                    failed = c.outcome is Outcome.COMPILE_FAILED
                    out[i] = {"error": c.detail} if failed else {**ev.resources(c), "seconds": c.compile_s}
    return [out[i] for i in range(len(jobs))]


def _fits(config: Config, arch: Any) -> bool:
    return aiter_triton_register_demand(config, arch) <= aiter_triton_vgpr_budget(config, arch)


def _shape_of(s: AiterShippedConfig) -> Shape:
    """Where a shipped config is compiled: its bucket's M; N = K = 4096 for the default file."""
    return Shape(s.eval_M, s.N or 4096, s.K or 4096)


# -- the report ----------------------------------------------------------------------------------


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


def _names(results: list[Any], limit: int = 40) -> str:
    names = [r.shipped.name.replace("-GEMM-A16W16", "") for r in results]
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _space_lines() -> list[str]:
    space = aiter_triton_space()
    values = "; ".join(f"{p.name} {', '.join(repr(v) if v == '' else str(v) for v in p.values)}"
                       for p in space.params)
    return [f"Space `{space.name}`: {space.size} configs, {len(space.constraints)} rules. "
            f"Values: {values}.", ""]


def _coverage_lines(cov: AiterTritonCoverage) -> list[str]:
    lines = ["## Shipped configs against the space", "",
             "Rules are checked at each config's own bucket: `M_LEQ_b` at M=b, `any` at "
             f"M={AITER_TRITON_ANY_M}, a key aiter never reads at the M it names; N and K from the file "
             "name. "
             "The default file (`{dev}-GEMM-A16W16.json`) serves every N and K, so its configs are "
             "checked only against the rules that read neither (the others are *n/a*).", "",
             "| arch | files | shipped configs | inside the value sets | pass every rule checked | "
             "checked against N/K rules | outside the value sets |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for arch in ARCHS:
        part = cov.for_arch(arch)
        files = {r.shipped.file for r in part.results}
        outside = ", ".join(f"{name} ({n})" for name, n in part.outside_values().items()) or "none"
        lines.append(f"| {arch} | {len(files)} | {len(part.results)} | "
                     f"{sum(r.inside for r in part.results)} | {sum(r.passes for r in part.results)} | "
                     f"{sum(not r.not_applicable for r in part.results)} | {outside} |")
    for arch in ARCHS:
        part = cov.for_arch(arch)
        lines += ["", f"### {arch}: misses by rule", "", "| rule | rejects | configs (file:bucket) |",
                  "|---|---:|---|"]
        for rule, n in part.misses().items():
            hit = [r for r in part.results if rule in r.failed]
            na = sum(rule in r.not_applicable for r in part.results)
            label = f"{n}" + (f" (n/a for {na})" if na else "")
            lines.append(f"| {rule} | {label} | {_names(hit) if hit else ''} |")
        twins = _twins(part)
        if twins:
            lines += ["", f"Of the configs rejected only by waves_per_eu_honored, {twins[0]} of {twins[1]} "
                      "have a waves_per_eu=0 twin (the same compiled code) that passes every rule checked."]
        outside = [r for r in part.results if r.outside]
        if outside:
            lines += ["", "Outside the value sets: " + "; ".join(
                f"{r.shipped.name} ({', '.join(f'{k}={v}' for k, v in r.outside.items())})" for r in outside)]
    return lines


def _twins(cov: AiterTritonCoverage) -> tuple[int, int] | None:
    """(how many, of how many) configs rejected by waves_per_eu_honored alone have a twin with
    waves_per_eu=0 that passes every rule they were checked against."""
    only = [r for r in cov.results if r.failed == ("waves_per_eu_honored",) and r.inside]
    if not only:
        return None
    space = aiter_triton_space()
    good = 0
    for r in only:
        twin = Config.from_dict({**r.shipped.params, "waves_per_eu": 0})
        arch = get_arch(r.shipped.arch)
        good += all(c(twin, r.shape, arch) for c in space.constraints if c.name not in r.not_applicable)
    return good, len(only)


def _loader_lines(shipped: list[AiterShippedConfig]) -> list[str]:
    unread = [s for s in shipped if s.m_range is None]
    files = sorted({s.file for s in shipped})
    no_any = [f for f in files if not any(s.file == f and s.bucket == "any" for s in shipped)]
    lines = ["", "## What aiter's loader does with the files", "",
             "aiter's `_get_config(M, N, K)` takes the first `M_LEQ_b` key present with M <= b "
             "(b in 4, 8, ..., 8192), else `any`; it fills `NUM_KSPLIT=1` when absent and lowers "
             "`BLOCK_SIZE_K` to fit `cdiv(K, NUM_KSPLIT)`; Triton fills the absent options "
             "(`kpack=1`, ...). The shipped params above are what the kernel gets.", ""]
    if unread:
        lines.append("- keys aiter never reads: " + ", ".join(s.name for s in unread))
    for f in no_any:
        bounds = [s.m_range[1] for s in shipped if s.file == f and s.m_range and s.m_range[1]]
        lines.append(f"- {f} has no `any` key: aiter's `_get_config` raises KeyError for M > {max(bounds)}")
    defaults: dict[str, int] = {}
    for s in shipped:
        for key, who in s.defaults.items():
            defaults[f"{key} ({who})"] = defaults.get(f"{key} ({who})", 0) + 1
    lines.append("- defaults filled: " + (", ".join(f"{k} in {n}" for k, n in defaults.items()) or "none"))
    return lines


def _feasible_lines() -> list[str]:
    space = aiter_triton_space()
    lines = ["", "## Feasible configs at a few shapes", "",
             f"The space has {space.size} configs before the rules. Cuts are charged to the first rule "
             "that rejects a config (rules in the space's order).", "",
             "| arch | shape | regime | feasible | enumerate s | cuts |", "|---|---|---|---:|---:|---|"]
    for arch in ARCHS:
        for shape in SHAPES:
            start = time.perf_counter()
            result = space.enumerate(shape, get_arch(arch), allow_empty=True)
            cuts = ", ".join(f"{name} -{n}" for name, n in result.removed.items() if n)
            lines.append(f"| {arch} | {shape.M}x{shape.N}x{shape.K} | {shape.regime} | "
                         f"{len(result.feasible)} | {time.perf_counter() - start:.1f} | {cuts} |")
    return lines


def _compile_lines(cov: AiterTritonCoverage, workers: int) -> list[str]:
    shipped = [r.shipped for r in cov.results]
    jobs = [(s.arch, Config.from_dict(s.params), _shape_of(s)) for s in shipped]
    out = _compile_all(jobs, workers)
    lines = ["", "## Compiled (Triton's AMD backend on this CPU)", "",
             "Each shipped config compiled for its arch at (bucket M, N, K), N = K = 4096 for the "
             "default file, through the triton-amd-compile evaluator (specialized by Triton's launch "
             "binder as aiter's wrapper launches it). *spilled*: VGPR spills.", "",
             "| arch | compiled | LDS formula = compiled LDS | spilled | registers_fit rejects | "
             "of them spilled |", "|---|---:|---:|---:|---:|---:|"]
    rows = []
    for arch in ARCHS:
        pairs = [(s, o) for s, o in zip(shipped, out, strict=True) if s.arch == arch and "error" not in o]
        equal = sum(o["lds_bytes"] == aiter_triton_lds_bytes(Config.from_dict(s.params)) for s, o in pairs)
        spilled = [(s, o) for s, o in pairs if o["vgpr_spills"] > 0]
        profile = get_arch(arch)
        rejected = [(s, o) for s, o in pairs if not _fits(Config.from_dict(s.params), profile)]
        lines.append(f"| {arch} | {len(pairs)} | {equal} | {len(spilled)} | {len(rejected)} | "
                     f"{sum(o['vgpr_spills'] > 0 for _, o in rejected)} |")
        for s, o in spilled + [p for p in rejected if p not in spilled]:
            c = Config.from_dict(s.params)
            rows.append(f"| {s.name} | {o['vgpr']} + {o['agpr']} | {o['vgpr_spills']} | "
                        f"{aiter_triton_vgpr_budget(c, profile)} | "
                        f"{aiter_triton_register_demand(c, profile):.0f} |")
    only = [(s, o) for r, o in zip(cov.results, out, strict=True) if r.failed == ("waves_per_eu_honored",)
            and "error" not in o for s in [r.shipped]]
    twins = _compile_all([(s.arch, Config.from_dict({**s.params, "waves_per_eu": 0}), _shape_of(s))
                          for s, _ in only], workers)
    same = sum(o["code_sha256"] == t.get("code_sha256") for (_, o), t in zip(only, twins, strict=True))
    lines += ["", f"waves_per_eu_honored: {same} of the {len(only)} shipped configs it alone rejects compile "
              "to the same code as their waves_per_eu=0 twin (comments and the hint's own lines aside)."]
    errors = [f"{s.name}: {o['error']}" for s, o in zip(shipped, out, strict=True) if "error" in o]
    if errors:
        lines += ["", "Compile errors: " + "; ".join(errors)]
    if rows:
        lines += ["", "Configs that spilled or that registers_fit rejects:", "",
                  "| config | VGPR + AGPR | spilled VGPRs | budget | demand |", "|---|---:|---:|---:|---:|",
                  *rows]
    return lines


def _sample(n: int, seed: int) -> list[tuple[str, Config]]:
    """*n* configs drawn from the space that the rules charged before registers_fit keep at
    SAMPLE_SHAPE on an arch drawn with them (the configs the rule decides on when the space is
    enumerated); NUM_KSPLIT and GROUP_SIZE_M at 1 (neither touches registers)."""
    space = aiter_triton_space()
    rng = random.Random(seed)
    names = [c.name for c in space.constraints]
    others = space.constraints[:names.index("registers_fit")]
    picked: list[tuple[str, Config]] = []
    seen: set[tuple[str, str]] = set()
    while len(picked) < n:
        arch = rng.choice(ARCHS)
        values = {p.name: rng.choice(p.values) for p in space.params}
        config = Config.from_dict({**values, "NUM_KSPLIT": 1, "GROUP_SIZE_M": 1})
        if (arch, config.key) in seen or not all(c(config, SAMPLE_SHAPE, get_arch(arch)) for c in others):
            continue
        seen.add((arch, config.key))
        picked.append((arch, config))
    return picked


def _sample_lines(n: int, seed: int, workers: int) -> list[str]:
    picked = _sample(n, seed)
    out = _compile_all([(arch, c, SAMPLE_SHAPE) for arch, c in picked], workers)
    lines = ["", "## registers_fit against the compiler on a fresh sample", "",
             f"{n} configs drawn (seed {seed}) among those the rules before registers_fit keep at "
             f"{SAMPLE_SHAPE.M}x{SAMPLE_SHAPE.N}x{SAMPLE_SHAPE.K}, each compiled at its own waves_per_eu. "
             "*spilled*: VGPR spills; *wrongly rejected*: the rule rejects a config that compiled "
             "without spills.", "",
             "| arch | compiled | spilled | rule rejects | wrongly rejected | spilled but kept |",
             "|---|---:|---:|---:|---:|---:|"]
    wrong = []
    for arch in ARCHS:
        pairs = [(c, o) for (a, c), o in zip(picked, out, strict=True) if a == arch and "error" not in o]
        profile = get_arch(arch)
        reject = [(c, o) for c, o in pairs if not _fits(c, profile)]
        wrong += [(arch, c, o) for c, o in reject if o["vgpr_spills"] == 0]
        lines.append(f"| {arch} | {len(pairs)} | {sum(o['vgpr_spills'] > 0 for _, o in pairs)} | "
                     f"{len(reject)} | {sum(o['vgpr_spills'] == 0 for _, o in reject)} | "
                     f"{sum(o['vgpr_spills'] > 0 for c, o in pairs if (c, o) not in reject)} |")
    for arch, c, o in wrong:
        lines.append(f"\nwrongly rejected on {arch}: {c.key} (VGPR {o['vgpr']} + AGPR {o['agpr']}, budget "
                     f"{aiter_triton_vgpr_budget(c, get_arch(arch))}, "
                     f"demand {aiter_triton_register_demand(c, get_arch(arch)):.0f})")
    errors = sum("error" in o for o in out)
    if errors:
        lines.append(f"\n{errors} of the sample failed to compile.")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=None, help="Write the report here (Markdown).")
    parser.add_argument("--compile", action="store_true", help="Compile every shipped config (CPU).")
    parser.add_argument("--sample", type=int, default=0, help="Compile this many sampled configs (CPU).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if aiter_version() is None:
        sys.exit("amd-aiter is not installed; pip install amd-aiter")
    shipped = aiter_triton_shipped()
    cov = aiter_triton_coverage(shipped)
    versions = (f"Python {platform.python_version()}, amd-aiter {aiter_version()}, "
                f"triton {_version('triton')}, optuna {_version('optuna')}")
    lines = [
        "# aiter's Triton GEMM configs against the aiter_triton_gemm space", "",
        f"- command: `{' '.join(['python', *sys.argv])}`",
        f"- commit: {code_commit(ROOT, outputs=[RESULTS])}",
        f"- hardware: {platform.machine()} CPU, no GPU (configs are read, checked and compiled, never run)",
        f"- versions: {versions}",
        f"- date: {dt.date.today().isoformat()}", "",
        *_space_lines(), *_coverage_lines(cov), *_loader_lines(shipped), *_feasible_lines(),
    ]
    if args.compile:
        lines += _compile_lines(cov, args.workers)
    if args.sample:
        lines += _sample_lines(args.sample, args.seed, args.workers)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
