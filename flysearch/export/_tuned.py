"""Export what ``@flysearch.autotune`` tuned: each key's winner as a ``triton.autotune`` config
list (one ``triton.Config`` per distinct winner, each commented with the keys it won) or as JSON.
"""

from __future__ import annotations

from typing import Any

from flysearch.errors import MissingTableError
from flysearch.tune import TuneStore, store_url

__all__ = ["tuned_entries"]


def tuned_entries(store: str | None = None, *, kernel: str | None = None) -> list[dict[str, Any]]:
    """The winner of every tuned key in *store* (of the kernel named *kernel*, or all), as export
    entries: ``table`` (kernel and key), ``kernel``, ``key``, ``device``, ``time_ms``, ``params``
    and the tuning's ``compiles``.

    Raises:
        MissingTableError: the store holds no tuned key (of that kernel).
    """
    url = store_url(store)
    entries = []
    for t in TuneStore(url).tuned(name=kernel):
        if t.state != "done" or t.config is None:
            continue
        device = t.kernel.split(":")[3] if t.kernel.count(":") >= 4 else ""
        entries.append({"table": f"{t.name} {t.key}", "kernel": t.name, "key": t.key, "device": device,
                        "time_ms": t.report.get("winner_ms"), "params": t.config,
                        "compiles": t.report.get("compiles")})
    if not entries:
        what = f"kernel {kernel!r}" if kernel else "kernel"
        raise MissingTableError(f"The store {url} holds no tuned key of any {what}; tune one first "
                                "(call it, or 'flysearch tune run').")
    return entries
