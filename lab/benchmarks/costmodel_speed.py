"""Speed of the cost model: training a prior, and the sampler's milliseconds per suggestion.

    OMP_NUM_THREADS=1 python lab/benchmarks/costmodel_speed.py

* **Suggestions**: replays dedispersion/MI250X (11,130 feasible configs) with a prior trained on
  dedispersion/A100 and times every suggestion of a 100-compile study (the forest is refitted and
  every unevaluated config scored each time). Prints the median, 90th percentile and max, and the
  number of candidates; then again with a prior that holds two device sources (the A100 table
  under two device names: this times the sources' portfolio start and then weighing them, or
  following one, each suggestion; not their quality), and
  with the prior walked (its provenance made to name the held-out table's space and arch, so every
  other suggestion is the cost-model sampler's ``prior_kriging``; again timing, not quality).
* **Set-up**: the sampler's work before its first suggestion on the same 11,130 candidates
  (the features of every candidate and the prior's score of each), nine times, median, as the
  first study of these candidates in a process; again for another seed's order of them (the
  process keeps their features); and the features alone (:func:`flysearch.costmodel.feature_columns`).
* **Training**: trains a prior (:func:`flysearch.costmodel.fit_prior`, default settings) on 20
  tables of 4,000 configs each, drawn (seeded, without replacement within a table) from the four
  benchmark_hub tables, five from each; three times, printing each time and the median.
"""

from __future__ import annotations

import datetime
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import optuna  # noqa: E402
from costmodel_eval import hub_tables  # noqa: E402  (this folder is on sys.path)

from flysearch.costmodel import Prior, feature_columns, fit_prior, table_arch, target_key  # noqa: E402
from flysearch.evaluators import ReplayEvaluator  # noqa: E402
from flysearch.samplers import CostModelSampler, SearchContext, clear_candidate_features  # noqa: E402
from flysearch.study import StudySpec, run_study  # noqa: E402
from flysearch.tables import GroundTruth, space_for_table  # noqa: E402


def _training_tables(sources: list[GroundTruth], n_tables: int = 20,
                     n_configs: int = 4000) -> list[GroundTruth]:
    rng = random.Random(0)
    tables = []
    for i in range(n_tables):
        source = sources[i % len(sources)]
        rows = rng.sample(list(source.rows.values()), n_configs)
        tables.append(GroundTruth(replace(source.meta, name=f"{source.name}#{i}"), {r.key: r for r in rows}))
    return tables


def training_seconds(sources: list[GroundTruth], repeats: int = 3) -> tuple[list[float], int]:
    """Seconds to fit a prior on 20 training tables drawn from *sources*, *repeats* times; and their
    row count."""
    tables = _training_tables(sources)
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        fit_prior(tables)
        seconds.append(time.perf_counter() - start)
    return seconds, sum(len(t.rows) for t in tables)


def main() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    print(f"{datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores, CPU replay")
    sources = hub_tables()
    seconds, rows = training_seconds(sources)
    print(f"training on 20 tables, {rows} configs: " + ", ".join(f"{s:.1f}" for s in seconds)
          + f" s; median {statistics.median(seconds):.1f} s")
    by_name = {t.name: t for t in sources}
    train, held = by_name["dedispersion_milo/A100"], by_name["dedispersion_milo/MI250X"]
    twin = GroundTruth(replace(train.meta, name=f"{train.name}#twin", device=f"{train.meta.device} (twin)"),
                       train.rows)
    single = fit_prior([train])
    # A prior whose provenance names the held-out table's space and arch is walked: half of the
    # suggestions are then prior_kriging's instead of the forest's (timing only: it is not one).
    target = target_key(space_for_table(held).name, table_arch(held).name)
    walked = replace(single, provenance={**single.provenance, "targets": [target]})
    for label, prior in (("", single), (" (two device sources)", fit_prior([train, twin])),
                         (" (walked, as if trained on this space and arch)", walked)):
        times = suggestion_ms(held, prior)
        print(f"candidates {len(held.rows)}; suggestions {len(times)}; ms per suggestion{label}: median "
              f"{statistics.median(times):.1f}, p90 {times[int(0.9 * len(times))]:.1f}, max {times[-1]:.1f}")
    setup, again, features = setup_ms(held, fit_prior([train]))
    print(f"set-up before the first suggestion ({len(held.rows)} candidates): median {setup:.1f} ms, "
          f"of which the features {features:.1f} ms; {again:.1f} ms for another seed's study of the same "
          "candidates in the same process (features kept)")


def setup_ms(held: GroundTruth, prior: Prior, repeats: int = 9) -> tuple[float, float, float]:
    """Median milliseconds of building the cost-model sampler for *held* (features and prior
    scores of every candidate): the first time in a process, and again for another seed's order of
    the same candidates (whose features the process keeps); and of the candidates' features alone."""
    space = space_for_table(held)
    arch = table_arch(held)
    enumeration = space.enumerate(held.meta.shape(), arch)
    encoding = StudySpec(sampler="costmodel", budget=1, seed=0).encoding
    context = SearchContext(space, encoding, enumeration.feasible, None, arch, held.meta.problem)
    reordered = SearchContext(space, encoding, enumeration.shuffled(1), None, arch, held.meta.problem)
    params = [c.as_dict() for c in enumeration.feasible]

    def first() -> None:
        clear_candidate_features()  # what a worker's first study of these candidates pays
        CostModelSampler(context, prior, seed=0)

    def median_ms(work: Callable[[], object]) -> float:
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            work()
            runs.append(1000 * (time.perf_counter() - start))
        return statistics.median(runs)

    return (median_ms(first), median_ms(lambda: CostModelSampler(reordered, prior, seed=0)),
            median_ms(lambda: feature_columns(params, held.meta.problem, arch)))


def suggestion_ms(held: GroundTruth, prior: Prior) -> list[float]:
    """Milliseconds of each suggestion of a 100-compile costmodel study replayed on *held*, sorted."""
    times: list[float] = []
    original = CostModelSampler.sample_relative

    def timed(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        out = original(self, *args, **kwargs)
        times.append(1000 * (time.perf_counter() - start))
        return out

    CostModelSampler.sample_relative = timed  # type: ignore[method-assign]
    try:
        space = space_for_table(held)
        spec = StudySpec(sampler="costmodel", budget=100, seed=0, space=space.name)
        run_study("speed", space, ReplayEvaluator(held), spec,
                  arch=table_arch(held), storage=":memory:", prior=prior, problem=held.meta.problem)
    finally:
        CostModelSampler.sample_relative = original  # type: ignore[method-assign]
    return sorted(times)

if __name__ == "__main__":
    main()
