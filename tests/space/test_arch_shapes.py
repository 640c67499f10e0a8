from __future__ import annotations

from pathlib import Path

import pytest

from flysearch.errors import InputFormatError, UnknownArchError
from flysearch.space._arch import arch_of_device, get_arch, get_device, table_profile
from flysearch.space._shapes import REGIMES, Shape, classify, load_corpus, parse_shape
from tests.conftest import REPO


def test_arch_numbers() -> None:
    gfx942, gfx950, sm90 = get_arch("gfx942"), get_arch("gfx950"), get_arch("sm_90")
    assert (gfx942.lds_bytes, gfx942.wave_size, gfx942.compute_units) == (64 * 1024, 64, 304)
    assert gfx942.device("MI308X").compute_units == 80
    assert (gfx950.lds_bytes, gfx950.wave_size, gfx950.device("MI355X").compute_units) == (
        160 * 1024, 64, 256,
    )
    assert (sm90.lds_bytes, sm90.wave_size, sm90.device("H200").compute_units) == (228 * 1024, 32, 132)


def test_unknown_arch_lists_the_known_ones() -> None:
    with pytest.raises(UnknownArchError) as info:
        get_arch("gfx1200")
    assert "gfx942" in str(info.value) and "sm_90" in str(info.value)
    assert "\n" not in str(info.value)
    with pytest.raises(UnknownArchError, match="MI300X"):
        get_arch("gfx942").device("MI999")


def test_devices_resolve_from_driver_names() -> None:
    assert arch_of_device("NVIDIA H200").name == "sm_90"
    assert arch_of_device("AMD Instinct MI308X").name == "gfx942"
    assert arch_of_device("AMD Instinct MI308X").compute_units == 80  # the device's, not the MI300X's
    assert get_device("NVIDIA A100-PCIE-40GB").compute_units == 108
    with pytest.raises(UnknownArchError):
        arch_of_device("GeForce 256")


def test_table_profile_counts_the_tables_device() -> None:
    # The benchmark_hub GPUs resolve from their driver names, each with its own CU/SM count.
    assert table_profile("sm_86", "NVIDIA RTX A4000").compute_units == 48
    assert table_profile("sm_86", "NVIDIA RTX A6000").compute_units == 84
    assert arch_of_device("AMD Radeon PRO W7800").name == "gfx1100"
    assert table_profile("gfx1032", "AMD Radeon PRO W6600").compute_units == 28
    # An MI308X table is not costed as an MI300X; a device the profile lacks keeps the default.
    assert table_profile("gfx942", "AMD Instinct MI308X").compute_units == 80
    assert table_profile("gfx942", "some other board").compute_units == 304
    assert table_profile("", "NVIDIA H200") is None


@pytest.mark.parametrize(
    ("m", "n", "k", "regime"),
    [
        (1, 4096, 4096, "decode"),
        (16, 4096, 65536, "decode"),
        (17, 4096, 4096, "small_m"),
        (256, 1536, 7168, "k_heavy"),
        (1024, 576, 7168, "k_heavy"),
        (256, 4096, 4096, "small_m"),
        (257, 4096, 4096, "prefill"),
        (2048, 4096, 4096, "square"),
        (4096, 4096, 4096, "square"),
        (8192, 4096, 4096, "square"),
        (8193, 4096, 4096, "prefill"),
        (2048, 28672, 4096, "prefill"),
    ],
)
def test_regime_rules(m: int, n: int, k: int, regime: str) -> None:
    assert classify(m, n, k) == regime == Shape(m, n, k).regime


def test_corpus_covers_every_regime_with_real_layers() -> None:
    corpus = load_corpus(REPO / "studies" / "shapes.toml")
    assert {e.regime for e in corpus} == set(REGIMES)
    assert all(e.model and e.layer for e in corpus)
    assert len({e.name for e in corpus}) == len(corpus)


def test_malformed_corpus_and_shapes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[shape]]\nname = "x"\nM = 0\nN = 1\nK = 1\n')
    with pytest.raises(InputFormatError, match="positive"):
        load_corpus(bad)
    bad.write_text('[[shape]]\nname = "x"\nM = 1\nN = 1\nK = 1\nbatch = 3\n')
    with pytest.raises(InputFormatError, match="unknown keys"):
        load_corpus(bad)
    assert parse_shape("1x4096x14336:bf16") == Shape(1, 4096, 14336)
    with pytest.raises(InputFormatError):
        parse_shape("1x4096")
