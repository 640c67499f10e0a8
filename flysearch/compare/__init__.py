"""Sampler comparisons against grid: experiment files, the runs, the metrics (compiles to reach
the optimum), reports and figures; the cost model's leave-one-table-out evaluation.
"""

from __future__ import annotations

from flysearch.compare._costmodel_eval import (
    EPSILONS,
    HeldOut,
    evaluate_held_out,
    leave_one_out,
    prior_order,
    prior_ranks,
)
from flysearch.compare._experiment import (
    Experiment,
    SamplerSpec,
    TableSpec,
    check_output_folder,
    load_experiment,
    parse_seeds,
    select_samplers,
    select_tables,
)
from flysearch.compare._provenance import code_commit, host_description
from flysearch.compare._report import (
    experiment_summary,
    fmt_csv,
    key_mistake,
    report_experiment,
    summary_rows,
)
from flysearch.compare._run import (
    RESULTS_DB,
    load_runs,
    load_table_infos,
    model_samplers_available,
    run_experiment,
    table_names,
)

__all__ = [
    "EPSILONS",
    "RESULTS_DB",
    "Experiment",
    "HeldOut",
    "SamplerSpec",
    "TableSpec",
    "check_output_folder",
    "code_commit",
    "evaluate_held_out",
    "experiment_summary",
    "fmt_csv",
    "host_description",
    "key_mistake",
    "leave_one_out",
    "load_experiment",
    "load_runs",
    "load_table_infos",
    "model_samplers_available",
    "parse_seeds",
    "prior_order",
    "prior_ranks",
    "report_experiment",
    "run_experiment",
    "select_samplers",
    "select_tables",
    "summary_rows",
    "table_names",
]
