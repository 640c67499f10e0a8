"""The cost model: features of (config, problem, arch), extremely randomized trees, and the
scikit-learn prior trained on past tables that ranks configs before they are compiled.
"""

from __future__ import annotations

from flysearch.costmodel._extra_trees import fit_extra_trees, tree_predictions
from flysearch.costmodel._features import Columns, columns_matrix, feature_columns
from flysearch.costmodel._model import (
    CostModel,
    Prior,
    check_prior_fits,
    fit_prior,
    load_prior,
    occupancy_views,
    table_arch,
    table_target,
    target_key,
    walks,
)

__all__ = [
    "Columns",
    "CostModel",
    "Prior",
    "check_prior_fits",
    "columns_matrix",
    "feature_columns",
    "fit_extra_trees",
    "fit_prior",
    "load_prior",
    "occupancy_views",
    "table_arch",
    "table_target",
    "target_key",
    "tree_predictions",
    "walks",
]
