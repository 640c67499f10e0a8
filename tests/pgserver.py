"""A throwaway PostgreSQL server for the tests: Debian's binaries, a fresh cluster, loopback only.

``.ci/run`` installs the ``postgresql`` package; on a machine without it the PostgreSQL tests skip
with the reason. As root (CI containers) the server runs as the ``postgres`` user, since PostgreSQL
refuses to run as root.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def find_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """Start with :meth:`start`, connect with :attr:`url`, stop with :meth:`stop`."""

    def __init__(self) -> None:
        self.initdb, self.pg_ctl = find_bin("initdb"), find_bin("pg_ctl")
        self.dir = Path(tempfile.mkdtemp(prefix="flysearch-pg-"))
        self.port = _free_port()
        self.user = "flysearch"

    @property
    def available(self) -> str | None:
        """``None`` when a server can start here, else why not."""
        if not (self.initdb and self.pg_ctl):
            return "PostgreSQL is not installed (apt-get install postgresql)"
        try:
            import psycopg2  # noqa: F401
        except ImportError:
            return "psycopg2 is not installed (pip install psycopg2-binary)"
        if os.geteuid() == 0 and not shutil.which("runuser"):
            return "running as root without runuser"
        return None

    def _run(self, *cmd: str) -> None:
        prefix: list[str] = []
        if os.geteuid() == 0:
            prefix = ["runuser", "-u", "postgres", "--"]
        subprocess.run([*prefix, *cmd], check=True, capture_output=True, text=True, timeout=120)

    def start(self, *, fsync: bool = False) -> str:
        """Start the server; *fsync* off (the tests' default) trades durability for speed."""
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        data = self.dir / "data"
        self._run(str(self.initdb), "-D", str(data), "-A", "trust", "-U", self.user, "--no-sync")
        self._opts = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c max_connections=200"
                      + ("" if fsync else " -c fsync=off"))
        self.resume()
        return self.url("postgres")

    def pause(self, mode: str = "fast") -> None:
        """Stop the server, keeping its databases, until :meth:`resume`: ``fast`` ends every session
        (their transactions rolled back), ``immediate`` as a crash would."""
        self._run(str(self.pg_ctl), "-D", str(self.dir / "data"), "-m", mode, "-w", "stop")

    def resume(self) -> None:
        """Start the server (again) on its data, with the options it first started with."""
        self._run(str(self.pg_ctl), "-D", str(self.dir / "data"), "-o", self._opts,
                  "-l", str(self.dir / "log"), "-w", "start")

    def restart(self, mode: str = "fast") -> None:
        """Restart the server with the options it started with: ``fast`` ends every session (their
        transactions rolled back), ``immediate`` as a crash would."""
        self._run(str(self.pg_ctl), "-D", str(self.dir / "data"), "-m", mode, "-l", str(self.dir / "log"),
                  "-w", "restart")

    def url(self, database: str) -> str:
        return f"postgresql+psycopg2://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import sqlalchemy as sa

        engine = sa.create_engine(self.url("postgres"), isolation_level="AUTOCOMMIT")
        with engine.connect() as c:
            c.exec_driver_sql(f'CREATE DATABASE "{name}"')
        engine.dispose()
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run(str(self.pg_ctl), "-D", str(self.dir / "data"), "-m", "immediate", "stop")
        except (subprocess.SubprocessError, OSError):
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
