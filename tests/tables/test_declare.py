"""Users' own tables: Kernel Tuner caches of both layouts, declared shape, kernel, arch and names, and
the cost model on them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner

from flysearch.cli import main
from flysearch.costmodel import fit_prior, walks
from flysearch.errors import InputFormatError, UnknownArchError
from flysearch.evaluators import ReplayEvaluator
from flysearch.export import kernel_tuner_cache, write_kernel_tuner_cache
from flysearch.space import get_arch, load_corpus
from flysearch.study import StudySpec, run_study
from flysearch.tables import (
    Declaration,
    GroundTruth,
    TableStore,
    import_tables,
    parse_renames,
    read_any_table,
    read_kernel_tuner_cache,
    read_table_file,
    space_for_table,
)
from tests.conftest import REPO

H200 = REPO / "lab" / "benchmarks" / "data" / "h200"
HELD = H200 / "triton_gemm__H200__1x6144x4096.table.json.gz"
OUTSIDE = {"BLOCK_M": "BM", "BLOCK_N": "BN", "BLOCK_K": "BK", "GROUP_M": "GM", "SPLIT_K": "SK"}
BACK = ",".join(f"{new}={old}" for old, new in OUTSIDE.items())


def _table(path: Path) -> GroundTruth:
    meta, rows = read_table_file(path)
    return GroundTruth(meta, {r.key: r for r in rows})


# Under pytest-xdist one worker runs this module, so that its module fixture is set up once.
pytestmark = pytest.mark.xdist_group("tables/test_declare")


@pytest.fixture(scope="module")
def outside_cache(tmp_path_factory) -> Path:
    """A raced H200 table as a user of Kernel Tuner would hold it: other parameter names, no shape
    but problem_size, and one config with num_stages=5, a value flysearch's space lacks."""
    table = _table(HELD)
    cache = kernel_tuner_cache(table, rename=OUTSIDE)
    first = next(iter(cache["cache"].values()))
    extra = {**first, "num_stages": 5, "time": first["time"] * 3}
    cache["cache"][",".join(str(extra[k]) for k in cache["tune_params_keys"])] = extra
    cache["tune_params"]["num_stages"].append(5)
    path = tmp_path_factory.mktemp("kt") / "mine.json.gz"
    path.write_bytes(gzip.compress(json.dumps(cache).encode()))
    return path


def _keys_only(path: Path) -> Path:
    """The layout of caches that keep only the measurements: parameter values in the key alone."""
    doc = {"device_name": "A100-PCIE-40GB", "kernel_name": "Xgemm", "tune_params_keys": ["MWG", "SA"],
           "tune_params": {"MWG": [16, 32], "SA": [0, 1]},
           "cache": {"16,0": {"time": 3.0}, "16,1": {"time": 2.0}, "32,0": {"time": 1.0}}}
    path.write_text(json.dumps(doc))
    return path


def test_a_cache_that_keeps_its_values_only_in_the_keys_imports(tmp_path: Path) -> None:
    meta, rows = read_kernel_tuner_cache(_keys_only(tmp_path / "GEMM_A100.json"))
    assert sorted((r.params["MWG"], r.params["SA"], r.time_ms) for r in rows) == [
        (16, 0, 3.0), (16, 1, 2.0), (32, 0, 1.0)]
    assert meta.arch == "sm_80"


def test_a_key_value_that_tune_params_does_not_list_is_one_line(tmp_path: Path) -> None:
    path = _keys_only(tmp_path / "c.json")
    doc = json.loads(path.read_text())
    doc["cache"]["64,0"] = {"time": 1.0}
    path.write_text(json.dumps(doc))
    with pytest.raises(InputFormatError, match=r"gives MWG = '64' in its key, which tune_params does not"):
        read_kernel_tuner_cache(path)


def test_without_a_declaration_a_cache_has_no_shape(outside_cache: Path) -> None:
    meta, _ = read_any_table(outside_cache)
    assert meta.shape() is None and meta.problem == {"problem_size": [1, 6144, 4096]}


def test_a_declared_cache_carries_shape_regime_kernel_arch_like_a_raced_table(outside_cache: Path) -> None:
    declaration = Declaration(shape_from="MNK", kernel="triton_gemm_splitk", arch="sm_90",
                              rename=parse_renames(BACK))
    meta, rows = read_any_table(outside_cache, declaration=declaration)
    raced = _table(HELD).meta
    assert (meta.shape(), meta.kernel, meta.arch, meta.space["name"]) == (
        raced.shape(), raced.kernel, raced.arch, raced.space["name"])
    assert meta.shape().regime == "decode"
    assert {r.key for r in rows} >= set(_table(HELD).rows)
    same, _ = read_any_table(outside_cache, declaration=Declaration(shape="1x6144x4096"))
    assert same.shape() == raced.shape()


@pytest.mark.parametrize(("declaration", "message"), [
    (Declaration(kernel="triton_gemm_splitk"), r"lacks BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, SPLIT_K"),
    (Declaration(rename={"XX": "BLOCK_M"}), r"has no parameter 'XX' to rename"),
    (Declaration(rename={"BM": "BN"}), r"give two parameters one name"),
    (Declaration(shape_from="MMK"), r"must list M, N and K once each"),
    (Declaration(shape="1x2"), r"not of the form MxNxK"),
])
def test_a_declaration_that_does_not_fit_the_cache_names_the_fix(
    outside_cache: Path, declaration: Declaration, message: str
) -> None:
    with pytest.raises(InputFormatError, match=message):
        read_any_table(outside_cache, declaration=declaration)


def test_an_unknown_arch_lists_the_known_ones(outside_cache: Path) -> None:
    with pytest.raises(UnknownArchError, match="known archs"):
        read_any_table(outside_cache, declaration=Declaration(arch="sm_999"))


def test_a_declared_family_prunes_within_the_tables_own_rows(outside_cache: Path, tmp_path: Path) -> None:
    declaration = Declaration(shape_from="MNK", kernel="triton_gemm", arch="sm_90",
                              rename=parse_renames(BACK))
    import_tables([outside_cache], db=tmp_path / "t.db", declaration=declaration)
    store = TableStore(tmp_path / "t.db")
    table = store.load(store.names()[0])
    space = space_for_table(table)
    assert 5 in next(p for p in space.params if p.name == "num_stages").values
    enum = space.enumerate(table.meta.shape(), get_arch("sm_90"))
    feasible = {c.key for c in enum.feasible}
    assert set(_table(HELD).rows) <= feasible <= set(table.rows)  # never a config the table lacks
    assert enum.removed["listed_in_table"] > 0 and sum(enum.removed.values()) == enum.total - len(feasible)


def test_the_prior_refuses_a_cache_without_a_shape_and_walks_a_declared_one(outside_cache: Path,
                                                                            tmp_path: Path) -> None:
    train = [_table(p) for p in sorted(H200.glob("*.table.json.gz")) if p != HELD][:6]
    prior = fit_prior(train, max_iter=30)
    renamed = Declaration(rename=parse_renames(BACK))
    plain = GroundTruth(*_as_table(read_any_table(outside_cache, declaration=renamed)))
    with pytest.raises(InputFormatError, match=r"gives no M, N, K; import its table with --shape"):
        _search(plain, prior)
    declared = GroundTruth(*_as_table(read_any_table(outside_cache, declaration=Declaration(
        shape_from="MNK", kernel="triton_gemm_splitk", arch="sm_90", rename=parse_renames(BACK)))))
    assert walks(prior, "triton_gemm_splitk@sm_90", [p.name for p in space_for_table(declared).params])
    assert not walks(prior, "triton_gemm_splitk@sm_90", ["BM", "BN"])
    study = _search(declared, prior)
    compiled = [t for t in study.trials if t.value is not None]
    assert len({t.number for t in compiled}) >= 8 and study.best_value >= declared.best().time_ms


def _as_table(read):
    meta, rows = read
    return meta, {r.key: r for r in rows}


def _search(table: GroundTruth, prior) -> optuna.Study:
    storage = optuna.storages.InMemoryStorage()
    space = space_for_table(table)
    from flysearch.costmodel import table_arch

    run_study("s", space, ReplayEvaluator(table), StudySpec(sampler="costmodel", budget=8, seed=0,
              space=space.name, table=table.name), shape=table.meta.shape(), arch=table_arch(table),
              storage=storage, prior=prior, problem=table.meta.problem)
    return optuna.load_study(study_name="s", storage=storage)


def test_a_table_written_as_a_cache_reads_back_the_same(tmp_path: Path) -> None:
    table = _table(HELD)
    path = write_kernel_tuner_cache(table, tmp_path / "t.json.gz", rename=OUTSIDE)
    meta, rows = read_any_table(path, declaration=Declaration(rename=parse_renames(BACK)))
    assert {r.key: r.time_ms for r in rows} == {k: r.time_ms for k, r in table.rows.items()}
    assert meta.device == table.meta.device


def test_the_cli_imports_a_declared_cache_and_refuses_a_bad_rename_in_one_line(outside_cache: Path,
                                                                              tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    ok = CliRunner().invoke(main, ["tables", "import", str(outside_cache), "--db", db, "--name", "mine",
                                   "--shape", "problem_size:MNK", "--kernel", "triton_gemm_splitk",
                                   "--arch", "sm_90", "--rename", BACK])
    assert ok.exit_code == 0, ok.output
    meta = TableStore(db).load("mine").meta
    assert (meta.shape().M, meta.shape().regime, meta.arch) == (1, "decode", "sm_90")
    bad = CliRunner().invoke(main, ["tables", "import", str(outside_cache), "--db", str(tmp_path / "d.db"),
                                    "--rename", "BM"])
    assert bad.exit_code == 2
    assert [line for line in bad.output.splitlines() if line.startswith("Error")] == [
        "Error: Rename 'BM' is not of the form OLD=NEW (e.g. BM=BLOCK_M)."]
    assert not (tmp_path / "d.db").exists()


@pytest.mark.parametrize("folder", ["external_h200", "external_h200_b", "external_h200_dev",
                                    "external_h200_c"])
def test_each_committed_external_cache_imports_as_the_shape_its_study_file_names(
        folder: str, tmp_path: Path) -> None:
    # The documented path of lab/benchmarks/external_h200.py: the shape from problem_size, the family,
    # the arch and the names back. Each cache must carry the shape its studies/ entry committed.
    suffix = folder.removeprefix("external_h200")
    shapes = {e.name: e.shape for e in load_corpus(REPO / "lab" / "studies" / f"external_h200{suffix}.toml")}
    caches = sorted((REPO / "lab" / "benchmarks" / "data" / folder).glob("*.json.gz"))
    assert sorted(p.name.removesuffix(".json.gz") for p in caches) == sorted(shapes)
    declaration = Declaration(shape_from="MNK", kernel="triton_gemm_splitk", arch="sm_90",
                              rename=parse_renames(BACK))
    for path in caches:
        db = tmp_path / f"{path.name}.db"
        import_tables([path], db=db, declaration=declaration)
        store = TableStore(str(db))
        (table,) = (store.load(n) for n in store.names())
        assert table.meta.shape() == shapes[path.name.removesuffix(".json.gz")]
        assert (table.meta.kernel, table.meta.arch, table.meta.space["name"]) == (
            "triton_gemm", "sm_90", "triton_gemm_splitk")
        assert {"BLOCK_M", "SPLIT_K", "num_stages"} <= set(next(iter(table.rows.values())).params)
