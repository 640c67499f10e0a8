"""Where does aiter's shipped FlyDSL winner of a shape rank among its feasible configs, by a model
trained on the other shapes' winners?

    OMP_NUM_THREADS=1 python lab/benchmarks/aiter_winner_rank.py \
        --out lab/benchmarks/results/aiter_winner_rank.md

Data: the gfx950 (MI355X, 256 CUs) FlyDSL rows of aiter's tuned CSVs in ../shared/data/aiter (read
from there). Each shape's winner parses into a config of the ``aiter_flydsl_hgemm`` space; its
feasible set is that space pruned by the constraints at the shape. 10-fold cross-validation over
shapes (seeded): a gradient-boosted classifier learns winner vs. 40 random feasible non-winners of
each training shape, from the analytic features (flysearch.costmodel); it then ranks every feasible
config of each held-out shape. Random ranking would put the winner at (n + 1) / 2 on average.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from _aiter_cut import SHAPE_FREE_CONSTRAINTS, shape_free_survivors  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402

from flysearch.costmodel import columns_matrix, feature_columns  # noqa: E402
from flysearch.kernels import aiter_hgemm_space, parse_kernel_name  # noqa: E402
from flysearch.space import Shape, get_arch  # noqa: E402
from flysearch.tables import read_aiter_csv  # noqa: E402

AITER = ROOT.parent / "shared" / "data" / "aiter"


def winners() -> dict[tuple[int, int, int], object]:
    """One shipped gfx950/256-CU FlyDSL winner per (M, N, K): the fastest if a shape repeats."""
    best: dict[tuple[int, int, int], tuple[float, object]] = {}
    for path in sorted(AITER.glob("*.csv")) + sorted(AITER.glob("model_configs/*.csv")):
        if "untuned" in path.name:
            continue
        for r in read_aiter_csv(path):
            if r.libtype != "flydsl" or r.gfx != "gfx950" or r.cu_num != 256:
                continue
            key = (r.M, r.N, r.K)
            if key not in best or r.us < best[key][0]:
                best[key] = (r.us, parse_kernel_name(r.kernelName, "gfx950").config)
    return {k: v[1] for k, v in best.items()}


def feasible(space, survivors, shape, arch):  # type: ignore[no-untyped-def]
    checks = [c for c in space.constraints if c.name not in SHAPE_FREE_CONSTRAINTS]
    return [c for c in survivors if all(check(c, shape, arch) for check in checks)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=None)
    parser.add_argument("--folds", type=int, default=10)
    args = parser.parse_args()
    arch = get_arch("gfx950")
    space = aiter_hgemm_space()
    survivors, _ = shape_free_survivors(space, "gfx950")
    rng = np.random.default_rng(0)
    shapes = sorted(winners().items())
    data = []
    for (m, n, k), win in shapes:
        shape = Shape(m, n, k)
        cands = feasible(space, survivors, shape, arch)
        keys = [c.key for c in cands]
        if win.key not in keys:
            raise SystemExit(f"winner of {shape.key} is not feasible: {win.key}")
        columns = feature_columns([c.as_dict() for c in cands], shape.as_dict(), arch)
        data.append((shape, keys.index(win.key), columns, len(cands)))
    schema = sorted({name for _, _, columns, _ in data for name in columns})
    data = [(shape, win, columns_matrix(columns, schema, n)) for shape, win, columns, n in data]
    folds = rng.permutation(len(data)) % args.folds
    ranks, sizes = [], []
    for fold in range(args.folds):
        rows, labels = [], []
        for i, (_, win, feats) in enumerate(data):
            if folds[i] == fold:
                continue
            others = [j for j in range(len(feats)) if j != win]
            picks = rng.choice(others, size=min(40, len(others)), replace=False)
            rows.append(feats[[win, *picks]])
            labels += [1] + [0] * len(picks)
        clf = HistGradientBoostingClassifier(max_iter=200, random_state=0)
        clf.fit(np.vstack(rows), np.array(labels))
        for i, (_, win, feats) in enumerate(data):
            if folds[i] != fold:
                continue
            score = clf.predict_proba(feats)[:, 1]
            ranks.append(int((score > score[win]).sum()) + 1)
            sizes.append(len(feats))
    pct = [r / s for r, s in zip(ranks, sizes, strict=True)]
    lines = [
        f"# aiter gfx950 FlyDSL winners: rank among the feasible configs — {dt.date.today()}", "",
        f"{len(data)} shapes (MI355X, 256 CUs; aiter's shipped tuned CSVs), {args.folds}-fold CV.",
        f"Feasible configs per shape: median {statistics.median(sizes):g} "
        f"(min {min(sizes)}, max {max(sizes)}).",
        "", "| statistic | model | random ranking (expected) |", "|---|---:|---:|",
        f"| median rank of the shipped winner | {statistics.median(ranks):g} | "
        f"{statistics.median([(s + 1) / 2 for s in sizes]):g} |",
        f"| median rank as a share of the feasible set | {100 * statistics.median(pct):.1f}% | 50% |",
        f"| winners in the top 16 | {sum(r <= 16 for r in ranks)} of {len(ranks)} | "
        f"{sum(min(1.0, 16 / s) for s in sizes):.0f} of {len(ranks)} |",
        f"| winners in the top 10% | {sum(p <= 0.1 for p in pct)} of {len(ranks)} | "
        f"{round(0.1 * len(ranks))} of {len(ranks)} |",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
