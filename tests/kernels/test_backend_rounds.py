"""benchmarks/backend_rounds.py on the CPU: which tables and configs it times, and its report."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tests._benchmarks import BENCHMARKS, benchmark_script, committed_file

DATA = BENCHMARKS / "data"


def _args(**kw: object) -> argparse.Namespace:
    base = dict(splitk=[DATA / "h200_stages5", DATA / "h200_stages5_holdout"],
                tma=[DATA / "h200_tma", DATA / "h200_tma_holdout"], shapes=None, top=3)
    base.update(kw)
    return argparse.Namespace(**base)


def test_it_pairs_the_committed_tables_of_both_families_and_takes_their_confirmed_tops() -> None:
    br = benchmark_script("backend_rounds")
    chosen = br.select(_args())
    assert len(chosen) == 39  # the 27 shapes of shapes_h200.toml and the 12 held out
    ms = [tuple(int(x) for x in e["shape"].split("x")) for e in chosen]
    assert ms == sorted(ms)
    for e in chosen:
        sk, tma = e["families"]["splitk"], e["families"]["tma"]
        assert "/triton_gemm__H200__" in sk["table"] and "/triton_gemm_tma__H200__" in tma["table"]
        for fam in (sk, tma):
            times = [c["table_ms"] for c in fam["configs"]]
            assert len(times) == 3 and times == sorted(times) and fam["race_vendor_ms"] > 0
    with pytest.raises(SystemExit, match="no split-K and TMA table for: 3x3x3"):
        br.select(_args(shapes=["3x3x3"]))


def _shape(name: str, regime: str, cublas: float, splitk: list[float], tma: list[float | None]) -> dict:
    def configs(times: list[float | None], prefix: str) -> list[dict]:
        out = []
        for i, t in enumerate(times):
            c = {"key": f"{prefix}{i}", "params": {}, "table_ms": 1.0}
            c.update({"median_ms": t} if t is not None else {"failed": "wrong_result"})
            out.append(c)
        return out

    def family(times: list[float | None], prefix: str) -> dict:
        return {"table": prefix, "race_vendor_ms": cublas * 0.9, "configs": configs(times, prefix)}

    return {"shape": name, "regime": regime, "cublas": {"median_ms": cublas, "rounds_ms": [cublas]},
            "families": {"splitk": family(splitk, "s"), "tma": family(tma, "t")}}


def test_the_report_takes_each_family_s_best_over_cublas_in_the_same_rounds(tmp_path: Path) -> None:
    br = benchmark_script("backend_rounds")
    doc = {"provenance": {"command": "python benchmarks/backend_rounds.py run", "date": "2026-12-05",
                          "device": "NVIDIA H200", "versions": {"triton": "3.6.0"}, "rounds": 10, "top": 2},
           "shapes": [_shape("1x4096x4096", "decode", 1.0, [1.10, 1.02], [0.98, None]),
                      _shape("4096x4096x4096", "square", 2.0, [2.4, 2.5], [2.2, 2.1])]}
    (tmp_path / "r.json").write_text(json.dumps(doc))
    out = tmp_path / "r.md"
    br.report(argparse.Namespace(json=tmp_path / "r.json", out=out))
    text = out.read_text()
    decode = next(line for line in text.splitlines() if line.startswith("| 1x4096x4096 |")).split(" | ")
    # TMA here / table, split-K, TMA, best, best in the race, fastest: a failed config never counts
    assert decode[4:10] == ["0.980", "1.020", "0.980", "0.980", "1.111", "TMA |"]
    square = next(line for line in text.splitlines() if line.startswith("| 4096x4096x4096 |")).split(" | ")
    # a backend wins only below 1
    assert square[4:10] == ["2.200", "1.200", "1.050", "1.050", "0.556", "cuBLAS |"]
    assert "| decode | 1 | 1.020 | 0.980 | 0.980 | 1.00 | yes |" in text
    assert "| square | 1 | 1.200 | 1.050 | 1.050 | 1.05 | yes |" in text
    assert "Fastest backend per shape: TMA 1, cuBLAS 1." in text and "1x4096x4096 t1" in text


def test_the_committed_run_times_cublas_slower_beside_the_kernels_on_a_square_shape(tmp_path: Path) -> None:
    br = benchmark_script("backend_rounds")
    run = committed_file(DATA / "h200_backend_rounds" / "backend_rounds.json", tmp_path / "run.json")
    doc = json.loads(run.read_text())
    assert doc["provenance"]["rounds"] == 10 and len(doc["shapes"]) == 39
    square = next(s for s in doc["shapes"] if s["shape"] == "4096x4096x4096")
    assert len(square["cublas"]["rounds_ms"]) == 10
    here, race = square["cublas"]["median_ms"], square["families"]["tma"]["race_vendor_ms"]
    assert here > 1.03 * race  # the race's lone cuBLAS timing, before any config, was faster
    r = br.ratios(square)
    assert r["triton"] == r["tma"] < br.race_ratio(square, "tma")
