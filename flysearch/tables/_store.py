"""Ground-truth tables: exhaustive races stored in SQLite through sqlite-utils.

One database file holds many tables. Each table records the kernel, arch, device, shape, dtype,
source, date, software versions and space it was measured with; each row one config: its key and
parameters, the outcome (failures are rows too), the time in ms and the compile/timing seconds.

Writes run inside one transaction, so a table is never half-written; :meth:`TableStore.add_rows`
lets a resumable race append rows as they are measured.

Example:
    >>> from flysearch.tables import TableStore, TableMeta, Row
    >>> store = TableStore(":memory:")
    >>> meta = TableMeta(name="toy", kernel="k", arch="sm_90", device="H200", problem={"n": 1},
    ...                  space={"name": "toy", "params": [{"name": "B", "values": [1, 2]}]})
    >>> store.write(meta, [Row("B=1", {"B": 1}, "ok", 2.0), Row("B=2", {"B": 2}, "ok", 1.0)])
    >>> store.load("toy").best().key
    'B=2'
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import reprlib
import sqlite3
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import sqlite_utils
from sqlite_utils import Migrations

from flysearch.errors import InputFormatError, MissingConfigError, MissingTableError
from flysearch.tables._outcome import Outcome

__all__ = [
    "DEFAULT_DB",
    "RETIME",
    "GroundTruth",
    "Row",
    "TableMeta",
    "TableStore",
    "UnwritableDatabaseError",
    "check_rows",
    "opened_store",
]

DEFAULT_DB = "flysearch.db"

RETIME = "retime"
"""Key of a row's ``extra`` that holds its re-timing: ``{"rounds_ms": [...], "median_ms": m}``
(or ``{"failed": detail}``), written by :func:`flysearch.evaluators.with_rounds`."""

_META = "gt_tables"
_ROWS = "gt_rows"

_migrations = Migrations("flysearch.tables")


@_migrations()
def m001_create(db: sqlite_utils.Database) -> None:
    db[_META].create(  # type: ignore[union-attr]
        {
            "name": str, "kernel": str, "arch": str, "device": str, "problem": str,
            "M": int, "N": int, "K": int, "dtype": str, "regime": str, "source": str,
            "date": str, "space": str, "versions": str, "notes": str,
        },
        pk="name",
    )
    db[_ROWS].create(  # type: ignore[union-attr]
        {
            "table_name": str, "key": str, "params": str, "outcome": str, "time_ms": float,
            "compile_s": float, "bench_s": float, "detail": str, "extra": str,
        },
        pk=("table_name", "key"),
        foreign_keys=[("table_name", _META, "name")],
    )


@dataclass(frozen=True)
class Row:
    """One config of a ground-truth table."""

    key: str
    params: dict[str, Any]
    outcome: str
    time_ms: float | None = None
    compile_s: float | None = None
    bench_s: float | None = None
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.outcome == Outcome.OK.value and self.time_ms is not None


@dataclass
class TableMeta:
    """What a ground-truth table measured, where and when.

    Attributes:
        name: Unique table name (``"convolution_milo/MI250X"``, ``"triton_gemm/H200/1x4096x4096"``).
        kernel: Kernel family.
        arch: Arch profile name (``""`` when the device maps to none).
        device: Device name as the driver reports it.
        problem: The problem: a GEMM shape ``{"M", "N", "K", "dtype"}`` or any other sizes.
        space: The space description (:meth:`flysearch.space.Space.to_json`).
        source: Where the data came from (a file, a race command).
        date: ISO date of the measurement.
        versions: Driver, compiler and library versions.
    """

    name: str
    kernel: str
    arch: str
    device: str
    problem: dict[str, Any]
    space: dict[str, Any]
    source: str = ""
    date: str = field(default_factory=lambda: _dt.date.today().isoformat())
    versions: dict[str, str] = field(default_factory=dict)
    notes: str = ""

    @property
    def is_gemm(self) -> bool:
        return all(k in self.problem for k in ("M", "N", "K"))

    def shape(self) -> Any:
        """The GEMM :class:`~flysearch.space.Shape`, or ``None`` for other problems."""
        from flysearch.space import Shape

        if not self.is_gemm:
            return None
        p = self.problem
        return Shape(int(p["M"]), int(p["N"]), int(p["K"]), str(p.get("dtype", "bf16")))

    def _record(self) -> dict[str, Any]:
        shape = self.shape()
        return {
            "name": self.name, "kernel": self.kernel, "arch": self.arch, "device": self.device,
            "problem": json.dumps(self.problem, sort_keys=True),
            "M": shape.M if shape else None, "N": shape.N if shape else None,
            "K": shape.K if shape else None, "dtype": shape.dtype if shape else None,
            "regime": shape.regime if shape else None, "source": self.source, "date": self.date,
            "space": json.dumps(self.space), "versions": json.dumps(self.versions, sort_keys=True),
            "notes": self.notes,
        }

    @classmethod
    def _from_record(cls, rec: dict[str, Any]) -> TableMeta:
        return cls(
            name=rec["name"], kernel=rec["kernel"], arch=rec["arch"], device=rec["device"],
            problem=json.loads(rec["problem"]), space=json.loads(rec["space"]),
            source=rec["source"] or "", date=rec["date"] or "",
            versions=json.loads(rec["versions"] or "{}"), notes=rec["notes"] or "",
        )


@dataclass
class GroundTruth:
    """A loaded table: its metadata and its rows by config key."""

    meta: TableMeta
    rows: dict[str, Row]

    @property
    def name(self) -> str:
        return self.meta.name

    def __len__(self) -> int:
        return len(self.rows)

    def ok_rows(self) -> list[Row]:
        return [r for r in self.rows.values() if r.ok]

    def best(self) -> Row:
        """The fastest correct row (ties broken by key, so the answer is deterministic)."""
        ok = self.ok_rows()
        if not ok:
            raise MissingConfigError(f"Table {self.name!r} has no successful row.")
        return min(ok, key=lambda r: (r.time_ms, r.key))

    def retimed_ms(self) -> dict[str, float]:
        """The re-timed median (ms) of every config whose time was confirmed in interleaved rounds
        after the race (:mod:`flysearch.evaluators`; the row's ``extra["retime"]``); empty when the
        table's top was never re-timed."""
        out = {}
        for r in self.ok_rows():
            median = (r.extra.get(RETIME) or {}).get("median_ms")
            if median is not None:
                out[r.key] = float(median)
        return out

    def with_retimed_times(self) -> GroundTruth:
        """This table with each re-timed config's time replaced by its re-timed median, every other
        time kept: the noise-aware ground truth, whose optimum and 1%/2% sets come from the rounds
        (they re-time every config within 5% of the race's best, up to 32). A table never re-timed
        comes back unchanged."""
        retimed = self.retimed_ms()
        rows = {k: replace(r, time_ms=retimed[k]) if k in retimed else r for k, r in self.rows.items()}
        return GroundTruth(self.meta, rows)

    def ranked(self) -> list[Row]:
        """The correct rows, fastest first, by the best measurement the table has: the re-timed
        configs by their median over the rounds, then every other one by its race time (the
        re-timed ones are the race's top, so they come first; ties broken by key)."""
        retimed = self.retimed_ms()
        ok = self.ok_rows()
        head = sorted((r for r in ok if r.key in retimed), key=lambda r: (retimed[r.key], r.key))
        tail = sorted((r for r in ok if r.key not in retimed), key=lambda r: (r.time_ms, r.key))
        return head + tail

    def confirmed_best(self) -> Row:
        """The fastest correct row by re-timed medians where the top was re-timed, else
        :meth:`best` (the race's single measurement)."""
        if not self.retimed_ms():
            return self.best()
        return self.ranked()[0]

    def within_retimed(self, eps: float = 0.01) -> list[str]:
        """Keys of the re-timed configs within *eps* of the re-timed best: the table's 1% set by
        the better measurement (empty when nothing was re-timed)."""
        retimed = self.retimed_ms()
        best = min(retimed.values(), default=0.0)
        return sorted(k for k, v in retimed.items() if v <= best * (1 + eps))

    def row(self, key: str) -> Row:
        try:
            return self.rows[key]
        except KeyError:
            raise MissingConfigError(
                f"Config {key!r} is not in table {self.name!r}; replay can only answer configs "
                "the table measured."
            ) from None


class UnwritableDatabaseError(OSError):
    """A table database that cannot be created or opened at the path given (a folder, a path under
    a file, a read-only place): one line naming the path and the reason. An :class:`OSError`, as
    any file a command cannot write, not a damaged database."""


def _unwritable(path: str, reason: str, *, create: bool = True) -> UnwritableDatabaseError:
    return UnwritableDatabaseError(f"{path} cannot be {'written' if create else 'read'}: {reason}")


def _write_problem(path: Path, exc: BaseException) -> str:
    """Why a database file cannot be made at *path*, as the file system says it (*exc*, the error
    that was met, when it cannot be told more precisely)."""
    if path.is_dir():
        return "it is a folder, not a file"
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is a file, not a folder"
    try:
        if path.exists():
            os.close(os.open(path, os.O_RDWR))
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
            path.unlink()
    except OSError as err:
        return err.strerror or str(err)
    return str(exc)


class TableStore:
    """Ground-truth tables in one SQLite file.

    Args:
        path: The database file; ``":memory:"`` for a scratch store.
        create: Create the file (and its missing folders) if it does not exist; when false, a
            missing file raises :class:`MissingTableError` and nothing is written.

    Raises:
        UnwritableDatabaseError: the file cannot be created or opened there (a folder, a path
            under a file, a read-only place), named with the reason, before anything is written.
    """

    def __init__(self, path: str | Path = DEFAULT_DB, *, create: bool = True) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            if not create and not Path(self.path).is_file():
                raise MissingTableError(
                    f"No table database at {self.path}; import a table first with "
                    "'flysearch tables import FILE'."
                )
            if Path(self.path).is_dir():
                raise _unwritable(self.path, "it is a folder, not a file")
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise _unwritable(self.path, _write_problem(Path(self.path), exc)) from None
        try:
            self.db = sqlite_utils.Database(self.path)
            # Several live workers may write one table database: wait for the lock, do not fail.
            self.db.execute("PRAGMA busy_timeout = 60000")
        except sqlite3.OperationalError as exc:
            # SQLite says only "unable to open database file": a file it cannot create or open, not
            # a damaged database (that fails below, once the file is read).
            if "unable to open" not in str(exc):
                raise
            raise _unwritable(self.path, _write_problem(Path(self.path), exc), create=create) from None
        try:
            names = set(self.db.table_names())
            if names and _META not in names and "_sqlite_migrations" not in names:
                # A SQLite file of something else (an Optuna storage, compare results): left untouched.
                kind = "an Optuna study storage" if "studies" in names else "not a flysearch table database"
                raise InputFormatError(
                    f"{self.path} is {kind} (it holds tables {sorted(names)[:4]}); give --db a table "
                    "database."
                )
            _migrations.apply(self.db)
        except sqlite3.DatabaseError as exc:
            raise InputFormatError(f"{self.path} is not a flysearch table database: {exc}.") from None

    def close(self) -> None:
        self.db.close()

    def use_wal(self) -> None:
        """Switch the database to write-ahead logging with ``synchronous=NORMAL`` (it stays so):
        for many small transactions (a live study adds a row per measurement), a commit no longer
        waits for the disk and readers do not block the writer. A committed row still survives
        the process being killed; only an operating-system crash can lose the last commits."""
        if self.path != ":memory:":
            self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")

    def names(self) -> list[str]:
        return [r["name"] for r in self.db.query(f"select name from {_META} order by name")]

    def __contains__(self, name: str) -> bool:
        return bool(list(self.db.query(f"select 1 from {_META} where name = ?", [name])))

    def meta(self, name: str) -> TableMeta:
        recs = list(self.db.query(f"select * from {_META} where name = ?", [name]))
        if not recs:
            raise MissingTableError(self._missing_message(name))
        return TableMeta._from_record(recs[0])

    def _missing_message(self, name: str) -> str:
        known = self.names()
        hint = f"known tables: {', '.join(known)}" if known else "the database holds no tables yet"
        return (
            f"No table {name!r} in {self.path}; {hint} "
            "(import one with 'flysearch tables import FILE')."
        )

    def load(self, name: str) -> GroundTruth:
        """Load table *name* with all its rows.

        Raises:
            MissingTableError: the database holds no table *name*.
            InputFormatError: a row is one no table can hold (:func:`check_rows`).
        """
        meta = self.meta(name)
        rows = {}
        for rec in self.db.query(f"select * from {_ROWS} where table_name = ?", [name]):
            rows[rec["key"]] = Row(
                key=rec["key"], params=json.loads(rec["params"]), outcome=rec["outcome"],
                time_ms=rec["time_ms"], compile_s=rec["compile_s"], bench_s=rec["bench_s"],
                detail=rec["detail"] or "", extra=json.loads(rec["extra"] or "{}"),
            )
        check_rows(name, rows.values(), source=self.path)  # a file another tool wrote, or edited
        return GroundTruth(meta, rows)

    def write(self, meta: TableMeta, rows: Iterable[Row], *, replace: bool = False,
              require_ok: bool = False) -> None:
        """Write a whole table in one transaction.

        With *require_ok*, a table without a config that ran is refused (an import: nothing to
        search or compare against); without it such a table is kept as a record of failures (aiter
        ships rows for archs with no kernel).

        Raises:
            InputFormatError: a row is invalid, *require_ok* and no row is ok, or the table exists
                and *replace* is false.
        """
        rows = list(rows)
        _check_meta(meta)
        check_rows(meta.name, rows)
        if require_ok and not any(r.ok for r in rows):
            raise InputFormatError(
                f"Table {meta.name!r} has no config that ran ({len(rows)} rows, none ok); there is nothing "
                "to search or compare against."
            )
        with self.db.atomic():
            if meta.name in self:
                if not replace:
                    raise InputFormatError(
                        f"Table {meta.name!r} already exists in {self.path}; overwrite it with --replace "
                        "(replace=True in Python) or choose another name (--name)."
                    )
                self.delete(meta.name)
            self.db[_META].insert(meta._record())  # type: ignore[union-attr]
            self._insert_rows(meta.name, rows, replace=False)

    def write_many(self, tables: Iterable[tuple[TableMeta, Iterable[Row]]], *, replace: bool = False,
                   require_ok: bool = False) -> None:
        """:meth:`write` several whole tables in one transaction: all of them, or none when one fails."""
        with self.db.atomic():
            for meta, rows in tables:
                self.write(meta, rows, replace=replace, require_ok=require_ok)

    def add_rows(self, meta: TableMeta, rows: Iterable[Row]) -> None:
        """Create *meta*'s table if needed and add (or update) *rows*, in one transaction.

        The transaction takes the write lock first (``BEGIN IMMEDIATE``), so processes adding rows
        to one database at once wait for each other instead of failing.
        """
        rows = list(rows)
        _check_meta(meta)
        check_rows(meta.name, rows)
        conn = self.db.conn
        if conn.in_transaction:
            conn.commit()
        conn.execute("BEGIN IMMEDIATE")
        try:
            self.db[_META].insert(meta._record(), ignore=True)  # type: ignore[union-attr]
            self._insert_rows(meta.name, rows, replace=True)
        except BaseException:
            conn.rollback()
            raise
        conn.commit()

    def set_notes(self, name: str, notes: str) -> None:
        """Replace table *name*'s notes (JSON text), in one transaction.

        Raises:
            MissingTableError: no such table.
        """
        if name not in self:
            raise MissingTableError(self._missing_message(name))
        with self.db.atomic():
            self.db.execute(f"update {_META} set notes = ? where name = ?", [notes, name])

    def done_keys(self, name: str) -> set[str]:
        """Keys already recorded in table *name* (empty when it does not exist)."""
        return {
            r["key"] for r in self.db.query(f"select key from {_ROWS} where table_name = ?", [name])
        }

    def delete(self, name: str) -> None:
        with self.db.atomic():
            self.db.execute(f"delete from {_ROWS} where table_name = ?", [name])
            self.db.execute(f"delete from {_META} where name = ?", [name])

    def summaries(self) -> Iterator[dict[str, Any]]:
        """One dict per table: metadata plus row counts and the best time."""
        sql = f"""
            select m.name, m.kernel, m.arch, m.device, m.problem, m.regime, m.date, m.source,
                   count(r.key) as rows, sum(r.outcome = 'ok') as ok,
                   min(case when r.outcome = 'ok' then r.time_ms end) as best_ms
            from {_META} m left join {_ROWS} r on r.table_name = m.name
            group by m.name order by m.name
        """
        yield from self.db.query(sql)

    def _insert_rows(self, name: str, rows: list[Row], *, replace: bool) -> None:
        records = []
        for r in rows:
            rec = asdict(r)
            rec["table_name"] = name
            rec["params"] = json.dumps(r.params, sort_keys=True)
            rec["extra"] = json.dumps(r.extra, sort_keys=True)
            records.append(rec)
        self.db[_ROWS].insert_all(records, replace=replace, batch_size=2000)  # type: ignore[union-attr]


_NAMES = ("name", "kernel", "arch", "device")  # what a table is known by: listed, printed, exported


def _check_meta(meta: TableMeta) -> None:
    """Raise a one-line :class:`InputFormatError` when a name of *meta* (:data:`_NAMES`) is not
    printable text: a line break, a control, bidi or invisible character or a lone surrogate in a
    name could end a line of a file written from it, or hide from a terminal what the name holds."""
    for field_name in _NAMES:
        value = getattr(meta, field_name)
        if isinstance(value, str) and value.isprintable():
            continue
        what = "table name" if field_name == "name" else f"{field_name} of table {reprlib.repr(meta.name)}"
        if not isinstance(value, str):
            raise InputFormatError(f"The {what} is {reprlib.repr(value)}, not text; give it as a string.")
        bad = next(ch for ch in value if not ch.isprintable())
        fix = "give the table another name (--name)" if field_name == "name" else f"fix the {field_name}"
        raise InputFormatError(
            f"The {what} {reprlib.repr(value)} holds {bad!r}, a line break, control or invisible "
            f"character; {fix} with printable characters only."
        )


def check_rows(name: str, rows: Iterable[Row], *, source: str | Path | None = None) -> None:
    """Raise a one-line :class:`InputFormatError` on the first row that a table cannot hold: a key
    that is no string or repeats, a time that is not a finite number > 0 (compile and benchmark
    seconds: >= 0), an unknown outcome, an ok row without a time.

    Every way a table comes in is checked by this one function: each file reader
    (:func:`read_table_file`, the Kernel Tuner and aiter importers), :meth:`TableStore.load` and
    :meth:`TableStore.write`; so ``tables import``, ``compare``, ``study`` and ``model train``
    refuse the same tables, with the same line. *source* (the file or database read) starts it.
    """
    valid = {o.value for o in Outcome}
    where = f"{source}: row" if source is not None else "Row"
    keys: set[str] = set()
    for r in rows:
        if not isinstance(r.key, str) or r.key in keys:
            why = "is not a string" if not isinstance(r.key, str) else "appears twice"
            raise InputFormatError(f"{where} key {r.key!r} of table {name!r} {why}.")
        keys.add(r.key)
        for field_name in ("time_ms", "compile_s", "bench_s"):
            value = getattr(r, field_name)
            bad = value is not None and not _finite_non_negative(value)
            if bad or (field_name == "time_ms" and value == 0):
                bound = "> 0" if field_name == "time_ms" else ">= 0"
                raise InputFormatError(
                    f"{where} {r.key!r} of table {name!r} has {field_name} {value!r}; expected a number "
                    f"{bound}: correct the row or leave it out."
                )
        if r.outcome not in valid:
            raise InputFormatError(
                f"{where} {r.key!r} of table {name!r} has outcome {r.outcome!r}; "
                f"expected one of {sorted(valid)}."
            )
        if r.outcome == Outcome.OK.value and r.time_ms is None:
            raise InputFormatError(f"{where} {r.key!r} of table {name!r} is ok but has no time.")


@contextlib.contextmanager
def opened_store(path: str | Path = DEFAULT_DB) -> Iterator[TableStore]:
    """The table database at *path*, closed when the block ends. When the block fails before any
    table is in a database that this call created, the file is removed again: a failed command
    leaves no empty database behind."""
    path = str(path)
    created = path != ":memory:" and not Path(path).exists()
    store = TableStore(path)
    try:
        yield store
    except BaseException:
        empty = created and not store.names()
        store.close()
        if empty:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(path + suffix).unlink(missing_ok=True)
        raise
    store.close()


def _finite_non_negative(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < float("inf")


TABLE_FILE_FORMAT = "flysearch-table/1"


def dump_table_file(table: GroundTruth, path: str | Path) -> None:
    """Write *table* as a self-contained gzip JSON file (how measured tables are committed).

    The file is written to a temporary name and moved into place, so it is never half-written.
    """
    import gzip

    from flysearch._atomicfile import atomic_write

    path = Path(path)
    doc = {
        "format": TABLE_FILE_FORMAT,
        "meta": asdict(table.meta),
        "rows": [asdict(r) for r in sorted(table.rows.values(), key=lambda r: r.key)],
    }
    with atomic_write(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9,
                                                        mtime=0) as fh:
        fh.write(json.dumps(doc, separators=(",", ":"), sort_keys=True).encode("utf-8"))


def read_table_file(path: str | Path) -> tuple[TableMeta, list[Row]]:
    """Read a file written by :func:`dump_table_file`.

    Raises:
        InputFormatError: the file is missing, unreadable, or holds a row no table can hold
            (:func:`check_rows`).
    """
    import gzip

    path = Path(path)
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            doc = json.load(fh)
        if doc.get("format") != TABLE_FILE_FORMAT:
            raise InputFormatError(f"{path} is not a {TABLE_FILE_FORMAT} file.")
        meta = TableMeta(**doc["meta"])
        rows = [Row(**r) for r in doc["rows"]]
    except InputFormatError:
        raise
    except FileNotFoundError:
        raise InputFormatError(f"Table file {path} does not exist.") from None
    except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError, zlib.error,
            RecursionError) as exc:
        raise InputFormatError(f"{path} is not a readable flysearch table file: {exc}.") from None
    check_rows(meta.name, rows, source=path)
    return meta, rows
