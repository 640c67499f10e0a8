"""How much another GPU's measurements say about a held-out GPU's optimum (benchmark_hub tables).

    OMP_NUM_THREADS=1 python lab/benchmarks/hub_transfer.py --out lab/benchmarks/results/hub_transfer.md
    OMP_NUM_THREADS=1 python lab/benchmarks/hub_transfer.py --hub CLONE/cachefiles --out ...

For each kernel and each held-out GPU, the held-out table's configs are put in three orders and the
rank (1-based) of the first config within 1% and 5% of its optimum is reported:

* **measured on GPU X**: by the times measured on one other GPU (what copying that GPU's order
  would give);
* **consensus**: by the mean over all the other GPUs of log(time / that GPU's best);
* **cost-model prior**: flysearch's prior (:func:`flysearch.costmodel.fit_prior`) trained on all
  the other GPUs' tables of the kernel, as ``flysearch model eval`` does.

A config that failed or is missing on a GPU goes last in that GPU's order. ``--hub`` defaults to
``../shared/data/benchmark_hub`` (two GPUs per kernel); a clone of AutoTuningAssociation/benchmark_hub
(commit 8eeb99e) has six per kernel under ``cachefiles/`` — pass the folder that holds
``convolution_milo/`` and ``dedispersion_milo/``; only the files named ``<GPU>.json.gz`` are read.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from _costmodel_eval import transfer_ranks  # noqa: E402
from costmodel_eval import HUB, hub_tables, report  # noqa: E402  (this folder is on sys.path)

from flysearch.compare import EPSILONS  # noqa: E402
from flysearch.costmodel import fit_prior  # noqa: E402
from flysearch.tables import GroundTruth  # noqa: E402


def _by_kernel(tables: list[GroundTruth]) -> dict[str, list[GroundTruth]]:
    """The tables grouped by kernel folder (``convolution_milo/A100`` -> ``convolution_milo``)."""
    out: dict[str, list[GroundTruth]] = {}
    for table in tables:
        out.setdefault(table.name.split("/")[0], []).append(table)
    return out


def _times(table: GroundTruth) -> dict[str, float]:
    return {r.key: r.time_ms for r in table.rows.values() if r.ok and r.time_ms}


def _cell(ranks: dict[float, int | None]) -> str:
    return " / ".join("-" if ranks[eps] is None else str(ranks[eps]) for eps in EPSILONS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hub", type=Path, default=None,
                        help="the folder of *_milo/<GPU>.json.gz (default ../shared/data/benchmark_hub)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    start = time.perf_counter()
    hub = args.hub or HUB
    tables = _by_kernel(hub_tables(hub))
    if not tables:
        parser.error(f"no <kernel>_milo/<GPU>.json.gz tables under {hub}")
    command = "python lab/benchmarks/hub_transfer.py" + (f" --hub {args.hub}" if args.hub else "")
    lines = [f"# Transfer across GPUs — {dt.date.today()}, {platform.machine()} CPU", "",
             f"`{command}`; each cell: rank of the first "
             "config within 1% / within 5% of the held-out GPU's optimum, in that order (1 is the top).", ""]
    for kernel, group in tables.items():
        gpus = [t.meta.name.split("/")[-1] for t in group]
        lines += [f"## {kernel} ({len(group)} GPUs)", "",
                  "| held out | configs that ran | within 1% | "
                  + " | ".join(f"measured on {g}" for g in gpus) + " | consensus | cost-model prior |",
                  "|---|---:|---:|" + "---:|" * (len(gpus) + 2)]
        for held in group:
            others = [t for t in group if t is not held]
            ranks = transfer_ranks(held, others, fit_prior(others))
            target = _times(held)
            within = sum(t <= min(target.values()) * 1.01 for t in target.values())
            name = held.meta.name.split("/")[-1]
            cells = [_cell(ranks[t.name]) if t is not held else "" for t in group]
            lines.append(f"| {name} | {len(target)} | {within} | " + " | ".join(cells)
                         + f" | {_cell(ranks['consensus'])} | {_cell(ranks['prior'])} |")
        lines.append("")
    lines.append(f"({time.perf_counter() - start:.0f} s)")
    report(lines, args.out)


if __name__ == "__main__":
    main()
