"""``flysearch serve``: keep a GPU timer, compile processes and a study process warm for the live
studies of separate commands (see :mod:`flysearch.evaluators`)."""

from __future__ import annotations

import json
import os
import signal
import threading

import click

from flysearch.cli._errors import user_errors
from flysearch.cli._options import gpu_list
from flysearch.errors import FlysearchError
from flysearch.evaluators import evaluator_names
from flysearch.tables import DEFAULT_DB

__all__ = ["serve"]


@click.command()
@click.option("--evaluator", default="triton", show_default=True,
              help=f"One of: {', '.join(evaluator_names(live=True))}.")
@click.option("--arch", default=None, help="Arch profile (triton: sm_90 by default; flydsl: gfx942|gfx950).")
@click.option("--gpu", default=None,
              help="The GPU the timers own (CUDA_VISIBLE_DEVICES), or GPUs, comma-separated (timers "
                   "for each, for studies run with --gpus); default: as studies without --gpus see them.")
@click.option("--compile-workers", type=click.IntRange(min=0), default=None,
              help="Compile processes kept warm (default: as a study's, CPU count minus 2).")
@click.option("--timers", type=click.IntRange(min=0), default=1, show_default=True,
              help="GPU timers kept warm.")
@click.option("--prior", "priors", multiple=True, type=click.Path(dir_okay=False),
              help="A cost-model file the study processes keep loaded, for costmodel studies that name "
                   "it (repeat for several).")
@click.option("--table", default=None, help="Simulated: the table played back.")
@click.option("--db", default=DEFAULT_DB, show_default=True, help="Simulated: its database.")
@click.option("--socket", "path", default=None,
              help="Unix socket to listen on (default $FLYSEARCH_SERVER, else a per-user one).")
@click.option("--status", is_flag=True, help="Print the running server's status (JSON) and exit.")
@user_errors
def serve(evaluator: str, arch: str | None, gpu: str | None, compile_workers: int | None, timers: int,
          priors: tuple[str, ...], table: str | None, db: str, path: str | None, status: bool) -> None:
    """Keep warm workers for live studies started by separate commands.

    A live study spends seconds starting its GPU timer (importing torch, the GPU's context) and its
    compile processes. This server keeps them started; a study given ``--server`` takes them ready
    (and starts its own when the server has none of the right kind). Stop it with Ctrl-C.

    Example:

        flysearch serve --evaluator triton --gpu 0 &

        flysearch study run --evaluator triton --shape 4096x4096x4096 --sampler tpe-unseen --server

    With ``--gpu 0,1`` it keeps a timer for each GPU, for studies run with ``--gpus 0,1``. With
    ``--prior model.joblib`` its study processes keep that cost model loaded for ``costmodel``
    studies that name it (``--sampler costmodel --prior model.joblib``).
    """
    from flysearch.evaluators import WorkerServer, default_socket, server_status
    from flysearch.study import specs_to_serve

    path = path or default_socket()
    if status:
        found = server_status(path)
        if found is None:
            raise FlysearchError(f"No worker server is listening on {path}.")
        click.echo(json.dumps(found, indent=2))
        return
    if timers < 0 or (compile_workers is not None and compile_workers < 0):
        raise FlysearchError("--timers and --compile-workers must be >= 0.")
    gpus = gpu_list(gpu, "--gpu")
    if priors:
        from flysearch.costmodel import load_prior

        for prior in priors:
            load_prior(prior)  # a missing or malformed file is the user's mistake, said here
    specs = specs_to_serve(evaluator, arch=arch, gpus=gpus, table=table, db=db,
                           compile_workers=compile_workers, timers=timers,
                           priors=[os.path.abspath(p) for p in priors])
    server = WorkerServer(specs, path)
    try:
        server.start()
    except OSError as exc:
        raise FlysearchError(f"Cannot serve on {path}: {exc}") from None
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda _signum, _frame: stopping.set())
    kinds = ", ".join(f"{s.spares} {s.name}" for s in specs)
    click.echo(f"serving warm workers for {evaluator} studies on {path} ({kinds}); studies take them "
               f"with --server {path}", err=True)
    try:
        server.serve_forever(stopping.is_set)
    finally:
        server.close()
        click.echo(f"stopped; served {server.served} workers", err=True)
