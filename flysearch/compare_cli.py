"""``flysearch compare STUDYFILE``: run an experiment file and write its summary and figures."""

from __future__ import annotations

import click

from flysearch.cli_errors import user_errors

__all__ = ["compare"]


@click.command()
@click.argument("study_file", type=click.Path(dir_okay=False))
@click.option("--workers", type=int, default=None, help="Worker processes (default: the file's workers).")
@click.option("--report-only", is_flag=True, help="Only rewrite the summary and figures from stored runs.")
@click.option("--no-plots", is_flag=True, help="Write the markdown and CSV summary only.")
@user_errors
def compare(study_file: str, workers: int | None, report_only: bool, no_plots: bool) -> None:
    """Run seeds x samplers x tables of an experiment file through the replay evaluator.

    Results go to <output>/results.db (a rerun skips finished runs), then summary.md, summary.csv
    and PNG/SVG figures to <output>.

    Example:

        flysearch compare studies/compare_hub_convolution_MI250X.toml
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from flysearch.compare import run_experiment
    from flysearch.compare_report import key_mistake, report_experiment
    from flysearch.experiment import load_experiment

    console = Console(stderr=True)
    exp = load_experiment(study_file)
    if workers is not None and workers < 1:
        raise click.UsageError(f"--workers must be at least 1, got {workers}.")
    command = f"flysearch compare {study_file}"
    if exp.kind == "key_mistake":
        for path in key_mistake(exp, plots=not no_plots, command=command):
            click.echo(str(path))
        return
    if not report_only:
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("runs"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as bar:
            task = bar.add_task(exp.name, total=None)

            def progress(done: int, total: int, run_id: str) -> None:
                bar.update(task, completed=done, total=total)

            result = run_experiment(exp, workers=workers, progress=progress)
        for line in result.skipped:
            console.print(f"[yellow]skipped[/] {line}")
        console.print(
            f"{exp.name}: {result.done} runs done in {result.wall_s:.1f} s, {result.skipped_done} already "
            f"stored, of {result.total}; results in {result.results_db}"
        )
    for path in report_experiment(exp, plots=not no_plots, command=command):
        click.echo(str(path))
