"""Evaluators are found by name in a registry: the built-in ones, a user's, and an unknown name."""

from __future__ import annotations

import pytest

from flysearch.errors import InputFormatError, UnknownEvaluatorError
from flysearch.evaluators import (
    EvaluatorRequest,
    EvaluatorSetup,
    ReplayEvaluator,
    build_evaluator,
    evaluator_entry,
    evaluator_names,
    register_evaluator,
)
from flysearch.evaluators import _registry as registry
from flysearch.space import Config, parse_shape
from flysearch.tables import GroundTruth, read_table_file, space_for_table
from tests.conftest import REPO

H200 = REPO / "lab" / "benchmarks" / "data" / "h200"


def _h200_table(shape: str) -> GroundTruth:
    meta, rows = read_table_file(H200 / f"triton_gemm__H200__{shape}.table.json.gz")
    return GroundTruth(meta, {r.key: r for r in rows})


@pytest.fixture()
def own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations made by a test are gone after it."""
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))


def test_an_unknown_evaluator_is_one_line_naming_every_registered_one() -> None:
    with pytest.raises(UnknownEvaluatorError) as info:
        evaluator_entry("tritn")
    message = str(info.value)
    assert "\n" not in message and message.startswith("Unknown evaluator 'tritn'; choose one of: ")
    assert all(name in message for name in ("replay", "triton", "flydsl", "simulated"))


def test_the_replay_evaluator_is_built_from_its_table() -> None:
    table = _h200_table("1x6144x4096")
    setup = build_evaluator(EvaluatorRequest("replay", table))
    assert isinstance(setup.evaluator, ReplayEvaluator) and setup.backend is None
    assert setup.table is table and setup.shape == parse_shape("1x6144x4096")
    assert setup.arch is not None and setup.arch.name == "sm_90"
    assert setup.space.name == space_for_table(table).name
    with pytest.raises(InputFormatError, match="The replay evaluator answers from a table; name one"):
        build_evaluator(EvaluatorRequest("replay"))


def test_a_users_evaluator_is_registered_without_touching_anything_else(own_registry: None) -> None:
    tables: dict[str, GroundTruth] = {}

    @register_evaluator("h200-replay", live=False)
    def _h200(r: EvaluatorRequest) -> EvaluatorSetup:
        assert r.shape is not None
        mnk = f"{r.shape.M}x{r.shape.N}x{r.shape.K}"
        table = tables.setdefault(mnk, _h200_table(mnk))
        return EvaluatorSetup(space_for_table(table), evaluator=ReplayEvaluator(table), shape=r.shape)

    assert evaluator_names()[-1] == "h200-replay" and "h200-replay" not in evaluator_names(live=True)
    entry = evaluator_entry("h200-replay")
    assert not entry.live and entry.target == "shape"
    setup = build_evaluator(EvaluatorRequest("h200-replay", shape=parse_shape("1x6144x4096")))
    assert setup.evaluator is not None
    best = tables["1x6144x4096"].best()
    measured = setup.evaluator.time(setup.evaluator.compile(Config.from_dict(best.params), setup.shape))
    assert measured.time_ms == best.time_ms


def test_a_registration_checks_what_a_request_lacks(own_registry: None) -> None:
    def lacks(r: EvaluatorRequest) -> str | None:
        return None if r.arch else "A needs-arch study needs --arch."

    @register_evaluator("needs-arch", problem=lacks)
    def _never(r: EvaluatorRequest) -> EvaluatorSetup:
        raise AssertionError("built although the request lacks its arch")

    with pytest.raises(InputFormatError, match=r"A needs-arch study needs --arch\."):
        build_evaluator(EvaluatorRequest("needs-arch", shape=parse_shape("64x64x64")))
    with pytest.raises(ValueError, match="'table' or 'shape'"):
        register_evaluator("nowhere", target="file")  # type: ignore[arg-type]
