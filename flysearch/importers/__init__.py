"""Importers of tuning results from other tools into ground-truth tables."""

from flysearch.importers.kernel_tuner import read_kernel_tuner_cache

__all__ = ["read_kernel_tuner_cache"]
