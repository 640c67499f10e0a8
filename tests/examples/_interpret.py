"""Run the examples' kernels under Triton's interpreter and print one JSON line per case.

    TRITON_INTERPRET=1 python -m tests.examples._interpret

The interpreter must be on before Triton is first imported (``triton.language``'s own jitted
functions are made interpretable then), so tests run this in a process of its own.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

# (example, key, config values): small enough for the interpreter, each one a config of the space,
# together covering both code paths of each kernel: a row in one tile or in chunks, ragged last
# chunks, programs whose last rows run past the matrix, GEMM tiles past every edge.
CASES: list[tuple[str, dict[str, int], dict[str, Any]]] = [
    ("softmax", {"n_rows": 5, "n_cols": 300},
     {"BLOCK_N": 512, "ROWS_PER_PROGRAM": 1, "ONE_PASS": True, "num_warps": 4, "num_stages": 1}),
    ("softmax", {"n_rows": 5, "n_cols": 300},
     {"BLOCK_N": 512, "ROWS_PER_PROGRAM": 4, "ONE_PASS": True, "num_warps": 2, "num_stages": 3}),
    ("softmax", {"n_rows": 5, "n_cols": 300},
     {"BLOCK_N": 128, "ROWS_PER_PROGRAM": 2, "ONE_PASS": False, "num_warps": 1, "num_stages": 2}),
    ("softmax", {"n_rows": 3, "n_cols": 512},
     {"BLOCK_N": 256, "ROWS_PER_PROGRAM": 1, "ONE_PASS": False, "num_warps": 8, "num_stages": 4}),
    ("layernorm", {"n_rows": 5, "n_cols": 300},
     {"BLOCK_N": 512, "ROWS_PER_PROGRAM": 1, "ONE_PASS": True, "num_warps": 4, "num_stages": 1}),
    ("layernorm", {"n_rows": 5, "n_cols": 300},
     {"BLOCK_N": 512, "ROWS_PER_PROGRAM": 4, "ONE_PASS": True, "num_warps": 4, "num_stages": 2}),
    ("layernorm", {"n_rows": 5, "n_cols": 300},
     {"BLOCK_N": 128, "ROWS_PER_PROGRAM": 2, "ONE_PASS": False, "num_warps": 1, "num_stages": 2}),
    ("layernorm", {"n_rows": 3, "n_cols": 512},
     {"BLOCK_N": 256, "ROWS_PER_PROGRAM": 1, "ONE_PASS": False, "num_warps": 2, "num_stages": 3}),
    ("matmul", {"M": 40, "N": 72, "K": 100},
     {"TILE_M": 16, "TILE_N": 32, "TILE_K": 32, "GROUP": 1, "num_warps": 4, "num_stages": 2}),
    ("matmul", {"M": 40, "N": 72, "K": 100},
     {"TILE_M": 16, "TILE_N": 64, "TILE_K": 64, "GROUP": 8, "num_warps": 4, "num_stages": 3}),
    ("matmul", {"M": 64, "N": 64, "K": 64},
     {"TILE_M": 32, "TILE_N": 32, "TILE_K": 32, "GROUP": 8, "num_warps": 8, "num_stages": 4}),
]


def _take_numpy_fix() -> None:
    """Triton 3.6's interpreter turns a loop bound it holds as a one-element array into an int with
    ``int(array)``, which numpy 2.4 refuses (triton-lang/triton#9171, fixed upstream by #9172):
    take the fix's ``squeeze()``."""
    from triton.runtime import interpreter

    patch_tensor = interpreter._patch_lang_tensor

    def patched(tensor: Any, scope: Any) -> None:
        patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    interpreter._patch_lang_tensor = patched


def run_case(name: str, key: dict[str, int], values: dict[str, Any]) -> str:
    """``"ok"``, or why example *name*'s kernel with *values* is wrong for *key*."""
    import torch

    module = importlib.import_module(f"examples.{name}")
    config = module.SPACE.config(**values)  # raises if a value is outside the space
    args = module.make_args(key, "cpu")
    expected = module.reference(**args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for out in module.OUTPUTS:
        args[out].fill_(float("nan"))  # an output the kernel leaves unwritten cannot pass
    try:
        module.launch(module.kernel_fn, args, **config.as_dict())
        for out, want in zip(module.OUTPUTS, expected, strict=True):
            torch.testing.assert_close(args[out], want, rtol=module.RTOL, atol=module.ATOL, msg=out)
    except Exception as exc:  # reported to the test, which fails on it
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def main() -> None:
    _take_numpy_fix()
    for case in CASES:
        print(json.dumps(run_case(*case)), flush=True)


if __name__ == "__main__":
    main()
