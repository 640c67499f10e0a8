"""The race scheduler on the CPU: GPU task functions replaced by tests/_race_fakes.py stand-ins."""

from __future__ import annotations

import json

import pytest

from flysearch.export import best_configs, export_json, triton_configs_source
from flysearch.kernels._triton_gemm import make_space
from flysearch.race._race import RaceSettings, RaceShape, race_summary, run_race, table_name, vendor_ms
from flysearch.space import Shape
from flysearch.tables import TableStore, dump_table_file, read_table_file
from tests import _race_fakes as fakes

SHAPE = Shape(4, 576, 7168)
NAME = "triton_gemm/H200/4x576x7168"


def _settings(**kw) -> RaceSettings:
    base = dict(workers=3, compile_timeout_s=10.0, launch_timeout_s=30.0, compile_fn=fakes.fake_compile,
                timer_fn=fakes.fake_timer, batch_rows=7)
    base.update(kw)
    return RaceSettings(**base)


# Under pytest-xdist one worker runs this module, so that its module fixture is set up once.
pytestmark = pytest.mark.xdist_group("race/test_race")


@pytest.fixture(scope="module")
def raced(tmp_path_factory) -> tuple[TableStore, object]:
    db = tmp_path_factory.mktemp("race") / "race.db"
    store = TableStore(db)
    report = run_race(make_space(), [RaceShape(SHAPE, "dsv3", "DeepSeek-V3", "kv_a")], store,
                      _settings(limit=80))
    return store, report


def test_table_name() -> None:
    assert table_name("triton_gemm", "H200", Shape(1, 4096, 4096)) == "triton_gemm/H200/1x4096x4096"


def test_a_race_of_the_fused_family_compiles_and_launches_that_family(tmp_path) -> None:
    from flysearch.kernels._triton_fused import make_space as fused_space

    store = TableStore(tmp_path / "fused.db")
    settings = _settings(family="triton_gemm_splitk_fused", compile_fn=fakes.fake_compile_family,
                         timer_fn=fakes.fake_timer_family, limit=24)
    run_race(fused_space(), [RaceShape(SHAPE)], store, settings)
    assert store.names() == ["triton_gemm_fused/H200/4x576x7168"]
    table = store.load("triton_gemm_fused/H200/4x576x7168")
    assert table.meta.kernel == "triton_gemm_fused" and table.meta.space["name"] == "triton_gemm_splitk_fused"
    ok = table.ok_rows()
    assert ok and all(r.extra["family"] == "triton_gemm_splitk_fused" for r in ok)
    assert not any("family" in r.detail for r in table.rows.values())
    assert table.retimed_ms()  # the re-timing rounds launched the same family


def test_a_race_of_an_unknown_family_fails_before_starting(tmp_path) -> None:
    from flysearch.errors import FlysearchError

    with pytest.raises(FlysearchError, match="no Triton family that flysearch races"):
        run_race(make_space(), [RaceShape(SHAPE)], TableStore(tmp_path / "x.db"),
                 _settings(family="flydsl_gemm"))


def test_a_race_of_the_tma_family_compiles_each_binary_for_the_gpus_sm_count(tmp_path) -> None:
    from flysearch.kernels._triton_tma import make_space as tma_space

    store = TableStore(tmp_path / "tma.db")
    shapes = [RaceShape(Shape(16, 4096, 4096)), RaceShape(Shape(32, 4096, 4096))]
    settings = _settings(family="triton_gemm_tma", compile_fn=fakes.fake_compile_spec,
                         timer_fn=fakes.fake_timer_spec, limit=6)
    report = run_race(tma_space(), shapes, store, settings)
    assert report.compiles == 6  # M=16 and M=32 specialize alike: one binary per config serves both
    assert store.names() == ["triton_gemm_tma/H200/16x4096x4096", "triton_gemm_tma/H200/32x4096x4096"]
    for name in store.names():
        table = store.load(name)
        assert table.meta.kernel == "triton_gemm_tma" and table.meta.space["name"] == "triton_gemm_tma"
        ok = table.ok_rows()
        assert len(ok) == 6 and table.retimed_ms()
        # the binary for the fake H200's 132 SMs (the persistent loop's stride is compiled in)
        assert {(r.extra["family"], r.extra["spec"]) for r in ok} == {
            ("triton_gemm_tma", "m=16,n16=1,k16=1,sms=132")}
        assert all(r.extra["cache_hit"] is True for r in ok)  # the compile's note, kept in the row


def test_a_race_of_aiters_family_compiles_one_binary_per_shape(tmp_path) -> None:
    from flysearch.kernels import get_space

    store = TableStore(tmp_path / "aiter.db")
    shapes = [RaceShape(Shape(16, 4096, 4096)), RaceShape(Shape(32, 4096, 4096))]
    settings = _settings(family="aiter_triton_gemm_cuda", compile_fn=fakes.fake_compile_spec,
                         timer_fn=fakes.fake_timer_spec, limit=3, retime=None)
    report = run_race(get_space("aiter_triton_gemm_cuda"), shapes, store, settings)
    assert report.compiles == 6  # GRID_MN and SPLITK_BLOCK_SIZE are constexprs: no binary serves two shapes
    assert store.names() == ["aiter_triton_gemm/H200/16x4096x4096", "aiter_triton_gemm/H200/32x4096x4096"]
    table = store.load("aiter_triton_gemm/H200/32x4096x4096")
    assert table.meta.space["name"] == "aiter_triton_gemm_cuda"
    assert {(r.extra["family"], r.extra["spec"]) for r in table.ok_rows()} == {
        ("aiter_triton_gemm_cuda", "32x4096x4096")}


def test_a_race_of_the_tma_family_on_a_gpu_without_tma_says_so(tmp_path) -> None:
    from flysearch.errors import FlysearchError
    from flysearch.kernels._triton_tma import make_space as tma_space

    store = TableStore(tmp_path / "x.db")
    settings = _settings(family="triton_gemm_tma", compile_fn=fakes.fake_compile_spec,
                         timer_fn=fakes.fake_timer_a100)
    with pytest.raises(FlysearchError, match=r"needs TMA \(sm_90 or newer\) and sm_80 has none"):
        run_race(tma_space(), [RaceShape(SHAPE)], store, settings)
    assert store.names() == []
    with pytest.raises(FlysearchError, match="needs TMA"):  # a named arch fails before any process starts
        run_race(tma_space(), [RaceShape(SHAPE)], store, _settings(family="triton_gemm_tma", arch="gfx942"))


def test_race_records_every_config_with_its_outcome(raced) -> None:
    store, report = raced
    table = store.load(NAME)
    feasible = make_space().enumerate(SHAPE, __import__("flysearch.space").space.get_arch("sm_90")).feasible
    assert set(table.rows) == {c.key for c in feasible[:80]}
    assert report.shapes[0].measured == 80
    by_outcome: dict[str, list] = {}
    for row in table.rows.values():
        by_outcome.setdefault(row.outcome, []).append(row)
    for row in table.rows.values():
        p = row.params
        if fakes._matches(p, fakes.CRASH_COMPILE):
            assert row.outcome == "compile_failed" and "crash" in row.detail
        elif fakes._matches(p, fakes.HANG_COMPILE):
            assert row.outcome == "compile_failed" and "timeout" in row.detail
        elif p["BLOCK_K"] == 256 and p["num_stages"] == 4:
            assert row.outcome == "compile_failed" and "shared memory" in row.detail
        elif fakes._matches(p, fakes.CRASH_TIMER):
            assert row.outcome == "runtime_failed" and "crash" in row.detail
        elif p["SPLIT_K"] == 16:
            assert row.outcome == "wrong_result" and row.time_ms is None
        else:
            assert row.outcome == "ok" and row.time_ms == pytest.approx(fakes.fake_time_ms(p))
            assert row.compile_s == pytest.approx(0.001 * p["BLOCK_K"])
    assert {"ok", "compile_failed", "runtime_failed"} <= set(by_outcome)


def test_wrong_results_never_win(raced) -> None:
    store, _ = raced
    best = store.load(NAME).best()
    assert best.params["SPLIT_K"] != 16 and best.outcome == "ok"


def test_meta_records_device_versions_and_vendor_time(raced) -> None:
    store, _ = raced
    meta = store.meta(NAME)
    assert meta.device == "NVIDIA H200" and meta.arch == "sm_90"
    assert meta.versions["triton"] == "fake"
    assert vendor_ms(meta) == pytest.approx(1.05)
    assert json.loads(meta.notes)["layer"] == "kv_a"
    assert meta.space["name"] == "triton_gemm_splitk"
    (summary,) = race_summary(store)
    assert summary["winner"] == ("triton" if summary["triton_ms"] < 1.05 else "cublas")
    assert summary["ratio"] == pytest.approx(summary["triton_ms"] / 1.05)


def test_rerun_skips_measured_configs_and_extends(raced) -> None:
    store, _ = raced
    before = store.load(NAME)
    report = run_race(make_space(), [RaceShape(SHAPE)], store, _settings(limit=90))
    assert report.shapes[0].already_done == 80
    assert report.shapes[0].measured == 10
    after = store.load(NAME)
    assert len(after) == 90
    assert all(after.rows[k] == before.rows[k] for k in before.rows)


def test_deadline_stops_and_keeps_what_was_flushed(tmp_path) -> None:
    store = TableStore(tmp_path / "d.db")
    report = run_race(make_space(), [RaceShape(SHAPE), RaceShape(Shape(1, 6144, 4096))], store,
                      _settings(limit=40, deadline_s=0.0))
    assert report.stopped == "deadline"
    assert report.measured == sum(len(store.load(n)) for n in store.names())


def test_dump_and_export_round_trip(raced, tmp_path) -> None:
    store, _ = raced
    path = tmp_path / "t.table.json.gz"
    dump_table_file(store.load(NAME), path)
    meta, rows = read_table_file(path)
    assert meta.name == NAME and len(rows) == len(store.load(NAME))
    entries = best_configs(store, "triton_gemm/", top=2)
    assert [e["rank"] for e in entries] == [1, 2]
    assert entries[0]["key"] == store.load(NAME).best().key
    source = triton_configs_source(entries)
    namespace: dict = {}
    exec(source.replace("import triton", ""), {"triton": _FakeTriton}, namespace)
    first = namespace["CONFIGS"][0]
    assert first.kwargs == {k: entries[0]["params"][k] for k in
                            ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K")}
    assert first.num_warps == entries[0]["params"]["num_warps"]
    assert json.loads(export_json(entries))["configs"][0]["time_ms"] == entries[0]["time_ms"]


def test_configs_of_two_kernels_go_to_two_lists() -> None:
    """An autotune list tunes one kernel: split-K and fused split-K winners are never mixed."""
    def entry(kernel: str, block_m: int) -> dict:
        return {"table": f"{kernel}/H200/1x8x8", "kernel": kernel, "time_ms": 0.01,
                "params": {"BLOCK_M": block_m, "num_warps": 4, "num_stages": 3}}

    namespace: dict = {}
    source = triton_configs_source([entry("triton_gemm", 16), entry("triton_gemm_fused", 32),
                                    entry("triton_gemm", 64)])
    exec(source.replace("import triton", ""), {"triton": _FakeTriton}, namespace)
    assert [c.kwargs["BLOCK_M"] for c in namespace["CONFIGS_TRITON_GEMM"]] == [16, 64]
    assert [c.kwargs["BLOCK_M"] for c in namespace["CONFIGS_TRITON_GEMM_FUSED"]] == [32]
    assert "CONFIGS" not in namespace
    alone: dict = {}
    exec(triton_configs_source([entry("triton_gemm", 16)]).replace("import triton", ""),
         {"triton": _FakeTriton}, alone)
    assert [c.kwargs["BLOCK_M"] for c in alone["CONFIGS"]] == [16]


class _FakeTriton:
    class Config:
        def __init__(self, kwargs, num_warps=4, num_stages=3):
            self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages


def test_committed_h200_tables_cover_the_whole_feasible_space() -> None:
    from pathlib import Path

    from flysearch.race import race_summary
    from flysearch.space import get_arch

    files = sorted(Path(__file__).resolve().parents[2].glob("lab/benchmarks/data/h200/*.table.json.gz"))
    assert len(files) >= 12
    store = TableStore(":memory:")
    regimes = set()
    for path in files:
        meta, rows = read_table_file(path)
        shape = meta.shape()
        # Over the value sets the table was raced with (num_stages stopped at 4 then).
        raced = {p["name"]: p["values"] for p in meta.space["params"]}
        feasible = [c for c in make_space().enumerate(shape, get_arch("sm_90")).feasible
                    if all(c[name] in values for name, values in raced.items())]
        # Raced while warps_fill_tile kept 8 warps only for tiles of 64 x 64 and more: every
        # feasible config but those with 8 warps on tiles of 1,024 to 4,095 outputs.
        later = {c.key for c in feasible
                 if c["num_warps"] == 8 and int(c["BLOCK_M"]) * int(c["BLOCK_N"]) < 64 * 64}
        assert later and {r.key for r in rows} == {c.key for c in feasible} - later, path.name
        assert meta.device == "NVIDIA H200" and meta.versions["triton"] and meta.date
        assert vendor_ms(meta) is not None
        regimes.add(shape.regime)
        store.write(meta, rows)
    assert regimes == {"decode", "small_m", "k_heavy", "prefill", "square"}
    assert all(r["winner"] in ("triton", "cublas") for r in race_summary(store))


def test_fastest_backend_per_shape_across_families(tmp_path) -> None:
    """A split-K and a TMA table of one shape in one database: the summary names the family whose
    best has the lowest ratio to its own session's cuBLAS, and cuBLAS where none is below 1."""
    from pathlib import Path

    from click.testing import CliRunner

    from flysearch.cli import main
    from flysearch.race import fastest_backends

    data = Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "data"
    db = str(tmp_path / "both.db")
    store = TableStore(db)
    files = [data / "h200_kernels_holdout" / "triton_gemm__H200__64x12800x4096.table.json.gz",
             data / "h200_tma_holdout" / "triton_gemm_tma__H200__64x12800x4096.table.json.gz",
             data / "h200_kernels_holdout" / "triton_gemm__H200__5120x5120x5120.table.json.gz",
             data / "h200_tma_holdout" / "triton_gemm_tma__H200__5120x5120x5120.table.json.gz"]
    for path in files:
        meta, rows = read_table_file(path)
        store.write(meta, rows)
    summary = race_summary(store)
    by_shape = {b["shape"]: b for b in fastest_backends(summary)}
    ratio = {(r["kernel"], r["shape"]): r["ratio"] for r in summary}
    small, square = by_shape["64x12800x4096"], by_shape["5120x5120x5120"]
    assert set(small["ratios"]) == {"triton_gemm", "triton_gemm_tma"}
    expected = min(small["ratios"], key=small["ratios"].get)
    assert small["fastest"] == (expected if small["ratios"][expected] < 1 else "cublas")
    assert small["ratios"]["triton_gemm_tma"] == ratio[("triton_gemm_tma", "64x12800x4096")]
    assert square["fastest"] == "cublas" and min(square["ratios"].values()) > 1
    out = CliRunner().invoke(main, ["race", "summary", "--db", db])
    assert out.exit_code == 0, out.output
    assert "fastest backend per shape" in out.output
    line = next(s for s in out.output.splitlines() if s.startswith("5120x5120x5120"))
    assert "cublas" in line and "triton_gemm_tma" in line


def test_triton_export_names_the_fastest_backend_of_each_shape(tmp_path) -> None:
    from pathlib import Path

    from flysearch.export import export_triton

    data = Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "data"
    db = str(tmp_path / "both.db")
    store = TableStore(db)
    for path in (data / "h200_kernels_holdout" / "triton_gemm__H200__5120x5120x5120.table.json.gz",
                 data / "h200_tma_holdout" / "triton_gemm_tma__H200__5120x5120x5120.table.json.gz",
                 data / "h200_kernels_holdout" / "triton_gemm__H200__64x12800x4096.table.json.gz"):
        meta, rows = read_table_file(path)
        store.write(meta, rows)
    store.close()
    json_out = tmp_path / "best.json"
    source = export_triton(db, prefix="triton_gemm/", json_out=json_out)
    entries = {e["shape"]: e for e in json.loads(json_out.read_text())["configs"]}
    assert entries["5120x5120x5120"]["fastest_backend"] == "cublas"
    assert set(entries["5120x5120x5120"]["backend_ratios"]) == {"triton_gemm", "triton_gemm_tma"}
    assert set(entries["64x12800x4096"]["backend_ratios"]) == {"triton_gemm"}
    assert "fastest backend here: cublas" in source
