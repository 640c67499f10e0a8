"""Figures of a sampler comparison (matplotlib, Agg backend), each saved as PNG and SVG.

* :func:`plot_curves`: best-so-far against unique compiles per table, as the fraction of the
  optimum reached (median over seeds, inter-quartile band), with the calculated random-search
  curve of the autotuning methodology as reference.
* :func:`plot_boxes`: compiles to reach within 1% of the optimum per sampler (box plots over seeds,
  runs that never got there drawn as crosses above the budget, success rate on top).
* :func:`plot_matrix`: a slowdown matrix (the key-mistake experiment).

Every figure carries a footer naming the data source, the hardware, the measurement date and the
date and versions of the replay.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from flysearch._atomicfile import atomic_write
from flysearch.compare._metrics import random_baseline_curve

if TYPE_CHECKING:
    from flysearch.compare._run import TableInfo

__all__ = ["footer", "plot_boxes", "plot_curves", "plot_matrix"]


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def footer(infos: Sequence[TableInfo], versions: dict[str, str] | None = None) -> str:
    """``data: <source> on <device> measured <date>; ...; replayed <today> (versions)``."""
    seen = dict.fromkeys(f"{i.source or i.name} on {i.device} measured {i.date}" for i in infos)
    vers = ", ".join(f"{k} {v}" for k, v in (versions or {}).items())
    return f"data: {'; '.join(seen)} — replayed {_dt.date.today().isoformat()}" + (
        f" ({vers})" if vers else ""
    )


def _save(fig: Any, out_dir: Path, name: str, text: str) -> list[Path]:
    fig.text(0.01, 0.005, text, fontsize=6, ha="left", va="bottom", wrap=True, color="0.3")
    paths = []
    for ext in ("png", "svg"):
        path = out_dir / f"{name}.{ext}"
        with atomic_write(path, "wb") as fh:
            fig.savefig(fh, format=ext, dpi=110 if ext == "png" else None,
                        metadata={"Date": None} if ext == "svg" else None)
        paths.append(path)
    _plt().close(fig)
    return paths


def plot_curves(
    runs: list[dict[str, Any]],
    info: TableInfo,
    budget: int,
    out_dir: Path,
    versions: dict[str, str] | None = None,
) -> list[Path]:
    """Fraction of the optimum reached against unique compiles, one line and IQR band per sampler."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    ks = np.arange(1, budget + 1)
    samplers = list(dict.fromkeys(r["sampler"] for r in runs if r["table_label"] == info.label))
    for sampler in samplers:
        trajs = [r["trajectory"] for r in runs if r["table_label"] == info.label and r["sampler"] == sampler]
        frac = np.array([[t.fraction_at(int(k), info.optimum_ms) for k in ks] for t in trajs])
        q25, med, q75 = np.percentile(frac, [25, 50, 75], axis=0)
        (line,) = ax.plot(ks, med, lw=1.4, label=sampler)
        ax.fill_between(ks, q25, q75, color=line.get_color(), alpha=0.15, lw=0)
    rand = info.optimum_ms / random_baseline_curve(info.ok_times, ks)
    ax.plot(ks, rand, color="k", ls="--", lw=1.0, label="random (calculated)")
    ax.axhline(1 / 1.01, color="0.5", lw=0.6, ls=":")
    ax.set_xscale("log")
    ax.set_xlabel("unique compiles")
    ax.set_ylabel("fraction of optimum reached (optimum / best so far)")
    ax.set_title(f"{info.label} ({info.group}): median and IQR over seeds", fontsize=10)
    ax.set_ylim(max(0.0, float(np.nanmin(rand)) - 0.05), 1.01)
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    fig.subplots_adjust(bottom=0.17)
    return _save(fig, out_dir, f"curves_{slug(info.label)}", footer([info], versions))


def plot_boxes(
    runs: list[dict[str, Any]],
    infos: Sequence[TableInfo],
    group: str,
    budget: int,
    out_dir: Path,
    versions: dict[str, str] | None = None,
    eps: float = 0.01,
) -> list[Path]:
    """Box plots of compiles to within *eps* of the optimum per sampler, runs of one group pooled."""
    plt = _plt()
    members = {i.label: i for i in infos if i.group == group}
    samplers = list(dict.fromkeys(r["sampler"] for r in runs if r["table_label"] in members))
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(samplers) + 2), 4.4))
    data, fails = [], []
    for sampler in samplers:
        vals = [
            r["trajectory"].compiles_to(members[r["table_label"]].optimum_ms * (1 + eps))
            for r in runs
            if r["table_label"] in members and r["sampler"] == sampler
        ]
        data.append([v for v in vals if v is not None] or [math.nan])
        fails.append((sum(v is None for v in vals), len(vals)))
    ax.boxplot(data, whis=(5, 95), showfliers=True)
    ax.set_xticks(range(1, len(samplers) + 1), samplers, rotation=30, ha="right", fontsize=8)
    for i, (failed, n) in enumerate(fails, start=1):
        if failed:
            ax.scatter([i] * failed, [budget * 1.08] * failed, marker="x", color="C3", s=14)
        ax.text(i, budget * 1.25, f"{100 * (n - failed) / max(n, 1):.0f}%", ha="center", fontsize=7)
    ax.axhline(budget, color="0.5", lw=0.6, ls=":")
    ax.set_yscale("log")
    ax.set_ylabel(f"unique compiles to within {eps:.0%} of optimum")
    ax.set_title(f"{group}: compiles to {eps:.0%} (x: not reached within {budget}; % = success)", fontsize=9)
    fig.subplots_adjust(bottom=0.27)
    return _save(fig, out_dir, f"box_{slug(group)}", footer(list(members.values()), versions))


def plot_matrix(
    labels: Sequence[str], matrix: np.ndarray, title: str, out_dir: Path, name: str, note: str
) -> list[Path]:
    """A heat map of slowdowns: row = where the config was tuned, column = where it runs."""
    plt = _plt()
    n = len(labels)
    fig, ax = plt.subplots(figsize=(2.2 + 0.9 * n, 1.8 + 0.8 * n))
    shown = np.where(np.isfinite(matrix), matrix, np.nan)
    im = ax.imshow(np.log2(shown), cmap="Reds", vmin=0)
    for i in range(n):
        for j in range(n):
            v = matrix[i, j]
            ax.text(j, i, "n/a" if not np.isfinite(v) else f"{v:.2f}x", ha="center", va="center", fontsize=7)
    ax.set_xticks(range(n), labels, rotation=30, ha="right", fontsize=7)
    ax.set_yticks(range(n), labels, fontsize=7)
    ax.set_xlabel("runs on (table)")
    ax.set_ylabel("config tuned on (table)")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label="log2 slowdown")
    fig.subplots_adjust(bottom=0.3, left=0.3)
    return _save(fig, out_dir, name, note)
