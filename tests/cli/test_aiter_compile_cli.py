"""``flysearch aiter compile``: aiter's Triton GEMM compiled for gfx942/gfx950 on this CPU through
the ``triton-amd-compile`` evaluator, the space's cuts printed, rows shown and written; a user's
mistake is one line and exit code 2."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner

from flysearch.cli import main
from flysearch.evaluators import amd_compile_fix

needs_amd = pytest.mark.skipif(amd_compile_fix() is not None, reason=f"{amd_compile_fix()}")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@needs_amd
def test_compile_prints_the_cuts_and_each_configs_resources(tmp_path: Path) -> None:
    out_csv = tmp_path / "rows.csv"
    code, out = run("aiter", "compile", "--arch", "gfx950", "--shape", "16x4096x4096", "--limit", "2",
                    "--workers", "2", "--out", str(out_csv))
    assert code == 0, out
    text = " ".join(out.split())  # rich wraps long lines
    assert "aiter_triton_gemm on gfx950 at M=16,N=4096,K=4096,dtype=bf16: 480000 -> 6060:" in text
    assert "kpack_fixed_by_arch -96000" in text and "registers_fit -" in text
    assert f"wrote 2 rows to {out_csv}" in text
    rows = list(csv.DictReader(out_csv.open()))
    assert len(rows) == 2 and all(r["key"].startswith("BLOCK_SIZE_K=") for r in rows)
    for r in rows:  # every row compiled: resources read from the code object
        assert r["outcome"] in ("ok", "rejected") and int(r["vgpr"]) > 0 and float(r["compile_s"]) > 0


@pytest.mark.slow
@needs_amd
def test_the_seed_fixes_the_order(tmp_path: Path) -> None:
    keys = []
    for i in range(2):
        out_csv = tmp_path / f"rows{i}.csv"
        code, out = run("aiter", "compile", "--arch", "gfx942", "--shape", "4096x4096x4096", "--limit", "1",
                        "--seed", "3", "--out", str(out_csv))
        assert code == 0, out
        keys.append([r["key"] for r in csv.DictReader(out_csv.open())])
    assert keys[0] == keys[1] and len(keys[0]) == 1


@pytest.mark.parametrize(("args", "message"), [
    (["--arch", "gfx950", "--shape", "16x4096"], "16x4096"),
    (["--arch", "sm_90", "--shape", "16x4096x4096"], "AMD"),
    (["--arch", "gfx9000", "--shape", "16x4096x4096"], "gfx9000"),
    (["--arch", "gfx950", "--shape", "16x4096x4096", "--workers", "0"], "--workers"),
])
def test_bad_input_is_one_line_and_exit_code_2(args: list[str], message: str) -> None:
    code, out = run("aiter", "compile", *args)
    assert code == 2 and "Traceback" not in out, out
    errors = [line for line in out.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and message in out, out
