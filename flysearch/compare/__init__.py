"""Sampler comparisons against grid: experiment files, the runs, the metrics (compiles to reach
the optimum), reports and figures; the cost model's leave-one-table-out evaluation.
"""

from __future__ import annotations

from flysearch.compare._costmodel_eval import (
    EPSILONS,
    HeldOut,
    evaluate_test_set,
    leave_one_out,
    prior_order,
    prior_ranks,
    sampler_compiles,
    transfer_ranks,
)
from flysearch.compare._costmodel_report import format_compiles, held_out_section
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
from flysearch.compare._landscape import (
    NEIGHBOURHOODS,
    descent_ends,
    landscape_row,
    landscape_section,
    value_indices,
)
from flysearch.compare._learning_curve import learning_curve_lines, learning_curve_row, training_subsets
from flysearch.compare._live_served import served_report, served_summary
from flysearch.compare._needle_rank import needle_compiles, needle_predictions, needle_row
from flysearch.compare._provenance import code_commit, host_description
from flysearch.compare._report import fmt_csv, key_mistake, report_experiment, summary_rows
from flysearch.compare._retime_agreement import (
    retime_agreement,
    retime_agreement_report,
    retime_agreement_rows,
)
from flysearch.compare._retime_top import (
    retime_top_keys,
    retime_top_medians,
    retime_top_report,
    retime_top_summary,
    retime_top_within,
)
from flysearch.compare._run import (
    RESULTS_DB,
    load_runs,
    load_table_infos,
    model_samplers_available,
    run_experiment,
    table_names,
)
from flysearch.compare._same_summary import TIMING_COLUMNS, differing_columns

__all__ = [
    "EPSILONS",
    "NEIGHBOURHOODS",
    "RESULTS_DB",
    "TIMING_COLUMNS",
    "Experiment",
    "HeldOut",
    "SamplerSpec",
    "TableSpec",
    "check_output_folder",
    "code_commit",
    "descent_ends",
    "differing_columns",
    "evaluate_test_set",
    "fmt_csv",
    "format_compiles",
    "held_out_section",
    "host_description",
    "key_mistake",
    "landscape_row",
    "landscape_section",
    "learning_curve_lines",
    "learning_curve_row",
    "leave_one_out",
    "load_experiment",
    "load_runs",
    "load_table_infos",
    "model_samplers_available",
    "needle_compiles",
    "needle_predictions",
    "needle_row",
    "parse_seeds",
    "prior_order",
    "prior_ranks",
    "report_experiment",
    "retime_agreement",
    "retime_agreement_report",
    "retime_agreement_rows",
    "retime_top_keys",
    "retime_top_medians",
    "retime_top_report",
    "retime_top_summary",
    "retime_top_within",
    "run_experiment",
    "sampler_compiles",
    "select_samplers",
    "select_tables",
    "served_report",
    "served_summary",
    "summary_rows",
    "table_names",
    "training_subsets",
    "transfer_ranks",
    "value_indices",
]
