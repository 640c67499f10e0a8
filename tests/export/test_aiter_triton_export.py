"""``flysearch export aiter-triton`` round-trips through aiter's own loader: the files written are
read by the installed aiter's ``_get_config`` (its real code, on this CPU) into the configs exported."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

pytest.importorskip("triton", reason="aiter's Triton module imports triton")

from flysearch.cli import main
from flysearch.errors import FlysearchError
from flysearch.export import aiter_triton_buckets, write_aiter_triton
from flysearch.export._aiter_triton import BOUNDS, KERNEL
from flysearch.kernels._aiter_package import aiter_root, import_aiter_module, triton_configs_dir
from flysearch.space import Config
from flysearch.tables import GroundTruth, Row, TableMeta, TableStore
from tests.export._aiter_loader import load_with_aiter

if aiter_root() is None:
    pytest.skip("amd-aiter is not installed (pip install amd-aiter)", allow_module_level=True)

SHIPPED = "MI350X-GEMM-A16W16-N=2880-K=4096.json"  # a per-(N, K) file aiter ships, every bucket
BASE: dict[str, Any] = dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=64, BLOCK_SIZE_K=128, GROUP_SIZE_M=1, NUM_KSPLIT=1,
                            num_warps=4, num_stages=2, waves_per_eu=2, matrix_instr_nonkdim=16, kpack=1,
                            cache_modifier=".cg")
# The best config of each measured M: distinct, so that a bucket names the M it came from.
# M=3's splits K into 16: aiter then clamps its BLOCK_SIZE_K (K=4000: to 64, K=4096: to 256).
BEST: dict[int, dict[str, Any]] = {
    1: dict(BASE, BLOCK_SIZE_N=16),
    3: dict(BASE, BLOCK_SIZE_N=32, BLOCK_SIZE_K=512, NUM_KSPLIT=16, cache_modifier=""),
    16: dict(BASE, GROUP_SIZE_M=2),
    20: dict(BASE, BLOCK_SIZE_M=32, waves_per_eu=0),
    64: dict(BASE, BLOCK_SIZE_M=64, NUM_KSPLIT=2, kpack=2),
    300: dict(BASE, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, num_warps=8, cache_modifier=""),
    1024: dict(BASE, BLOCK_SIZE_M=256, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, num_warps=8, GROUP_SIZE_M=4),
}
BUCKETS = {"M_LEQ_4": 3, "M_LEQ_16": 16, "M_LEQ_32": 20, "M_LEQ_64": 64, "M_LEQ_512": 300,
           "M_LEQ_1024": 1024, "any": 1024}
# A queried M -> the measured M whose best aiter returns: the largest M of its bucket; an M of an
# unmeasured bucket gets the next larger bucket's; above the largest measured bucket, "any".
SERVED = {1: 3, 2: 3, 4: 3, 5: 16, 8: 16, 16: 16, 17: 20, 32: 20, 33: 64, 64: 64, 65: 300, 256: 300,
          512: 300, 513: 1024, 1024: 1024, 1025: 1024, 8192: 1024, 8193: 1024, 100_000: 1024}
SHAPES = {"gfx942": (4096, 4000), "gfx950": (2880, 4096)}  # (N, K) per arch
DEVICES = {"gfx942": "MI300X", "gfx950": "MI350X"}
SLOWER = dict(BASE, BLOCK_SIZE_M=256, BLOCK_SIZE_N=16)  # in every table, never the best


def _table(m: int, n: int, k: int, arch: str, best: dict[str, Any], *, kernel: str = KERNEL,
           name: str = "") -> GroundTruth:
    rows = [Row(Config.from_dict(best).key, best, "ok", 0.010),
            Row(Config.from_dict(SLOWER).key, SLOWER, "ok", 0.020),
            Row("failed", dict(BASE, BLOCK_SIZE_M=8), "compile_failed")]
    meta = TableMeta(name or f"{kernel}/{arch}/{m}x{n}x{k}", kernel, arch, "",
                     {"M": m, "N": n, "K": k, "dtype": "bf16"}, {})
    return GroundTruth(meta, {r.key: r for r in rows})


def _tables(arch: str) -> list[GroundTruth]:
    n, k = SHAPES[arch]
    return [_table(m, n, k, arch, config) for m, config in BEST.items()]


def _aiter_block_k(block_k: int, splitk_block: int) -> int:
    """aiter's clamp of BLOCK_SIZE_K to a split of K (``_get_config``, gemm_a16w16.py)."""
    if block_k > splitk_block:
        block_k = 1 << (splitk_block - 1).bit_length()
        if block_k > splitk_block:
            block_k //= 4
    return max(block_k, 16)


def _check_loaded(loaded: dict[str, Any], exported: dict[str, Any], K: int) -> None:
    """*loaded* is *exported* after aiter's own post-processing."""
    assert set(loaded) == {*exported, "NUM_KSPLIT", "SPLITK_BLOCK_SIZE"}
    assert {k: loaded[k] for k in exported if k != "BLOCK_SIZE_K"} == {
        k: v for k, v in exported.items() if k != "BLOCK_SIZE_K"}
    assert loaded["NUM_KSPLIT"] == exported.get("NUM_KSPLIT", 1)
    assert loaded["SPLITK_BLOCK_SIZE"] == math.ceil(K / loaded["NUM_KSPLIT"])
    assert loaded["BLOCK_SIZE_K"] == _aiter_block_k(exported["BLOCK_SIZE_K"], loaded["SPLITK_BLOCK_SIZE"])


def _gemm_module() -> Any:
    return import_aiter_module("ops.triton._triton_kernels.gemm_a16w16")


# -- the round trip ------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_aiters_loader_returns_the_exported_configs(arch: str, tmp_path: Path) -> None:
    n, k = SHAPES[arch]
    done = write_aiter_triton(_tables(arch), tmp_path)
    path = tmp_path / "gemm" / f"{DEVICES[arch]}-GEMM-A16W16-N={n}-K={k}.json"
    assert [f.path for f in done.written] == [path] and done.skipped == []
    assert done.written[0].tables == {b: f"{KERNEL}/{arch}/{m}x{n}x{k}" for b, m in BUCKETS.items()}
    doc = json.loads(path.read_text())
    assert list(doc) == list(BUCKETS)
    clamped = 0
    for M, measured in SERVED.items():
        exported = doc[next(b for b, m in BUCKETS.items() if m == measured)]
        loaded = load_with_aiter(tmp_path, arch, M, n, k)
        _check_loaded(loaded, exported, k)
        assert loaded["BLOCK_SIZE_M"] == BEST[measured]["BLOCK_SIZE_M"]
        assert loaded["BLOCK_SIZE_N"] == BEST[measured]["BLOCK_SIZE_N"]
        clamped += loaded["BLOCK_SIZE_K"] != exported["BLOCK_SIZE_K"]
    assert clamped  # aiter's BLOCK_SIZE_K clamp was exercised, and matched


def test_the_file_has_aiters_keys_order_and_types(tmp_path: Path) -> None:
    shipped = json.loads((triton_configs_dir() / SHIPPED).read_text())
    done = write_aiter_triton(_tables("gfx950"), tmp_path)
    doc = json.loads(done.written[0].path.read_text())
    for bucket, m in BUCKETS.items():
        assert list(doc[bucket]) == [*next(iter(shipped.values())), "NUM_KSPLIT", "kpack"]
        assert doc[bucket] == {**BEST[m], "cache_modifier": BEST[m]["cache_modifier"] or None}
        assert all(type(v) is int for key, v in doc[bucket].items() if key != "cache_modifier")
    assert doc["M_LEQ_4"]["cache_modifier"] is None and doc["M_LEQ_16"]["cache_modifier"] == ".cg"


def test_every_bound_of_aiters_loader(tmp_path: Path) -> None:
    """flysearch's bounds are aiter's: a config per bound, each found at its bound and not above."""
    best = {m: dict(BASE, GROUP_SIZE_M=i + 1) for i, m in enumerate([*BOUNDS, 10_000])}
    doc = aiter_triton_buckets(best)
    assert list(doc) == [*(f"M_LEQ_{b}" for b in BOUNDS), "any"]
    (tmp_path / "gemm").mkdir()
    (tmp_path / "gemm" / "MI300X-GEMM-A16W16-N=512-K=512.json").write_text(json.dumps(doc))
    ms = sorted(best)
    for below, above in itertools.pairwise(ms):
        at, after = (load_with_aiter(tmp_path, "gfx942", m, 512, 512) for m in (below, below + 1))
        assert (at["GROUP_SIZE_M"], after["GROUP_SIZE_M"]) == (best[below]["GROUP_SIZE_M"],
                                                               best[above]["GROUP_SIZE_M"])


def test_a_shipped_file_loads_as_its_bucket_and_aiter_is_restored() -> None:
    """The patching works: aiter's own folder, read through load_with_aiter, gives that file's buckets;
    afterwards aiter's module is as it was."""
    module = _gemm_module()
    path, get_arch = module.AITER_TRITON_CONFIGS_PATH, module.arch_info.get_arch
    module._get_config._config_dict = held = {"default": {"any": {}}}
    shipped = json.loads((triton_configs_dir() / SHIPPED).read_text())
    try:
        for M in (1, 4, 5, 100, 4096, 8192, 8193):
            bucket = next((f"M_LEQ_{b}" for b in BOUNDS if M <= b and f"M_LEQ_{b}" in shipped), "any")
            loaded = load_with_aiter(triton_configs_dir().parent, "gfx950", M, 2880, 4096)
            assert {k: loaded[k] for k in shipped[bucket]} == shipped[bucket]
            assert loaded["SPLITK_BLOCK_SIZE"] == 4096
        assert module._get_config._config_dict is held
        assert module.AITER_TRITON_CONFIGS_PATH == path and module.arch_info.get_arch is get_arch
        assert module._get_config.cache_info().currsize == 0
    finally:
        del module._get_config._config_dict


def test_a_shape_without_its_file_falls_back_to_aiters_default(tmp_path: Path) -> None:
    write_aiter_triton(_tables("gfx942"), tmp_path)
    default = json.loads((triton_configs_dir() / "MI300X-GEMM-A16W16.json").read_text())
    loaded = load_with_aiter(tmp_path, "gfx942", 100, 1000, 1000)
    assert {k: loaded[k] for k in default["M_LEQ_128"]} == default["M_LEQ_128"]


def test_both_archs_in_one_export_and_tables_without_a_run_are_skipped(tmp_path: Path) -> None:
    dead = _table(2, 4096, 4000, "gfx942", BASE)
    dead.rows = {k: r for k, r in dead.rows.items() if not r.ok}
    done = write_aiter_triton([*_tables("gfx942"), *_tables("gfx950"), dead], tmp_path)
    assert sorted(p.name for p in (tmp_path / "gemm").iterdir()) == [
        "MI300X-GEMM-A16W16-N=4096-K=4000.json", "MI350X-GEMM-A16W16-N=2880-K=4096.json"]
    assert [f.device for f in done.written] == ["MI300X", "MI350X"]
    assert done.skipped == [(dead.name, "no config ran in it")]


# -- refusals ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("table", "message"), [
    (_table(1, 64, 64, "gfx942", BASE, kernel="triton_gemm_splitk"), "not aiter's Triton GEMM"),
    (_table(1, 64, 64, "sm_90", BASE), "'aiter_triton_gemm/sm_90/1x64x64' was measured on sm_90; aiter's "
     "Triton GEMM has configs for gfx942 (MI300X), gfx950 (MI350X) only: export tables measured on one "
     "of those."),
    (_table(1, 64, 64, "", BASE), "names no arch"),
    (_table(1, 64, 64, "gfx942", {k: v for k, v in BASE.items() if k != "waves_per_eu"}),
     "lacks waves_per_eu"),
    (_table(1, 64, 64, "gfx942", dict(BASE, SPLITK_BLOCK_SIZE=64)),
     "keys aiter does not take: SPLITK_BLOCK_SIZE"),
    (_table(1, 64, 64, "gfx942", dict(BASE, BLOCK_SIZE_M="16")), "BLOCK_SIZE_M='16'"),
    (_table(1, 64, 64, "gfx942", dict(BASE, NUM_KSPLIT=0)), "NUM_KSPLIT=0"),
    (_table(1, 64, 64, "gfx942", dict(BASE, cache_modifier=1)), "cache_modifier=1"),
])
def test_refused_tables_write_nothing(table: GroundTruth, message: str, tmp_path: Path) -> None:
    with pytest.raises(FlysearchError, match=re.escape(message)) as info:
        write_aiter_triton([_table(2, 64, 64, "gfx942", BASE, name="good"), table], tmp_path / "out")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "out").exists()


def test_two_tables_of_one_shape_are_refused(tmp_path: Path) -> None:
    twin = _table(3, 4096, 4000, "gfx942", BASE, name="twin")
    with pytest.raises(FlysearchError, match=r"'aiter_triton_gemm/gfx942/3x4096x4000' and 'twin' both"):
        write_aiter_triton([*_tables("gfx942"), twin], tmp_path)


def test_nothing_that_ran_is_refused(tmp_path: Path) -> None:
    dead = _table(1, 64, 64, "gfx942", BASE)
    dead.rows = {k: r for k, r in dead.rows.items() if not r.ok}
    with pytest.raises(FlysearchError, match="Nothing to export"):
        write_aiter_triton([dead], tmp_path)


def test_a_file_aiter_ships_is_never_replaced() -> None:
    target = triton_configs_dir() / SHIPPED
    before = target.read_bytes()
    with pytest.raises(FlysearchError, match="is a file aiter ships"):
        write_aiter_triton(_tables("gfx950"), triton_configs_dir().parent)
    assert target.read_bytes() == before
    assert not [p for p in triton_configs_dir().iterdir() if p.name.startswith(f".{SHIPPED}")]


def test_without_a_record_of_aiters_files_every_file_inside_aiter_counts_as_shipped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "files", lambda name: None)  # an editable install's view
    with pytest.raises(FlysearchError, match="is a file aiter ships"):
        write_aiter_triton(_tables("gfx950"), triton_configs_dir().parent)


def test_load_with_aiter_refuses_an_arch_aiter_has_no_configs_for(tmp_path: Path) -> None:
    with pytest.raises(FlysearchError, match="only, not 'gfx90a'; give one of those archs"):
        load_with_aiter(tmp_path, "gfx90a", 1, 64, 64)


# -- the command ---------------------------------------------------------------------------------------


def _db(tmp_path: Path) -> str:
    db = str(tmp_path / "t.db")
    store = TableStore(db)
    for table in [*_tables("gfx942"), _table(1, 64, 64, "gfx942", BASE, kernel="triton_gemm_splitk",
                                             name="other/1x64x64")]:
        store.write(table.meta, table.rows.values())
    store.close()
    return db


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, ["export", "aiter-triton", *args])


def test_the_command_writes_what_aiter_loads(tmp_path: Path) -> None:
    out = tmp_path / "configs"
    result = _cli("--db", _db(tmp_path), "--out", str(out))
    path = out / "gemm" / "MI300X-GEMM-A16W16-N=4096-K=4000.json"
    assert result.exit_code == 0, result.output
    assert f"wrote {path} (M_LEQ_4, M_LEQ_16, M_LEQ_32, M_LEQ_64, M_LEQ_512, M_LEQ_1024, any) from 6 " \
           "tables" in result.output
    _check_loaded(load_with_aiter(out, "gfx942", 40, 4096, 4000), json.loads(path.read_text())["M_LEQ_64"],
                  4000)


@pytest.mark.parametrize(("args", "message"), [
    (["--table", "other/1x64x64"], "measured 'triton_gemm_splitk', not aiter's Triton GEMM"),
    (["--prefix", "nope"], "No aiter_triton_gemm table in"),
    (["--table", "absent"], "absent"),
])
def test_the_command_refuses_in_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    result = _cli("--db", _db(tmp_path), "--out", str(tmp_path / "out"), *args)
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert result.exit_code == 2 and len(errors) == 1 and "Traceback" not in result.output, result.output
    assert message in errors[0]
    assert not (tmp_path / "out").exists()
