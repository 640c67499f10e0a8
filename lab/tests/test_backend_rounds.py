"""lab/benchmarks/backend_rounds.py on the CPU: which tables and configs it times, and its report."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lab.tests._benchmarks import BENCHMARKS, benchmark_script, committed_file

DATA = BENCHMARKS / "data"


def _args(**kw: object) -> argparse.Namespace:
    base = dict(splitk=[DATA / "h200_stages5", DATA / "h200_stages5_holdout"],
                tma=[DATA / "h200_tma", DATA / "h200_tma_holdout"], fused=None, shapes=None, top=3)
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
    assert all("fused" not in e["families"] for e in chosen)


def test_a_fused_table_adds_its_family_to_its_shape_only(tmp_path: Path) -> None:
    br = benchmark_script("backend_rounds")
    source = DATA / "h200_stages5" / "triton_gemm__H200__1x6144x4096.table.json.gz"
    (tmp_path / "triton_gemm_fused__H200__1x6144x4096.table.json.gz").write_bytes(source.read_bytes())
    chosen = {e["shape"]: e for e in br.select(_args(fused=[tmp_path]))}
    assert set(chosen["1x6144x4096"]["families"]) == {"splitk", "tma", "fused"}
    assert chosen["1x6144x4096"]["families"]["fused"]["configs"] == chosen["1x6144x4096"]["families"][
        "splitk"]["configs"]
    assert sum("fused" in e["families"] for e in chosen.values()) == 1


def _shape(name: str, regime: str, cublas: float, splitk: list[float], tma: list[float | None],
           fused: list[float | None] | None = None) -> dict:
    def configs(times: list[float | None], prefix: str) -> list[dict]:
        out = []
        for i, t in enumerate(times):
            c = {"key": f"{prefix}{i}", "params": {}, "table_ms": 1.0}
            c.update({"median_ms": t} if t is not None else {"failed": "wrong_result"})
            out.append(c)
        return out

    def family(times: list[float | None], prefix: str) -> dict:
        return {"table": prefix, "race_vendor_ms": cublas * 0.9, "configs": configs(times, prefix)}

    families = {"splitk": family(splitk, "s"), "tma": family(tma, "t")}
    if fused is not None:
        families["fused"] = family(fused, "f")
    return {"shape": name, "regime": regime, "cublas": {"median_ms": cublas, "rounds_ms": [cublas]},
            "families": families}


def _report(tmp_path: Path, shapes: list[dict], versions: dict) -> tuple[str, dict[str, list[str]]]:
    """backend_rounds' report of *shapes*: its text, and each shape's table row split into cells."""
    doc = {"provenance": {"command": "python lab/benchmarks/backend_rounds.py run", "date": "2026-12-05",
                          "device": "NVIDIA H200", "versions": versions, "rounds": 10, "top": 2},
           "shapes": shapes}
    (tmp_path / "r.json").write_text(json.dumps(doc))
    out = tmp_path / "r.md"
    benchmark_script("backend_rounds").report(argparse.Namespace(json=tmp_path / "r.json", out=out))
    text = out.read_text()
    lines = text.splitlines()
    rows = {s["shape"]: next(line for line in lines if line.startswith(f"| {s['shape']} |")).split(" | ")
            for s in shapes}
    return text, rows


def test_the_report_takes_each_family_s_best_over_cublas_in_the_same_rounds(tmp_path: Path) -> None:
    text, rows = _report(tmp_path, [_shape("1x4096x4096", "decode", 1.0, [1.10, 1.02], [0.98, None]),
                                    _shape("4096x4096x4096", "square", 2.0, [2.4, 2.5], [2.2, 2.1])],
                         {"triton": "3.6.0"})
    # TMA here / table, split-K, TMA, best, best in the race, fastest: a failed config never counts
    assert rows["1x4096x4096"][4:10] == ["0.980", "1.020", "0.980", "0.980", "1.111", "TMA |"]
    # a backend wins only below 1
    assert rows["4096x4096x4096"][4:10] == ["2.200", "1.200", "1.050", "1.050", "0.556", "cuBLAS |"]
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


def test_the_report_adds_the_fused_family_where_it_was_timed(tmp_path: Path) -> None:
    shapes = [_shape("1x4096x4096", "decode", 1.0, [1.10, 1.02], [1.3, 1.2], [0.95, None]),
              _shape("4096x4096x4096", "square", 2.0, [2.4, 2.5], [2.2, 2.1])]
    text, rows = _report(tmp_path, shapes, {})
    assert text.startswith("# Split-K, fused split-K, TMA and cuBLAS")
    # split-K, TMA, fused, best, best in the race, fastest
    assert rows["1x4096x4096"][5:11] == ["1.020", "1.200", "0.950", "0.950", "1.111", "fused split-K |"]
    assert rows["4096x4096x4096"][5:11] == ["1.200", "1.050", "-", "1.050", "0.556", "cuBLAS |"]
    assert "| decode | 1 | 1.020 | 1.200 | 0.950 | 0.950 | 1.00 | yes |" in text
    assert "| square | 1 | 1.200 | 1.050 | - | 1.050 | 1.05 | yes |" in text
    assert "Fastest backend per shape: cuBLAS 1, fused split-K 1." in text


def test_tables_raced_on_an_h100_pair_by_shape_like_the_h200_ones() -> None:
    br = benchmark_script("backend_rounds")
    chosen = br.select(_args(splitk=[DATA / "h100_splitk", DATA / "h100_splitk_holdout"],
                             tma=[DATA / "h100_tma", DATA / "h100_tma_holdout"],
                             fused=[DATA / "h100_fused", DATA / "h100_fused_holdout"]))
    assert len(chosen) == 13  # every family raced the 13 decode and K-heavy shapes
    for e in chosen:
        assert set(e["families"]) == {"splitk", "tma", "fused"}
        assert all("__H100__" in fam["table"] for fam in e["families"].values())
    # a shape is timed only where both split-K and TMA have a table: the held-out split-K folder alone
    held_out = br.select(_args(splitk=[DATA / "h100_splitk_holdout"],
                               tma=[DATA / "h100_tma", DATA / "h100_tma_holdout"],
                               fused=[DATA / "h100_fused", DATA / "h100_fused_holdout"]))
    assert len(held_out) == 5


def test_tables_of_two_gpus_or_an_empty_fused_folder_are_refused(tmp_path: Path) -> None:
    br = benchmark_script("backend_rounds")
    with pytest.raises(SystemExit, match=r"several GPUs \(H100, H200\)"):
        br.select(_args(fused=[DATA / "h100_fused"]))  # H200 split-K and TMA, H100 fused
    with pytest.raises(SystemExit, match="no fused split-K table"):
        br.select(_args(fused=[tmp_path]))


def test_a_resumed_run_names_its_own_session_and_refuses_another_gpu(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import flysearch.evaluators as ev

    br = benchmark_script("backend_rounds")
    gpu = {"device": "NVIDIA H200", "versions": {"triton": "3.6.0"}}
    monkeypatch.setattr(ev, "device_info", lambda: gpu)
    monkeypatch.setattr(br, "run_shape", lambda entry, rounds, seed: {**entry, "timed": True})
    monkeypatch.setattr(br, "_shape_line", lambda result: result["shape"])
    out = tmp_path / "r.json"
    args = _args(shapes=["1x6144x4096"], out=out, dry_run=False, deadline=None, rounds=10, seed=0)
    br.run(args)
    assert "resumed" not in json.loads(out.read_text())["provenance"]
    br.run(_args(**{**vars(args), "shapes": ["1x6144x4096", "4x576x7168"]}))
    doc = json.loads(out.read_text())
    assert [s["shape"] for s in doc["shapes"]] == ["1x6144x4096", "4x576x7168"]
    assert [r["shapes"] for r in doc["provenance"]["resumed"]] == [["4x576x7168"]]
    gpu["device"] = "NVIDIA H100 80GB HBM3"
    with pytest.raises(SystemExit, match="timed on an NVIDIA H200"):
        br.run(_args(**{**vars(args), "shapes": ["8x8192x8192"]}))
