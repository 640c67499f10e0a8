"""Where a ``compare`` run's time goes, and the most any change of flysearch's own code can save
while the summaries stay identical.

    OMP_NUM_THREADS=1 python lab/benchmarks/compare_time.py \\
        --out lab/benchmarks/results/compare_time.md                                # 2-core machine, ~10 min

For each experiment file (default: the five H200 regime files), seed 0 is run by
:func:`flysearch.compare.run_experiment` with one worker (in this process, one run after the other,
into a temporary folder; the runs of the other seeds cost about the same: same samplers, tables and
budget). Each run's time is split in three:

* **prior fits**: fitting the leave-one-table-out cost-model priors (scikit-learn's
  ``HistGradientBoostingRegressor``), once per scored table, as ``compare`` does;
* **the samplers' own time**: every call of a sampler's methods (``infer_relative_search_space``,
  ``sample_relative``, ``sample_independent``, ``before_trial``, ``after_trial``), counted once where
  one sampler calls another;
* **the rest**: flysearch's study loop (Optuna's ask/tell on an in-memory storage, the analytic
  pruning, the replay lookup, the trial records), and the work of flysearch's model samplers that
  rank candidates outside those methods (``costmodel``, ``surrogate``, ``spreadforest``): an upper
  bound on the loop's cost.

A change that keeps the summaries identical must keep every suggestion, so it can remove at most
*the rest* (a cache of fitted priors across runs would not count: a first run still fits them). The
bound on the speed-up is then (prior fits + samplers + rest) / (prior fits + samplers), on any
number of cores, since more workers divide both sides alike.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime as dt
import functools
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
STUDIES = ROOT / "lab" / "studies"
sys.path.insert(0, str(ROOT))

from flysearch.compare import code_commit, load_experiment, run_experiment  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

EXPERIMENTS = ("compare_h200_decode", "compare_h200_small_m", "compare_h200_k_heavy", "compare_h200_prefill",
               "compare_h200_square")
_METHODS = ("infer_relative_search_space", "sample_relative", "sample_independent", "before_trial",
            "after_trial")


class _SamplerClock:
    """Time spent inside samplers' methods (outermost calls only)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._depth = 0
        self._wrapped: list[tuple[type, str, Any]] = []

    def wrap(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return fn(*args, **kwargs)
            self._depth += 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0
                self._depth -= 1

        return timed

    def install(self) -> None:
        """Wrap the methods of every sampler class known once flysearch's samplers are imported."""
        import optuna

        import flysearch.samplers  # noqa: F401  (registers flysearch's sampler classes)

        seen: set[type] = set()
        todo = [optuna.samplers.BaseSampler]
        while todo:
            cls = todo.pop()
            if cls in seen:
                continue
            seen.add(cls)
            todo.extend(cls.__subclasses__())
            for name in _METHODS:
                if name in vars(cls):
                    self._wrapped.append((cls, name, vars(cls)[name]))
                    setattr(cls, name, self.wrap(vars(cls)[name]))

    def uninstall(self) -> None:
        """Put back the methods :meth:`install` wrapped."""
        for cls, name, original in reversed(self._wrapped):
            setattr(cls, name, original)
        self._wrapped.clear()


def measure(path: Path, clock: _SamplerClock, fits: _SamplerClock, out: Path) -> dict[str, Any]:
    """Seed 0 of experiment *path*, run by run in this process: prior fits, samplers' time and the
    total, per sampler."""
    exp = load_experiment(path)
    seeds = len(exp.seeds)
    exp = dataclasses.replace(exp, seeds=exp.seeds[:1], output=str(out / exp.name))
    per: dict[str, dict[str, float]] = collections.defaultdict(
        lambda: {"runs": 0, "total": 0.0, "sampler": 0.0, "fit": 0.0})
    mark = [time.perf_counter(), clock.seconds, fits.seconds]

    def progress(done: int, total: int, run_id: str) -> None:
        now = [time.perf_counter(), clock.seconds, fits.seconds]
        if run_id:  # the run just stored took the time since the last one (its prior fit included)
            row = per[run_id.split("|")[1]]
            row["runs"] += 1
            row["total"] += now[0] - mark[0]
            row["sampler"] += now[1] - mark[1]
            row["fit"] += now[2] - mark[2]
        mark[:] = now

    run_experiment(exp, workers=1, progress=progress)
    return {"experiment": exp.name, "seeds": seeds, "fit_s": sum(s["fit"] for s in per.values()),
            "samplers": dict(per)}


def _row(name: str, fit: float, sampler: float, whole: float, seeds: int | None) -> str:
    """A table row: seed 0's parts, and the bound for the file's *seeds* (fits once, runs per seed)."""
    rest = whole - sampler - fit
    cells = [name, *(f"{x:.1f}" for x in (fit, sampler, rest, whole)), f"{100 * rest / whole:.1f}%"]
    if seeds is not None:
        full, kept = fit + seeds * (whole - fit), fit + seeds * sampler
        cells += [str(seeds), f"{full:.0f}", f"{full / kept:.2f}"]
    else:
        cells += ["", "", ""]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", default=",".join(EXPERIMENTS), help="experiment names in lab/studies/")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    missing = [n for n in args.experiments.split(",") if not (STUDIES / f"{n}.toml").is_file()]
    if missing:
        ap.error(f"no experiment file lab/studies/<name>.toml for: {', '.join(missing)}")
    if platform.machine() == "x86_64" and "OPENBLAS_CORETYPE" not in os.environ:
        # compare's own setting for its workers (flysearch.compare's portable BLAS kernel): with it
        # the runs execute in this process, where their time can be split.
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "OPENBLAS_CORETYPE": "Haswell"})
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    import flysearch.costmodel

    clock, fits = _SamplerClock(), _SamplerClock()
    clock.install()
    flysearch.costmodel.fit_prior = fits.wrap(flysearch.costmodel.fit_prior)  # compare imports it per fit
    started = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.experiments.split(","):
            results.append(measure(STUDIES / f"{name}.toml", clock, fits, Path(tmp)))
            r = results[-1]
            print(f"{name}: prior fits {r['fit_s']:.1f} s; runs and fits "
                  f"{sum(s['total'] for s in r['samplers'].values()):.1f} s", flush=True)
    load = os.getloadavg()[0]
    lines = [
        "# Where a compare run's time goes", "",
        f"- command: `OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')} python "
        f"{' '.join(['lab/benchmarks/compare_time.py', *sys.argv[1:]])}`",
        f"- commit: {code_commit(ROOT, outputs=[RESULTS])}",
        f"- hardware: {platform.machine()}, {os.cpu_count()} cores; load average at the end {load:.2f}",
        f"- versions: Python {platform.python_version()}, Optuna {optuna.__version__}",
        f"- date: {dt.date.today().isoformat()}; {time.perf_counter() - started:.0f} s", "",
        "Seed 0 of each experiment, every run in one process, one after the other (seconds). *prior "
        "fits*: the leave-one-table-out cost-model priors, one per scored table; *samplers*: inside the "
        "samplers' methods; *rest*: flysearch's study loop around them (ask/tell on an in-memory "
        "storage, pruning, replay, records). *bound*: the largest speed-up a change of flysearch's own "
        "code can give while every suggestion, and so every summary, stays the same, for the file's "
        "seeds (priors fitted once, the runs once per seed): (fits + seeds x (samplers + rest)) / "
        "(fits + seeds x samplers); *whole file*: that numerator, serial seconds.", "",
        "| experiment | prior fits | samplers | rest | total | rest share | seeds | whole file | bound |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    tot = [0.0, 0.0, 0.0]
    full = [0.0, 0.0]
    for r in results:
        sampler = sum(s["sampler"] for s in r["samplers"].values())
        whole = sum(s["total"] for s in r["samplers"].values())
        lines.append(_row(r["experiment"], r["fit_s"], sampler, whole, r["seeds"]))
        tot = [tot[0] + r["fit_s"], tot[1] + sampler, tot[2] + whole]
        full = [full[0] + r["fit_s"] + r["seeds"] * (whole - r["fit_s"]),
                full[1] + r["fit_s"] + r["seeds"] * sampler]
    lines.append(_row("**all**", *tot, None))
    lines += ["", f"All files with their seeds: {full[0]:.0f} s serial, of which at most "
              f"{full[0] - full[1]:.0f} s is flysearch's loop; the bound on the speed-up with identical "
              f"summaries is **{full[0] / full[1]:.2f}**."]
    lines += ["", "Per sampler over all experiments (runs of seed 0; seconds):", "",
              "| sampler | runs | total | prior fits | inside the sampler | rest | rest per run |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    merged: dict[str, dict[str, float]] = collections.defaultdict(
        lambda: {"runs": 0, "total": 0.0, "sampler": 0.0, "fit": 0.0})
    for r in results:
        for label, s in r["samplers"].items():
            for k in s:
                merged[label][k] += s[k]
    for label, s in sorted(merged.items(), key=lambda kv: -kv[1]["total"]):
        rest = s["total"] - s["sampler"] - s["fit"]
        cells = [label, str(int(s["runs"])), *(f"{s[k]:.1f}" for k in ("total", "fit", "sampler")),
                 f"{rest:.1f}", f"{rest / max(s['runs'], 1):.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
