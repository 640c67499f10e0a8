"""Subprocess side of a FlyDSL compile: ``python -m flysearch.evaluators._flydsl_worker`` reads one
JSON request on stdin and prints one result line. A compile that aborts the process (an LLVM error)
kills only this worker; the parent records it as a compile failure."""

from __future__ import annotations

import importlib
import json
import pickle
import sys
import time
from pathlib import Path
from typing import Any

from flysearch._lifeline import hold_inherited

MARKER = "FLYSEARCH_RESULT "


class FactoryError(Exception):
    """The kernel factory cannot be loaded: a user's mistake, not a failed compile of one config."""


def load_factory(path: str) -> Any:
    module, _, name = path.partition(":")
    if not module or not name:
        raise FactoryError(f"Kernel factory {path!r} is not of the form module:function.")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        reason = f"{type(exc).__name__}: {exc}"
        raise FactoryError(f"Kernel factory {path!r} cannot be loaded ({reason}).") from None
    if not callable(found):
        raise FactoryError(f"Kernel factory {path!r} is not callable.")
    return found


def _compile(request: dict[str, Any]) -> dict[str, Any]:
    import flydsl
    import flydsl.compiler as flyc

    from flysearch.evaluators._resources import parse_kernel_metadata
    from flysearch.kernels import check_reaches_kernel
    from flysearch.space import Shape

    call = load_factory(request["factory"])(Shape(**request["shape"]), device=request.get("device", "cpu"))
    config = flydsl.Config(num_warps=request.get("num_warps"), waves_per_eu=request.get("waves_per_eu"),
                           **request["kwargs"])
    if request.get("check_params") is not None:
        check_reaches_kernel(config, call.fn, request["check_params"])
    opts = config.compiler_opts()
    compiler = flyc.compile[opts] if opts else flyc.compile
    start = time.perf_counter()
    compiler(call.fn, *call.args, **config.all_kwargs())
    compile_s = time.perf_counter() - start
    artifacts = sorted(Path(request["cache_dir"]).rglob("*.pkl"))
    if not artifacts:
        raise RuntimeError("the compile left no artifact in the cache directory")
    with artifacts[-1].open("rb") as fh:
        ir_text = pickle.load(fh)._ir_text
    return {"ok": True, "compile_s": compile_s,
            "resources": [r.as_dict() for r in parse_kernel_metadata(ir_text)]}


def main() -> None:
    hold_inherited()  # it ends with the process that started it, however that one ends
    request = json.loads(sys.stdin.read())
    try:
        result = _compile(request)
    except Exception as exc:  # every failure is data for the parent
        kind = {"ConfigMappingError": "mapping", "FactoryError": "factory"}.get(type(exc).__name__,
                                                                            type(exc).__name__)
        result = {"ok": False, "error": f"{kind}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"}
    sys.stdout.write("\n" + MARKER + json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
