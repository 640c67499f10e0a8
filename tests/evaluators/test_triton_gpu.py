"""The live Triton path on a CUDA GPU (skipped without one): correctness, validation, a small race."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from flysearch.evaluators._gpu_bench import TimingProtocol, _ShapeBench  # noqa: E402
from flysearch.evaluators._triton import TritonEvaluator  # noqa: E402
from flysearch.kernels._triton_gemm import make_space  # noqa: E402
from flysearch.race import RaceSettings, RaceShape, race_summary, run_race, vendor_in_rounds, vendor_ms  # noqa: E402
from flysearch.space import Shape  # noqa: E402
from flysearch.tables import Outcome, TableStore  # noqa: E402

pytestmark = pytest.mark.gpu

CASES = [
    (Shape(37, 101, 203), dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=32, GROUP_M=1, SPLIT_K=1)),
    (Shape(37, 101, 203), dict(BLOCK_M=32, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, SPLIT_K=2)),
    (Shape(1, 576, 7168), dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, GROUP_M=1, SPLIT_K=16)),
    (Shape(200, 96, 4100), dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, SPLIT_K=4)),
    (Shape(1000, 1536, 7168), dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, SPLIT_K=1)),
    (Shape(300, 4000, 1000), dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, SPLIT_K=1)),
]


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory):
    with TritonEvaluator(cache_dir=str(tmp_path_factory.mktemp("triton-cache"))) as ev:
        yield ev


@pytest.mark.parametrize("shape,tiles", CASES, ids=[f"{s.M}x{s.N}x{s.K}-sk{t['SPLIT_K']}" for s, t in CASES])
def test_kernel_matches_fp32_reference(evaluator, shape, tiles) -> None:
    config = make_space().config(**tiles, num_warps=4, num_stages=3)
    compiled = evaluator.compile(config, shape)
    assert compiled.outcome is Outcome.OK, compiled.detail
    m = evaluator.time(compiled)
    print(f"{shape.M}x{shape.N}x{shape.K} {config.key}: {m.outcome.value} {m.time_ms} ms "
          f"rel_err {m.extra.get('rel_err')} compile {compiled.compile_s:.2f} s reps {m.extra.get('reps')}")
    assert m.outcome is Outcome.OK, m.detail
    assert m.extra["rel_err"] < 5e-3
    assert m.time_ms is not None and m.time_ms > 0


def test_validation_catches_unwritten_and_wrong_outputs() -> None:
    bench = _ShapeBench((64, 128, 256, "bf16", TimingProtocol()), TimingProtocol())

    def writes_nothing(i: int) -> None:
        pass

    def off_by_a_bit(i: int) -> None:
        a, w = bench.sets[i]
        torch.mm(a, w.t(), out=bench.c)
        bench.c.mul_(1.05)

    def correct(i: int) -> None:
        a, w = bench.sets[i]
        torch.mm(a, w.t(), out=bench.c)

    assert bench._measure(writes_nothing, 1, None)["outcome"] == "wrong_result"
    assert bench._measure(off_by_a_bit, 1, None)["outcome"] == "wrong_result"
    ok = bench._measure(correct, 1, None)
    assert ok["outcome"] == "ok" and ok["time_ms"] > 0


def test_small_race_writes_tables_and_times_cublas(tmp_path) -> None:
    store = TableStore(tmp_path / "race.db")
    settings = RaceSettings(limit=24, workers=8, cache_dir=str(tmp_path / "cache"))
    report = run_race(make_space(), [RaceShape(Shape(16, 4096, 4096)), RaceShape(Shape(512, 1024, 8192))],
                      store, settings, progress=print)
    print(f"race: {report.measured} configs in {report.wall_s:.1f} s on {report.device} {report.versions}")
    assert report.measured == 48
    for row in race_summary(store):
        print(row)
        assert row["counts"].get("ok", 0) > 0
        assert row["cublas_ms"] is not None and row["winner"] in ("triton", "cublas")
    for shape in report.shapes:  # each shape's top confirmed in 10 rounds (RaceSettings' default)
        table = store.load(shape.table)
        rounds = table.retimed_ms()
        assert shape.retimed == len(rounds) >= 8 and shape.confirmed_key in rounds
        for key, median in rounds.items():
            assert len(table.rows[key].extra["retime"]["rounds_ms"]) == 10
            assert 0.5 < median / (table.rows[key].time_ms or 0.0) < 2.0  # the same kernel, timed again
        vendor = json.loads(table.meta.notes)["vendor"]  # cuBLAS was one more entry of every round
        assert len(vendor["retime"]["rounds_ms"]) == 10 and vendor_in_rounds(table.meta)
        assert 0.5 < vendor["retime"]["median_ms"] / vendor["time_ms"] < 2.0
        assert vendor_ms(table.meta) == vendor["retime"]["median_ms"] == shape.vendor_ms


FUSED_CASES = [
    (Shape(37, 101, 203), dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=32, GROUP_M=1, SPLIT_K=2)),
    (Shape(1, 576, 7168), dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, GROUP_M=1, SPLIT_K=16)),
    (Shape(4, 6144, 4096), dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, GROUP_M=1, SPLIT_K=8)),
    (Shape(200, 96, 4100), dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, SPLIT_K=4)),
    (Shape(512, 1536, 7168), dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, SPLIT_K=4)),
]


@pytest.fixture(scope="module")
def fused_evaluator(tmp_path_factory):
    with TritonEvaluator(cache_dir=str(tmp_path_factory.mktemp("triton-cache-fused")),
                         family="triton_gemm_splitk_fused") as ev:
        yield ev


@pytest.mark.parametrize("shape,tiles", FUSED_CASES,
                         ids=[f"{s.M}x{s.N}x{s.K}-sk{t['SPLIT_K']}" for s, t in FUSED_CASES])
def test_fused_kernel_matches_fp32_reference_through_the_evaluator(fused_evaluator, shape, tiles) -> None:
    """The fused family as the race launches it: the compiled binary, one launch a call, validated
    before timing and timed over many launches that each must leave the workspace clean."""
    from flysearch.kernels._triton_fused import make_space as fused_space

    config = fused_space().config(**tiles, num_warps=4, num_stages=3)
    compiled = fused_evaluator.compile(config, shape)
    assert compiled.outcome is Outcome.OK, compiled.detail
    for _ in range(3):  # validation after many timed launches: a dirty workspace would show here
        m = fused_evaluator.time(compiled)
        print(f"fused {shape.M}x{shape.N}x{shape.K} {config.key}: {m.outcome.value} {m.time_ms} ms "
              f"rel_err {m.extra.get('rel_err')} reps {m.extra.get('reps')}")
        assert m.outcome is Outcome.OK, m.detail
        assert m.extra["rel_err"] < 5e-3


def test_small_race_of_the_fused_family(tmp_path) -> None:
    from flysearch.kernels._triton_fused import make_space as fused_space

    store = TableStore(tmp_path / "race.db")
    settings = RaceSettings(family="triton_gemm_splitk_fused", limit=24, workers=8,
                            cache_dir=str(tmp_path / "cache"))
    report = run_race(fused_space(), [RaceShape(Shape(4, 6144, 4096))], store, settings, progress=print)
    assert report.measured == 24
    (row,) = race_summary(store)
    print(row)
    assert row["table"].startswith("triton_gemm_fused/") and row["table"].endswith("/4x6144x4096")
    assert row["counts"].get("ok", 0) == 24 and row["cublas_ms"] is not None


def test_small_race_of_the_tma_family(tmp_path) -> None:
    """The TMA family through the product's race: the binaries its workers compiled, bound to TMA
    descriptors and replayed from CUDA graphs, validated and timed; the M=1 specialization too."""
    from flysearch.kernels._triton_tma import make_space as tma_space

    store = TableStore(tmp_path / "race.db")
    settings = RaceSettings(family="triton_gemm_tma", limit=16, workers=8, cache_dir=str(tmp_path / "cache"))
    shapes = [RaceShape(Shape(1, 4096, 4096)), RaceShape(Shape(512, 1536, 7168))]
    report = run_race(tma_space(), shapes, store, settings, progress=print)
    assert report.measured == 32 and report.compile_failures == 0
    for row in race_summary(store):
        print(row)
        assert row["table"].startswith("triton_gemm_tma/")
        assert row["counts"] == {"ok": 16} and row["cublas_ms"] is not None and row["retimed"] >= 8
