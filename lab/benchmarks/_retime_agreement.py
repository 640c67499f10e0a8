"""How firm is a table's optimum? The race's single timing against two re-timings of its top.

A table raced by ``flysearch race run`` carries the rounds its top was re-timed with
(:meth:`flysearch.tables.GroundTruth.retimed_ms`). Another, earlier re-timing of the same top (a
``retime_top`` result file, ``lab/benchmarks/_retime_top.py``) may exist beside it. Per table,
:func:`retime_agreement` says where the race's best lands once re-timed, whether the two re-timings
name the same best config, how far each one's best sits in the other's medians, and the size and
overlap of their 1% sets; :func:`retime_agreement_report` writes the rows of many tables as
markdown, with a summary.
"""

from __future__ import annotations

import glob
import statistics
from collections.abc import Sequence
from pathlib import Path

from _retime_top import retime_top_medians

from flysearch.tables import GroundTruth, read_table_file

__all__ = ["retime_agreement", "retime_agreement_report", "retime_agreement_rows"]


def retime_agreement(table: GroundTruth, earlier: dict[str, float]) -> dict[str, object]:
    """One table: its own rounds (``table.retimed_ms()``) against the race's times and against
    *earlier*, another re-timing's medians by config key (empty when there is none; the keys
    ``same_best``, ``own_best_in_earlier_x``, ``earlier_best_in_own_x``, ``within_earlier``,
    ``overlap`` and ``scale`` are then absent)."""
    rounds = table.retimed_ms()
    race_best, confirmed = table.best().key, table.confirmed_best().key
    race_ms = table.best().time_ms or 0.0
    own_best = min(rounds.values())
    out: dict[str, object] = {
        "table": table.name.rsplit("/", 1)[-1], "retimed": len(rounds),
        "race_best_confirmed": race_best == confirmed,
        "race_best_x": rounds[race_best] / own_best if race_best in rounds else None,
        "within_race": sum(1 for r in table.ok_rows() if (r.time_ms or 0) <= race_ms * 1.01),
        "within_rounds": len(table.within_retimed(0.01)),
    }
    if earlier:
        other_best_key = min(earlier, key=lambda k: (earlier[k], k))
        other_best = earlier[other_best_key]
        mine = set(table.within_retimed(0.01))
        theirs = {k for k, v in earlier.items() if v <= other_best * 1.01}
        shared = [k for k in rounds if k in earlier]
        out.update({
            "same_best": other_best_key == confirmed,
            "own_best_in_earlier_x": earlier[confirmed] / other_best if confirmed in earlier else None,
            "earlier_best_in_own_x": rounds[other_best_key] / own_best if other_best_key in rounds else None,
            "within_earlier": len(theirs), "overlap": len(mine & theirs),
            "scale": statistics.median(rounds[k] / earlier[k] for k in shared) if shared else None,
        })
    return out


def retime_agreement_rows(data: Path, results: Path, sets: Sequence[str]) -> list[dict[str, object]]:
    """:func:`retime_agreement` of every table ``<data>/<set>/*.table.json.gz`` of each of *sets*,
    against the earlier re-timing ``<results>/retime_top_<set>.json`` of its set (none when that
    file is absent or does not hold the table).

    Raises:
        ValueError: a table carries no rounds.
    """
    rows = []
    for name in sets:
        earlier = retime_top_medians(results / f"retime_top_{name}.json")
        for path in sorted(glob.glob(f"{data}/{name}/*.table.json.gz")):
            meta, table_rows = read_table_file(path)
            table = GroundTruth(meta, {r.key: r for r in table_rows})
            if not table.retimed_ms():
                raise ValueError(f"{path} carries no re-timed rounds (race it with flysearch race run)")
            rows.append(retime_agreement(table, earlier.get(table.name, {})))
    return rows


def _x(value: object) -> str:
    return f"{value:.4f}" if isinstance(value, float) else "-"


def _f(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def retime_agreement_report(rows: list[dict[str, object]], command: str) -> str:
    """A markdown report of :func:`retime_agreement` *rows*, under a line that quotes *command*
    (what produced it), with a closing summary over the tables."""
    n = len(rows)
    lines = [
        "# Each H200 table's optimum: the race's single timing against two re-timings", "",
        f"`{command}` (reads the committed tables and `lab/benchmarks/results/retime_top_<set>.json`).", "",
        "| table | re-timed | race's best confirmed | race's best, x confirmed best |"
        " within 1%: race / rounds |"
        " same best as retime_top | confirmed best in retime_top (x) | retime_top's best in the rounds (x) |"
        " 1% sets: retime_top / shared | scale (rounds / retime_top) |",
        "|---|---:|---|---:|---|---|---:|---:|---|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['table']} | {r['retimed']} | {'yes' if r['race_best_confirmed'] else 'no'} |"
            f" {_x(r['race_best_x'])} | {r['within_race']} / {r['within_rounds']} |"
            f" {'yes' if r.get('same_best') else ('no' if 'same_best' in r else '-')} |"
            f" {_x(r.get('own_best_in_earlier_x'))} | {_x(r.get('earlier_best_in_own_x'))} |"
            f" {r.get('within_earlier', '-')} / {r.get('overlap', '-')} | {_x(r.get('scale'))} |")
    both = [r for r in rows if "same_best" in r]
    worst = max((max(r["own_best_in_earlier_x"] or 1.0, r["earlier_best_in_own_x"] or 1.0)  # type: ignore[type-var]
                 for r in both), default=1.0)
    lines += [
        "",
        f"- The race's best is the confirmed best on {sum(bool(r['race_best_confirmed']) for r in rows)}"
        f" of {n} tables; where it is not, it re-times at most {max(_f(r['race_best_x']) for r in rows):.4f}x"
        " the confirmed best.",
        f"- Tables whose 1% set is a single config: {sum(r['within_race'] == 1 for r in rows)} by the race,"
        f" {sum(r['within_rounds'] == 1 for r in rows)} by the rounds.",
    ]
    if both:
        lines += [
            f"- The two re-timings name the same best config on {sum(bool(r['same_best']) for r in both)}"
            f" of {len(both)} tables; where they differ, each one's best is at most {worst:.4f}x the"
            " other's best in the other's medians.",
            f"- Their 1% sets share a config on {sum(_f(r['overlap']) > 0 for r in both)} of {len(both)}"
            " tables.",
        ]
    return "\n".join(lines) + "\n"
