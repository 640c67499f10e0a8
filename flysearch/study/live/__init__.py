"""Live studies: the sampler asks, a pool of CPU processes compiles ahead, GPU processes time.

:func:`run_live` runs a :class:`~flysearch.study.StudySpec` whose evaluator is a live one, on one
shape or many, on the local GPUs or in a worker server's warm processes, as its
:class:`LiveSettings` say; each worker returns a :class:`LiveReport`. :func:`specs_to_serve` is what
a worker server (``flysearch serve``) keeps warm for them.

Example (a table played back in real time, on this CPU)::

    from flysearch.study import LiveSettings, StudySpec, run_live
    spec = StudySpec(evaluator="simulated", table="triton_gemm/H200/1x6144x4096", sampler="tpe",
                     budget=24, storage="sqlite:///live.db")
    (report,) = run_live(spec, LiveSettings(compile_workers=2, scale=0.1))
    print(report.summary.best_key, f"overhead {report.overhead:.1%}")
"""

from __future__ import annotations

from flysearch.study._spec import LiveSettings
from flysearch.study.live._launch import run_live, specs_to_serve
from flysearch.study.live._report import LiveReport

__all__ = ["LiveReport", "LiveSettings", "run_live", "specs_to_serve"]
