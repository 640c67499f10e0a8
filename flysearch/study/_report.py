"""Reading stored studies back: summaries, regret against a table's optimum, study lists."""

from __future__ import annotations

import optuna

from flysearch.errors import FlysearchError
from flysearch.study._study import StudySummary, open_storage, summarize
from flysearch.tables import DEFAULT_DB, TableStore

__all__ = ["list_studies", "load_summary", "table_optimum"]


def table_optimum(table: str | None, db: str = DEFAULT_DB) -> float | None:
    """The best time of *table* in ms, or ``None`` when the table or the database is absent."""
    if not table:
        return None
    try:
        store = TableStore(db, create=False)
    except FlysearchError:
        return None
    try:
        return store.load(table).best().time_ms if table in store else None
    finally:
        store.close()


def load_summary(
    name: str, *, storage: str | None = None, db: str = DEFAULT_DB
) -> tuple[StudySummary, float | None]:
    """The summary of stored study *name* and its table's optimum (``None`` if unknown)."""
    store = open_storage(storage, create=False)
    try:
        study = optuna.load_study(study_name=name, storage=store)
    except KeyError:
        known = [s.study_name for s in store.get_all_studies()]
        raise FlysearchError(
            f"No study {name!r} in the storage; known studies: {', '.join(known) or 'none'}."
        ) from None
    summary = summarize(study)
    return summary, table_optimum(summary.settings.get("table"), db)


def list_studies(storage: str | None = None) -> list[tuple[str, int, float | None]]:
    """``(name, trials, best value)`` of every study in *storage*."""
    out = []
    for s in optuna.get_all_study_summaries(open_storage(storage, create=False)):
        best = s.best_trial.value if s.best_trial is not None else None
        out.append((s.study_name, s.n_trials, best))
    return out
