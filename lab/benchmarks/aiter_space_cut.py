"""Print how much the aiter FlyDSL HGEMM constraints cut the space, per (arch, regime).

The shapes are the GEMMs aiter shipped tuning results for on each arch (../shared/data/aiter:
bf16_tuned_gemm.csv and model_configs/*.csv); the report also checks that every shipped FlyDSL
winner parses and passes the constraints at its own shape. Run from the repository root::

    python lab/benchmarks/aiter_space_cut.py [DATA_DIR] > lab/benchmarks/results/aiter_space_cut.md
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from _aiter_cut import format_cuts, space_cuts

from flysearch.kernels import aiter_hgemm_space, parse_kernel_name
from flysearch.space import Shape, get_arch
from flysearch.tables import read_aiter_csv

ARCHS = ("gfx942", "gfx950")


def main(data: Path) -> int:
    files = [data / "bf16_tuned_gemm.csv", *sorted((data / "model_configs").glob("*.csv"))]
    records = [r for f in files for r in read_aiter_csv(f)]
    space = aiter_hgemm_space()
    shapes: dict[str, set[Shape]] = {a: set() for a in ARCHS}
    checked, failures = 0, []
    for r in records:
        if r.gfx not in shapes:
            continue
        shapes[r.gfx].add(Shape(r.M, r.N, r.K))
        if r.libtype == "flydsl":
            config = parse_kernel_name(r.kernelName, arch=r.gfx).config
            reason = space.reject_reason(config, Shape(r.M, r.N, r.K), get_arch(r.gfx))
            checked += 1
            if reason is not None:
                failures.append(f"{r.gfx}/{r.cu_num} {r.M}x{r.N}x{r.K} {r.kernelName}: {reason}")
    start = time.perf_counter()
    print("# aiter FlyDSL HGEMM space: constraint cuts per (arch, regime)\n")
    print(f"Space `{space.name}`: {space.size} configs, {len(space.constraints)} constraints.")
    print(f"Shapes: the GEMMs aiter ships tuned results for on each arch ({len(files)} CSVs in")
    print("../shared/data/aiter). Cuts are charged to the first constraint that rejects a config.\n")
    cuts = [c for arch in ARCHS for c in space_cuts(shapes[arch], arch)]
    print(format_cuts(cuts))
    print("\nSums over each regime's shapes (Enumeration.summary format):\n")
    for c in cuts:
        print(f"- {c.arch} {c.regime}: {c.summary()}")
    print(f"\nShipped FlyDSL winners checked: {checked}; rejected by a constraint: {len(failures)}.")
    for line in failures:
        print(f"- {line}")
    print(f"\n(report computed in {time.perf_counter() - start:.0f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    default = Path(__file__).resolve().parents[3] / "shared" / "data" / "aiter"
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else default))
