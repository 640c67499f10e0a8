"""Files are written whole or not at all, with the permissions an ordinary open gives."""

from __future__ import annotations

import ast
import os
import stat
from collections.abc import Iterator
from pathlib import Path

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


PACKAGE = Path(__file__).resolve().parents[1] / "flysearch"
# Writes that leave no result behind: the probe that an output path can be written (it writes
# nothing), and the cache file Kernel Tuner reads from a temporary folder.
NOT_RESULTS = {("cli/_options.py", "open"), ("samplers/_kernel_tuner.py", "write_text")}


def _called(node: ast.expr) -> str:
    func = node.func if isinstance(node, ast.Call) else node
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _writes_a_file(call: ast.Call) -> bool:
    name = _called(call)
    if name in ("write_text", "write_bytes", "savefig", "dump"):  # dump: json, pickle, joblib
        return True
    given = [*call.args[1:2], *(k.value for k in call.keywords if k.arg == "mode")]
    mode = given[0] if given else None
    return name == "open" and isinstance(mode, ast.Constant) and bool(set(str(mode.value)) & set("wax+"))


def _unguarded_writes(path: Path) -> Iterator[tuple[str, int]]:
    """``(what, line)`` of each file write in *path* outside a ``with atomic_write(...)`` block."""
    tree = ast.parse(path.read_text(), str(path))
    guarded = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.With)
               and any(_called(item.context_expr) == "atomic_write" for item in node.items)
               for inner in ast.walk(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and id(node) not in guarded and _writes_a_file(node):
            yield _called(node), node.lineno


def test_every_file_flysearch_writes_goes_through_atomic_write() -> None:
    found = [f"{rel}:{line} {what}" for path in sorted(PACKAGE.rglob("*.py"))
             if (rel := str(path.relative_to(PACKAGE))) != "_atomicfile.py"
             for what, line in _unguarded_writes(path) if (rel, what) not in NOT_RESULTS]
    assert not found, "write these through flysearch._atomicfile:\n" + "\n".join(found)


def test_the_write_check_sees_a_direct_write(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("import joblib\nfrom flysearch._atomicfile import atomic_write\n"
                      "def save(doc, path):\n    joblib.dump(doc, path)\n"
                      "def save_whole(doc, path):\n    with atomic_write(path, 'wb') as fh:\n"
                      "        joblib.dump(doc, fh)\n    open(path, mode='a').close()\n")
    assert list(_unguarded_writes(source)) == [("dump", 4), ("open", 8)]
