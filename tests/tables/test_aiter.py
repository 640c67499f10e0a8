"""The aiter FlyDSL HGEMM space, its name codec and aiter's CSVs, checked on aiter's shipped data."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from flysearch.errors import InputFormatError
from flysearch.export import export_tuned_csv, write_aiter_csv
from flysearch.kernels import build_kernel_name, get_space, parse_kernel_name
from flysearch.kernels._aiter_hgemm import SPACE_NAME, aiter_hgemm_space, lds_estimate_bytes
from flysearch.space import Shape, get_arch
from flysearch.tables import TableStore
from flysearch.tables._aiter_csv import (
    TUNED_HEADER,
    AiterRecord,
    check_flydsl_records,
    read_aiter_csv,
    read_profile_csv,
    read_tuned_csv,
    records_to_tables,
)
from tests.conftest import DATA

AITER = DATA / "aiter"
NAME = (
    "flydsl_gemm5_abf16_wbf16_bf16_t16x64x128_split_k2_block_m_warp1_block_n_warp2_block_k_warp1"
    "_async_copyTrue_b_to_ldsTrue_b_preshuffleFalse_c_to_ldsFalse_gfx950"
)


def _tuned_files() -> list[Path]:
    if not (AITER / "bf16_tuned_gemm.csv").is_file():
        pytest.skip(f"{AITER} is absent: aiter's tuned CSVs live in ../shared/data beside the repo")
    return [AITER / "bf16_tuned_gemm.csv", *sorted((AITER / "model_configs").glob("*.csv"))]


# Under pytest-xdist one worker runs this module, so that its module fixture is set up once.
pytestmark = pytest.mark.xdist_group("tables/test_aiter")


@pytest.fixture(scope="module")
def shipped() -> list[AiterRecord]:
    return [r for f in _tuned_files() for r in read_aiter_csv(f)]


def _config(**over: object):
    base = dict(tile_m=16, tile_n=64, tile_k=128, stages=5, split_k=2, block_m_warp=1,
                block_n_warp=2, block_k_warp=1, async_copy=True, b_to_lds=True,
                b_preshuffle=False, c_to_lds=False)
    base.update(over)
    return aiter_hgemm_space().config_from_dict(base)


# -- space -----------------------------------------------------------------------------------------


def test_space_is_registered_and_documented() -> None:
    space = get_space(SPACE_NAME)
    assert space.size == 8 * 3 * 3 * 7 * 13 * 27 * 2
    assert all(c.doc for c in space.constraints)


@pytest.mark.parametrize(
    ("over", "shape", "arch", "rule"),
    [
        ({"async_copy": True}, Shape(1, 6144, 2048), "gfx942", "async_copy_fixed_by_arch"),
        ({"block_m_warp": 4, "block_n_warp": 4, "block_k_warp": 2}, None, "gfx950", "waves_per_block_le_16"),
        ({"tile_m": 48, "block_m_warp": 2}, None, "gfx950", "tile_m_divisible_by_m_warps"),
        ({"tile_n": 64, "block_n_warp": 4, "block_m_warp": 1}, None, "gfx950", "vector_loads_divide_tiles"),
        ({"stages": 8, "tile_k": 256, "tile_m": 64}, None, "gfx950", "lds_fits"),
        ({}, Shape(1, 6144 + 32, 2048), "gfx950", "tile_n_divides_n"),
        ({"split_k": 3}, Shape(1, 6144, 2048), "gfx950", "split_k_divides_k"),
        ({"tile_m": 32, "block_m_warp": 1}, Shape(8, 6144, 2048), "gfx950", "tile_m_le_max_m_16"),
        ({}, Shape(512, 6144, 2048), "gfx950", "split_k_tiles_le_128"),
        ({"split_k": 1}, Shape(4096, 4096, 4096), "gfx950", "large_gemm_single_config"),
    ],
)
def test_each_rule_rejects_its_case(over: dict, shape: Shape | None, arch: str, rule: str) -> None:
    space = aiter_hgemm_space()
    assert space.reject_reason(_config(**over), shape, get_arch(arch)) == rule


def test_lds_limit_comes_from_the_arch() -> None:
    space = aiter_hgemm_space()
    config = _config(stages=4, tile_m=64, block_m_warp=1, async_copy=False)  # 4*(64+64)*128*2 = 131072
    assert lds_estimate_bytes(config) == 131072
    assert space.reject_reason(config, None, get_arch("gfx942")) == "lds_fits"
    assert space.reject_reason(_config(stages=4, tile_m=64), None, get_arch("gfx950")) is None


def test_large_gemm_keeps_only_aiters_config_on_gfx950_and_nothing_on_gfx942() -> None:
    space = aiter_hgemm_space()
    big = Shape(4096, 4096, 4096)
    feasible = space.enumerate(big, get_arch("gfx950")).feasible
    assert [(c["tile_m"], c["tile_n"], c["tile_k"], c["stages"]) for c in feasible] == [(256, 256, 64, 2)]
    assert space.enumerate(big, get_arch("gfx942"), allow_empty=True).feasible == []


# -- names -----------------------------------------------------------------------------------------


def test_name_round_trip_and_fields() -> None:
    parsed = parse_kernel_name(NAME, arch="gfx950")
    assert parsed.config == _config()
    assert build_kernel_name(parsed.config, "gfx950") == NAME
    assert parse_kernel_name(build_kernel_name(_config(stages=3), "gfx950")).config["stages"] == 3


@pytest.mark.parametrize(
    ("name", "arch", "words"),
    [
        (NAME, "gfx942", "is for gfx950, not gfx942"),
        (NAME.replace("_block_k_warp1", ""), None, "not an aiter FlyDSL HGEMM name"),
        (NAME.replace("_gfx950", "_small_m_nr2_gfx950"), None, "_small_m family"),
        (NAME.replace("_wbf16", "_wf16"), None, "weight dtype"),
        (NAME.replace("block_k_warp1", "block_k_warp3"), None, "outside the aiter HGEMM space"),
        (NAME.replace("b_preshuffleFalse", "b_preshuffleTrue"), None, "outside the aiter HGEMM space"),
        ("sol2", None, "not an aiter FlyDSL HGEMM name"),
    ],
)
def test_bad_names_are_one_sentence_errors(name: str, arch: str | None, words: str) -> None:
    with pytest.raises(InputFormatError, match=words) as info:
        parse_kernel_name(name, arch=arch)
    assert "\n" not in str(info.value)


# -- real data -------------------------------------------------------------------------------------


def test_every_shipped_flydsl_row_parses_round_trips_and_passes(shipped: list[AiterRecord]) -> None:
    space = aiter_hgemm_space()
    flydsl = [r for r in shipped if r.libtype == "flydsl"]
    assert len(flydsl) == 341  # data/README: 340 on gfx950/256 and 1 on gfx942/80
    for r in flydsl:
        parsed = parse_kernel_name(r.kernelName, arch=r.gfx)
        assert build_kernel_name(parsed.config, r.gfx, parsed.dtype, parsed.out_dtype) == r.kernelName
        assert parsed.config["split_k"] == r.splitK
        shape = Shape(r.M, r.N, r.K)
        assert space.reject_reason(parsed.config, shape, get_arch(r.gfx)) is None, r.kernelName


def test_import_tuned_keeps_every_row_and_backend(shipped: list[AiterRecord]) -> None:
    store = TableStore(":memory:")
    tables = [t for f in _tuned_files() for t in read_tuned_csv(f)]
    for meta, rows in tables:
        store.write(meta, rows)
    assert len(tables) == len(shipped)  # one winner per aiter key, one table per key and file
    libs = [r.extra["libtype"] for _, rows in tables for r in rows]
    assert libs.count("flydsl") == 341 and "asm" in libs
    meta = store.meta("bf16_tuned_gemm/gfx950/cu256/1x6144x2048+out_fp32")
    assert (meta.arch, meta.device, meta.shape().regime) == ("gfx950", "MI355X", "decode")
    row = next(iter(store.load(meta.name).rows.values()))
    assert row.ok and math.isclose(row.time_ms, 0.0108611) and row.params["split_k"] == 2
    gfx1250 = [rows[0] for m, rows in tables if m.problem["gfx"] == "gfx1250" and rows[0].extra["us"] == 0]
    assert gfx1250 and all(r.outcome == "runtime_failed" for r in gfx1250)


def test_export_reimports_to_the_same_configs(shipped: list[AiterRecord], tmp_path: Path) -> None:
    store = TableStore(":memory:")
    for meta, rows in read_tuned_csv(_tuned_files()[0]):
        store.write(meta, rows)
    tables = [store.load(n) for n in store.names()]
    out = tmp_path / "flysearch_bf16_tuned.csv"
    written = export_tuned_csv(tables, out)
    assert len(written) == sum(r.libtype == "flydsl" for r in read_aiter_csv(_tuned_files()[0]))
    assert out.read_text().splitlines()[0] == ",".join(TUNED_HEADER)
    again = {m.name: rows for m, rows in read_tuned_csv(out, prefix="bf16_tuned_gemm")}
    for t in tables:
        flydsl = [r for r in t.rows.values() if r.extra["libtype"] == "flydsl"]
        if flydsl:
            assert [r.key for r in again[t.name]] == [flydsl[0].key]
            assert again[t.name][0].time_ms == pytest.approx(flydsl[0].time_ms)
            assert again[t.name][0].extra["kernelName"] == flydsl[0].extra["kernelName"]


def test_exported_csv_reads_as_aiters_runtime_reads_it(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas", reason="pandas replays aiter's runtime read (tuned_gemm.py)")
    store = TableStore(":memory:")
    for meta, rows in read_tuned_csv(_tuned_files()[0]):
        store.write(meta, rows)
    out = tmp_path / "t.csv"
    export_tuned_csv([store.load(n) for n in store.names()], out)
    cfg = pd.read_csv(out).drop_duplicates().set_index(list(TUNED_HEADER[:10])).to_dict("index")
    hit = cfg[("gfx950", 256, 1, 6144, 2048, False, "torch.bfloat16", "torch.float32", False, False)]
    assert hit["libtype"] == "flydsl" and hit["kernelName"] == NAME


def test_profile_import_maps_failures(tmp_path: Path) -> None:
    path = tmp_path / "profile.csv"
    key = "gfx950,256,1,6144,2048,False,torch.bfloat16,torch.bfloat16,False,False"
    other = NAME.replace("gemm5", "gemm4")
    lines = [
        ",".join(TUNED_HEADER),
        f"{key},flydsl,1,2,10.5,{NAME},0.01,2.4,2400.0",
        f"{key},flydsl,2,2,-1,{other},1.0,0,0",
        f"{key},flydsl,3,2,inf,{NAME.replace('gemm5', 'gemm3')},1.0,0,0",
        f"{key},flydsl,4,2,9.0,{NAME.replace('gemm5', 'gemm6')},0.2,2.8,2800.0",
        f"{key},asm,5,13,12.0,_ZN5aiter3fooE,0.0,2.0,2000.0",
        f"{key},hipblaslt,77,0,11.0,Null,Null,Null,Null",
    ]
    path.write_text("\n".join(lines) + "\n")
    [(meta, rows)] = read_profile_csv(path)
    by = {r.extra["solidx"]: r for r in rows}
    assert [by[i].outcome for i in (1, 2, 3, 4, 5, 77)] == [
        "ok", "runtime_failed", "runtime_failed", "wrong_result", "ok", "wrong_result"]
    assert by[5].key == "kernel=_ZN5aiter3fooE,libtype=asm,solidx=5,splitK=13"
    assert by[77].extra["err_ratio"] is None and "unknown" in by[77].detail
    assert by[1].time_ms == pytest.approx(0.0105) and by[3].time_ms is None
    assert "flydsl" in meta.notes and "hipblaslt" in meta.notes
    from click.testing import CliRunner

    from flysearch.cli import main

    db = tmp_path / "p.db"  # the CLI: the tuner's --errRatio 0.3 lets solidx 4 (0.2) count
    result = CliRunner().invoke(main, ["tables", "import", "--aiter-profile", "--err-ratio", "0.3", str(path),
                                       "--db", str(db)])
    assert result.exit_code == 0 and "imported 1 tables from" in result.output, result.output
    assert "(aiter tuner profile)" in result.output
    rows = TableStore(db, create=False).load(meta.name).rows.values()
    outcomes = {r.extra["solidx"]: r.outcome for r in rows}
    assert outcomes[4] == "ok" and outcomes[2] == "runtime_failed"


def test_a_repeated_config_is_refused_not_replaced(tmp_path: Path) -> None:
    key = "gfx950,256,1,6144,2048,False,torch.bfloat16,torch.bfloat16,False,False"
    lines = [
        ",".join(TUNED_HEADER),
        f"{key},flydsl,1,2,10.5,{NAME},0.01,2.4,2400.0",
        f"{key},asm,5,13,12.0,_ZN5aiter3fooE,0.0,2.0,2000.0",
        f"{key},flydsl,1,2,0.5,{NAME},0.01,2.4,2400.0",  # line 4: line 2's config, planted faster
    ]
    path = tmp_path / "profile.csv"
    path.write_text("\n".join(lines) + "\n")
    config = parse_kernel_name(NAME, arch="gfx950").config.key
    table = "profile/gfx950/cu256/1x6144x2048"
    for reader in (read_profile_csv, read_tuned_csv):
        with pytest.raises(InputFormatError) as info:
            reader(path)
        assert str(info.value) == (
            f"{path}:4: config {config!r} of table {table!r} repeats line 2; keep one row per config."
        )
    records = read_aiter_csv(path)
    with pytest.raises(InputFormatError, match=r"^Record 3: config .* repeats record 1; keep one row"):
        records_to_tables(records, prefix="profile", source="test")
    assert len(records_to_tables(records[:2], prefix="p", source="t")[0][1]) == 2


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda h, r: (h.replace(",kernelName", ""), r), "lacks column"),
        (lambda h, r: (h, r.replace(",10.5,", ",fast,")), "column 'us' holds 'fast'"),
        (lambda h, r: (h, r.replace(",256,", ",2x6,")), "column 'cu_num'"),
        (lambda h, r: (h, r.replace("False,torch", "maybe,torch")), "True/False"),
    ],
)
def test_malformed_csv_is_one_line_error(tmp_path: Path, edit, words: str) -> None:
    header = ",".join(TUNED_HEADER)
    key = "gfx950,256,1,6144,2048,False,torch.bfloat16,torch.bfloat16,False,False"
    row = f"{key},flydsl,1,2,10.5,{NAME},0,1,1"
    h, r = edit(header, row)
    path = tmp_path / "bad.csv"
    path.write_text(f"{h}\n{r}\n")
    with pytest.raises(InputFormatError, match=words) as info:
        read_aiter_csv(path)
    assert "\n" not in str(info.value)


def test_write_refuses_duplicate_keys_and_is_atomic(shipped: list[AiterRecord], tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    write_aiter_csv(path, shipped[:3])
    before = path.read_text()
    with pytest.raises(InputFormatError, match="share aiter key"):
        write_aiter_csv(path, [shipped[0], shipped[0]])
    assert path.read_text() == before and list(tmp_path.iterdir()) == [path]
    with path.open() as fh:
        assert len(list(csv.DictReader(fh))) == 3


# -- CLI -------------------------------------------------------------------------------------------


def test_cli_import_check_export(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from flysearch.cli import main

    tuned = _tuned_files()[0]
    db, out = str(tmp_path / "t.db"), str(tmp_path / "out.csv")
    runner = CliRunner()
    result = runner.invoke(main, ["tables", "import", str(tuned), "--db", db])
    assert result.exit_code == 0, result.output
    assert "imported 232 tables" in result.output and "(aiter tuned CSV)" in result.output
    result = runner.invoke(main, ["aiter", "check", *map(str, _tuned_files())])
    assert result.exit_code == 0 and "341 FlyDSL rows checked, 0 failed" in result.output
    result = runner.invoke(main, ["export", "aiter", "--out", out, "--db", db])
    assert result.exit_code == 0, result.output
    assert "wrote 5 FlyDSL winners from 232 tables" in result.output
    _, failures = check_flydsl_records(read_aiter_csv(out))
    assert failures == []
    bad = tmp_path / "bad.csv"
    bad.write_text(Path(out).read_text().replace("_block_k_warp1_", "_block_k_warp8_", 1))
    result = runner.invoke(main, ["aiter", "check", str(bad)])
    assert result.exit_code == 2 and "1 failed" in result.output
