"""Race the fused split-K family (split-K with its reduction inside the one launch) on the H200.

    python benchmarks/fused_h200.py race --shapes studies/shapes_h200.toml \\
        --regime decode --regime k_heavy --out benchmarks/data/h200_fused --workers 15       # GPU

Every config of ``triton_gemm_splitk_fused`` that the family's rules keep at each shape
(``flysearch/kernels/_triton_fused.py``; SPLIT_K 2 to 16, the split-K family's constraints) is raced
with ``_family_race.py``: compiles in ``--workers`` processes, CUDA-graph launches validated and
timed with the race's protocol, the top re-timed in interleaved rounds with cuBLAS as one more
entry. ``backend_rounds.py`` then times its best configs beside the split-K and TMA families' and
cuBLAS in the same rounds. A rerun into the same ``--out`` skips the shapes raced there.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _family_race import Family, race_corpus, space_of  # noqa: E402

from flysearch.space import Shape, get_arch, load_corpus  # noqa: E402

SPACE = "triton_gemm_splitk_fused"
KERNEL = "triton_gemm_fused"


def _configs(shape: Shape) -> list[dict[str, Any]]:
    from flysearch.kernels import get_space

    return [c.as_dict() for c in get_space(SPACE).enumerate(shape, get_arch("sm_90")).feasible]


def build(a: Any, w: Any, c: Any, config: dict[str, Any]) -> Any:
    """One launch of the fused split-K family computing ``c = a @ w.T`` with *config*."""
    from flysearch.kernels import fused_gemm_launcher

    return fused_gemm_launcher(a, w, c, config)


def family() -> Family:
    from flysearch.kernels import get_space

    return Family(kernel=KERNEL, space=space_of(SPACE, list(get_space(SPACE).params)), configs=_configs,
                  builder="fused_h200:build", notes=f"{SPACE}'s feasible set at the shape")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("race", help="race the fused split-K family on a CUDA GPU")
    r.add_argument("--shapes", type=Path, action="append", required=True, help="shape files (repeatable)")
    r.add_argument("--regime", action="append",
                   help="only shapes of these regimes, raced in this order (default: all, in file order)")
    r.add_argument("--only", action="append", help="only these shape names")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    r.add_argument("--cache-dir", default=None)
    r.add_argument("--deadline", type=float, default=None, help="start no shape after this many s")
    args = ap.parse_args()
    corpus = [e for f in args.shapes for e in load_corpus(f)
              if (not args.regime or e.shape.regime in args.regime)
              and (not args.only or e.name in args.only)]
    if args.regime:  # in the order the regimes are named
        corpus.sort(key=lambda e: args.regime.index(e.shape.regime))
    if not corpus:
        print("fused_h200.py: no shape of --shapes matches --regime/--only", file=sys.stderr)
        sys.exit(2)
    race_corpus(family(), corpus, args.out, args.workers, "benchmarks/fused_h200.py race",
                cache_dir=args.cache_dir, deadline=args.deadline)


if __name__ == "__main__":
    main()
