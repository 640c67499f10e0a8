from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from flysearch.tables import GroundTruth, TableStore, read_kernel_tuner_cache

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
HUB = DATA / "benchmark_hub"

optuna.logging.set_verbosity(optuna.logging.WARNING)


def hub_file(kernel: str, gpu: str) -> Path:
    path = HUB / kernel / f"{gpu}.json.gz"
    if not path.is_file():
        pytest.skip(f"{path} is absent: the benchmark_hub data lives in ../shared/data beside the repo")
    return path


@pytest.fixture(scope="session")
def conv_mi250x_path() -> Path:
    return hub_file("convolution_milo", "MI250X")


@pytest.fixture(scope="session")
def conv_a100_path() -> Path:
    return hub_file("convolution_milo", "A100")


@pytest.fixture(scope="session")
def conv_mi250x(conv_mi250x_path: Path) -> GroundTruth:
    meta, rows = read_kernel_tuner_cache(conv_mi250x_path)
    store = TableStore(":memory:")
    store.write(meta, rows)
    return store.load(meta.name)


@pytest.fixture(scope="session")
def conv_a100(conv_a100_path: Path) -> GroundTruth:
    meta, rows = read_kernel_tuner_cache(conv_a100_path)
    store = TableStore(":memory:")
    store.write(meta, rows)
    return store.load(meta.name)


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server on loopback for this test session (see tests/pgserver.py)."""
    from tests.pgserver import PostgresServer

    server = PostgresServer()
    why = server.available
    if why:
        pytest.skip(why)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server, request) -> str:
    """A fresh database on the session's PostgreSQL server."""
    import re

    name = "t_" + re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:50]
    return postgres_server.create_database(name)
