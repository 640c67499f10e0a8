"""How rugged is each table? Local minima and descent basins of the exhaustive tables.

    python lab/benchmarks/landscape.py --out lab/benchmarks/results/landscape.md

A fitness-landscape view of the ground-truth tables (in the spirit of Schoonhoven et al., 2022,
"Benchmarking optimization algorithms for auto-tuning GPU kernels"): the configs that ran are the
nodes, and two configs are neighbours when they differ in one parameter, either by one step of its
value list (*adjacent*) or by any value (*Hamming*). For each table and each neighbourhood:

* **local minima**: configs no neighbour of which runs faster;
* **descents to 1%**: the share of configs from which a steepest descent (always move to the fastest
  neighbour while it is faster) ends within 1% of the optimum, i.e. the chance that one greedy
  local search from a random start finds it;
* **best trap**: the fastest local minimum that is not within 1% (how far off a search that stops
  at the best of the other minima stays), as a multiple of the optimum.

A table whose optimum sits in a small basin, with near-optimal traps beside it, needs a search that
leaves good regions on purpose; a prior from another GPU that points at a trap does not help there.
The benchmark_hub tables come from ``../shared/data/benchmark_hub`` (``--hub DIR``: a clone's
``cachefiles/``, six GPUs per kernel), the H200 tables from ``lab/benchmarks/data/h200``. The counting
and the markdown sections are ``_landscape.landscape_section``'s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCHMARKS))

from _landscape import landscape_section  # noqa: E402
from costmodel_eval import H200, HUB, hub_tables, load_tables, report  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hub", type=Path, default=HUB,
                        help="the folder of *_milo/<GPU>.json.gz (default ../shared/data/benchmark_hub)")
    parser.add_argument("--h200", default=str(H200), help="glob of the H200 table files")
    parser.add_argument("--only", choices=("h200", "hub"), default=None)
    parser.add_argument("--out", default=None, help="also write the markdown report here")
    args = parser.parse_args(argv)
    started = time.monotonic()
    lines = [f"# Landscapes of the exhaustive tables — {dt.date.today()}, {platform.machine()} CPU", "",
             f"`python lab/benchmarks/landscape.py {shlex.join(sys.argv[1:] if argv is None else argv)}`", "",
             "Per table: configs that ran, configs within 1% / 5% of the optimum, and per neighbourhood "
             "(one parameter one value step away: adjacent; one parameter any value away: Hamming) the "
             "local minima, the share of configs whose steepest descent ends within 1% of the optimum, "
             "and the fastest local minimum beyond 1% as a multiple of the optimum.", ""]
    if args.only != "h200":
        lines += landscape_section("benchmark_hub", hub_tables(args.hub))
    if args.only != "hub":
        lines += landscape_section("Triton GEMM on H200", load_tables("h200", h200=args.h200))
    lines.append(f"({time.monotonic() - started:.0f} s)")
    report(lines, args.out)


if __name__ == "__main__":
    main()
