"""Files are written whole or not at all, with the permissions an ordinary open gives."""

from __future__ import annotations

import os
import stat

import pytest

from flysearch._atomicfile import atomic_write, write_text_atomic
from flysearch.tables import GroundTruth, Row, TableMeta, dump_table_file, read_table_file


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_file_gets_the_umask_mode_not_mkstemp_private_mode(tmp_path, umask_022):
    path = tmp_path / "best.json"
    write_text_atomic(path, "{}")
    assert path.read_text() == "{}"
    assert _mode(path) == 0o644


def test_umask_is_respected(tmp_path):
    old = os.umask(0o077)
    try:
        write_text_atomic(tmp_path / "private.txt", "x")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "private.txt") == 0o600


def test_a_failing_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "tuned.csv"
    path.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_write(path) as fh:
        fh.write("half a")
        raise RuntimeError("disk full")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["tuned.csv"]


def test_binary_mode_and_bad_mode(tmp_path):
    with atomic_write(tmp_path / "a.bin", "wb") as fh:
        fh.write(b"\x00\x01")
    assert (tmp_path / "a.bin").read_bytes() == b"\x00\x01"
    with pytest.raises(ValueError, match="mode"), atomic_write(tmp_path / "b", "a"):
        pass
    assert not (tmp_path / "b").exists()


def test_table_files_are_readable_and_byte_identical_across_writes(tmp_path, umask_022):
    meta = TableMeta(name="t/x", kernel="k", arch="sm_90", device="H200", problem={"M": 1}, space={})
    table = GroundTruth(meta, {"a=1": Row(key="a=1", params={"a": 1}, outcome="ok", time_ms=1.5)})
    first, second = tmp_path / "one.table.json.gz", tmp_path / "two.table.json.gz"
    dump_table_file(table, first)
    dump_table_file(table, second)
    assert first.read_bytes() == second.read_bytes()  # no timestamp in the gzip header
    assert _mode(first) == 0o644
    read_meta, rows = read_table_file(first)
    assert read_meta.name == "t/x" and [r.time_ms for r in rows] == [1.5]
