"""How firm is each H200 table's optimum? The race's single timing against two re-timings.

    python lab/benchmarks/retime_agreement.py --out lab/benchmarks/results/retime_agreement.md

Every committed H200 table carries the rounds that ``flysearch race run`` re-timed its top with
(:mod:`flysearch.evaluators`: the configs within 5% of the race's best, at least 8, at most 32, 10
interleaved rounds; ``lab/benchmarks/results/race_retime_h200/``). Before that, the top of the same
tables had been re-timed once already by ``lab/benchmarks/retime_top.py`` (the configs within 10%, at
least 16, at most 48, 10 rounds, in another session: ``lab/benchmarks/results/retime_top_<set>.json``).
Per table this prints where the race's best lands once re-timed, whether the two re-timings name
the same best config, how far each one's best sits in the other's medians, and the size and
overlap of their 1% sets (``_retime_agreement.retime_agreement``). Reads only committed files;
no GPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))

from _retime_agreement import retime_agreement_report, retime_agreement_rows  # noqa: E402

SETS = ("h200", "h200_extra", "h200_extra2", "h200_holdout", "h200_holdout2")


def agreement_rows(data: Path = BENCHMARKS / "data") -> list[dict[str, object]]:
    """``_retime_agreement.retime_agreement`` of every table of the five sets under *data*,
    against the committed ``retime_top_<set>.json`` of its set (lab/paper/build.py reads these rows).

    Raises:
        ValueError: a table carries no rounds.
    """
    return retime_agreement_rows(data, BENCHMARKS / "results", SETS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT / "lab/benchmarks/data"))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    try:
        rows = agreement_rows(Path(args.data))
    except ValueError as exc:
        parser.error(str(exc))
    if not rows:
        parser.error(f"no table under {args.data}/{{{','.join(SETS)}}}")
    command = "python lab/benchmarks/retime_agreement.py " + " ".join(sys.argv[1:])
    text = retime_agreement_report(rows, command)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
