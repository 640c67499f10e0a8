"""lab/benchmarks/pruning_audit.py on the CPU: each family's unpruned space and its audit of the races."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from lab.tests._benchmarks import BENCHMARKS, benchmark_script

DATA = BENCHMARKS / "data"


def test_the_unpruned_space_is_the_family_s_values_with_five_stages_and_no_rule() -> None:
    pa = benchmark_script("pruning_audit")
    splitk, fused = pa.unpruned_space("triton_gemm_splitk"), pa.unpruned_space("triton_gemm_splitk_fused")
    assert (splitk.size, fused.size) == (6400, 5120)
    assert not splitk.constraints and not fused.constraints
    values = {p.name: p.values for p in fused.params}
    assert values["SPLIT_K"] == (2, 4, 8, 16)
    assert values["num_stages"] == (2, 3, 4, 5)


def test_the_audit_charges_the_rules_of_the_family_each_table_raced(tmp_path: Path) -> None:
    pa = benchmark_script("pruning_audit")
    out = tmp_path / "fused.md"
    pa.audit(argparse.Namespace(data=[DATA / "h100_fused_unpruned"], out=out))
    text = out.read_text()
    assert text.startswith("# What the `triton_gemm_splitk_fused` space's pruning throws away")
    assert "raced on an NVIDIA H100 80GB HBM3" in text
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| 4x576x7168 | decode")]
    assert len(rows) == 1 and rows[0][2:4] == ["5120", "3888"]  # every config, 1,232 failing
    # the fused family keeps no SPLIT_K = 1 config: its rules and values, not split-K's, are charged
    assert "| 4x576x7168 | split_k_has_work | 320 |" in text


def test_tables_of_two_families_are_refused(tmp_path: Path) -> None:
    pa = benchmark_script("pruning_audit")
    with pytest.raises(SystemExit, match="mix families"):
        pa.audit(argparse.Namespace(data=[DATA / "h200_unpruned", DATA / "h100_fused_unpruned"],
                                    out=tmp_path / "x.md"))
    assert not (tmp_path / "x.md").exists()
