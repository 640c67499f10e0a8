"""``flysearch export flydsl`` exports only what the target runs: FlyDSL rows, of the target's arch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from flysearch.cli import main
from flysearch.errors import FlysearchError
from flysearch.export._flydsl import export_flydsl_artifacts, target_device
from flysearch.kernels import aiter_hgemm_space, build_kernel_name
from flysearch.tables import Row, TableMeta, TableStore
from flysearch.tables._aiter_csv import AiterRecord, records_to_tables

CONFIG = dict(tile_m=16, tile_n=64, tile_k=128, stages=5, split_k=2, block_m_warp=1, block_n_warp=2,
              block_k_warp=1, async_copy=True, b_to_lds=True, b_preshuffle=False, c_to_lds=False)
MI355X = "AMD Instinct MI355X"

MIXED = "p/gfx950/cu256/1x6144x2048"  # a profile: a FlyDSL row and a faster Triton row
TRITON = "p/gfx950/cu256/2x6144x2048"  # a tuned file's key that Triton won: no FlyDSL row
GFX942 = "p/gfx942/cu80/1x6144x2048"  # a FlyDSL winner measured on gfx942
GFX1250 = "p/gfx1250/cu256/1x32320x7168"  # as aiter ships for gfx1250: Triton only
BIAS = "p/gfx950/cu256/1x6144x2048+bias"  # the same M, N, K as MIXED, another aiter key


def _record(gfx: str, cu: int, m: int, n: int, k: int, libtype: str, us: float, *,
            bias: bool = False, **config: object) -> AiterRecord:
    if libtype == "flydsl":
        kernel = build_kernel_name(aiter_hgemm_space().config_from_dict({**CONFIG, **config}), gfx)
    else:
        kernel = "auto"
    return AiterRecord(gfx, cu, m, n, k, bias, "torch.bfloat16", "torch.bfloat16", False, False, libtype,
                       0, 2 if libtype == "flydsl" else 0, us, kernel, 0.0, 1.0, 1.0)


@pytest.fixture()
def db(tmp_path: Path) -> str:
    records = [
        _record("gfx950", 256, 1, 6144, 2048, "flydsl", 10.86),
        _record("gfx950", 256, 1, 6144, 2048, "triton", 8.0),
        _record("gfx950", 256, 2, 6144, 2048, "triton", 9.0),
        _record("gfx942", 80, 1, 6144, 2048, "flydsl", 12.0, async_copy=False),
        _record("gfx1250", 256, 1, 32320, 7168, "triton", 25.56),
        _record("gfx950", 256, 1, 6144, 2048, "flydsl", 11.0, bias=True, stages=3),
    ]
    path = str(tmp_path / "t.db")
    TableStore(path).write_many(records_to_tables(records, prefix="p", source="test"))
    return path


def _export(db: str, out: Path, *tables: str, arch: str = "gfx950", device: str = MI355X,
            key: tuple[str, ...] = ("M", "N", "K")):
    return export_flydsl_artifacts(db, tables, out, name="gemm", key=key, device_name=device, arch=arch)


def _cli(db: str, out: Path, *tables: str, arch: str = "gfx950", device: str = MI355X) -> Result:
    table_args = [a for t in tables for a in ("--table", t)]
    return CliRunner().invoke(main, ["export", "flydsl", "--db", db, *table_args, "--name", "gemm",
                                     "--device", device, "--arch", arch, "--out", str(out)])


def _one_error(result: Result) -> str:
    """The one ``Error:`` line the command wrote to stderr (and no traceback)."""
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert result.exit_code == 2 and len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]


def _artifacts(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]


# -- only FlyDSL rows --------------------------------------------------------------------------------


def test_the_best_flydsl_row_is_exported_not_the_fastest_backend(db: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _export(db, out, MIXED)
    (item,) = result.written
    assert item.row.extra["libtype"] == "flydsl" and item.row.time_ms == pytest.approx(0.01086)
    (doc,) = _artifacts(out)
    assert doc["config"] == CONFIG
    assert doc["identity"]["key"] == {"M": 1, "N": 6144, "K": 2048}


def test_a_table_without_a_flydsl_row_is_skipped_and_named(db: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _export(db, out, MIXED, TRITON)
    assert [w.table for w in result.written] == [MIXED]
    ((table, reason),) = result.skipped
    assert table == TRITON and "no FlyDSL row" in reason and "triton" in reason
    assert [d["config"] for d in _artifacts(out)] == [CONFIG]


def test_no_flydsl_row_in_any_table_is_refused(db: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(FlysearchError, match=f"no FlyDSL row.*{TRITON}"):
        _export(db, out, TRITON)
    assert not out.exists()


def test_cli_says_which_table_it_skipped_and_refuses_when_nothing_is_left(db: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _cli(db, out, MIXED, TRITON)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # rich wraps long lines
    assert f"{TRITON}: skipped" in said and "no FlyDSL row" in said
    assert [d["config"] for d in _artifacts(out)] == [CONFIG]
    error = _one_error(_cli(db, tmp_path / "none", TRITON))
    assert "no FlyDSL row" in error and TRITON in error
    assert not (tmp_path / "none").exists()


# -- only the table's arch ---------------------------------------------------------------------------


@pytest.mark.parametrize(("table", "table_arch"), [(GFX942, "gfx942"), (GFX1250, "gfx1250")])
def test_an_arch_other_than_the_tables_is_refused(db: str, tmp_path: Path, table: str,
                                                  table_arch: str) -> None:
    out = tmp_path / "out"
    with pytest.raises(FlysearchError, match=f"{table_arch}.*gfx950"):
        _export(db, out, MIXED, table)  # the good table first: it is not written either
    assert not out.exists()


def test_a_table_that_names_no_arch_is_refused(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    meta = TableMeta("raced", "flydsl_gemm", "", "Some Board", {"M": 1, "N": 8, "K": 8}, {})
    TableStore(db).write(meta, [Row("B=16", {"BLOCK_M": 16}, "ok", 1.0)])
    with pytest.raises(FlysearchError, match="names no arch"):
        _export(db, tmp_path / "out", "raced")
    assert not (tmp_path / "out").exists()


def test_cli_refuses_another_arch_in_one_line(db: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    error = _one_error(_cli(db, out, GFX1250))
    assert GFX1250 in error and "gfx1250" in error and "gfx950" in error
    error = _one_error(_cli(db, out, GFX942, device=MI355X))
    assert "gfx942" in error and "gfx950" in error
    assert not out.exists()
    result = _cli(db, out, GFX942, arch="gfx942", device="AMD Instinct MI308X")
    assert result.exit_code == 0, result.output
    (doc,) = _artifacts(out)
    assert doc["config"] == {**CONFIG, "async_copy": False}
    assert doc["identity"]["device"] == {"name": "AMD Instinct MI308X", "arch": "gfx942", "compute_units": 80}


def test_a_device_of_another_arch_is_refused(db: str, tmp_path: Path) -> None:
    with pytest.raises(FlysearchError, match=r"MI300X.*gfx942.*gfx950"):
        target_device("AMD Instinct MI300X", "gfx950")
    error = _one_error(_cli(db, tmp_path / "out", MIXED, device="AMD Instinct MI300X"))
    assert "gfx942" in error and "gfx950" in error
    assert not (tmp_path / "out").exists()


# -- one artifact per table --------------------------------------------------------------------------


def test_two_tables_for_one_artifact_are_refused(db: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(FlysearchError, match=r"(?=.*\+bias)(?=.*--key)"):
        _export(db, out, MIXED, BIAS)
    assert not out.exists()
    result = _export(db, out, MIXED, BIAS, key=("M", "N", "K", "bias"))
    assert len(result.written) == 2 and len(_artifacts(out)) == 2
    assert len(_export(db, tmp_path / "once", MIXED, MIXED).written) == 1  # named twice: one artifact
