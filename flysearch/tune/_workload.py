"""One call's arguments as a tuner uses them: hooks that make every run start alike, and the check
of a run's outputs against a reference.

* ``restore_value`` arguments are copied before tuning and put back before each config's checked
  run and after tuning, so a kernel that updates a tensor in place leaves the caller's data as it
  was (``triton.autotune``'s meaning).
* ``reset_to_zero`` arguments are zeroed before every run, timed runs included (an accumulating
  kernel needs them zeroed; ``triton.autotune`` times the zeroing too).
* ``reference(**arguments)`` gives the expected value of each of ``outputs`` (one array or a tuple),
  computed once per call before any config runs. Before a config's checked run its float outputs are
  filled with NaN, so an element the kernel never writes fails the check (all but the outputs it
  also reads: the ``restore_value`` and ``reset_to_zero`` ones).

Arrays are torch tensors or NumPy arrays; the check is ``allclose`` with *rtol* and *atol*.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flysearch.errors import AutotuneError

__all__ = ["Workload"]


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch")


def _on_cuda(value: Any) -> bool:
    return _is_torch(value) and getattr(value, "is_cuda", False)


def _copy(value: Any) -> Any:
    return value.clone() if _is_torch(value) else value.copy()


def _assign(target: Any, source: Any) -> None:
    if _is_torch(target):
        target.copy_(source)
    else:
        target[...] = source


def _fill(value: Any, fill: float, *, floats_only: bool = False) -> None:
    if _is_torch(value):
        if value.is_floating_point() or not floats_only:
            value.fill_(fill)
    elif getattr(value, "dtype", None) is not None and (value.dtype.kind == "f" or not floats_only):
        value.fill(fill)


def _mismatch(name: str, got: Any, want: Any, rtol: float, atol: float) -> str | None:
    """``None`` if *got* is close to *want*, else a one-line reason."""
    if _is_torch(got):
        import torch

        want = torch.as_tensor(want, device=got.device)
        if got.shape != want.shape:
            return f"{name}: shape {tuple(got.shape)}, expected {tuple(want.shape)}"
        g, w = got.float(), want.float()
        if torch.allclose(g, w, rtol=rtol, atol=atol):
            return None
        diff = (g - w).abs()
        worst = float(diff.nan_to_num(float("inf")).max().item())
        return f"{name}: max abs error {worst:.3g} (rtol {rtol}, atol {atol})"
    import numpy as np

    g, w = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if g.shape != w.shape:
        return f"{name}: shape {g.shape}, expected {w.shape}"
    if np.allclose(g, w, rtol=rtol, atol=atol):
        return None
    worst = float(np.nan_to_num(np.abs(g - w), nan=np.inf).max())
    return f"{name}: max abs error {worst:.3g} (rtol {rtol}, atol {atol})"


class Workload:
    """The arguments of one call, with the hooks and the check a tuner runs each config under.

    Args:
        arguments: The call's arguments by name.
        reference: ``reference(**arguments)`` -> expected outputs; ``None`` skips the check.
        outputs: The arguments the kernel writes (required with a *reference*).
        reset_to_zero: Arguments zeroed before every run.
        restore_value: Arguments restored before each checked run and after tuning.
    """

    def __init__(self, arguments: Mapping[str, Any], *, reference: Callable[..., Any] | None = None,
                 outputs: Sequence[str] = (), reset_to_zero: Sequence[str] = (),
                 restore_value: Sequence[str] = (), rtol: float = 1e-2, atol: float = 1e-2) -> None:
        self.arguments = dict(arguments)
        for label, names in (("outputs", outputs), ("reset_to_zero", reset_to_zero),
                             ("restore_value", restore_value)):
            missing = [n for n in names if n not in self.arguments]
            if missing:
                raise AutotuneError(f"{label} names {', '.join(map(repr, missing))}, which the call does not "
                                    f"pass; its arguments are {', '.join(self.arguments)}.")
        if reference is not None and not outputs:
            raise AutotuneError("A reference needs outputs=[...]: the arguments the kernel writes.")
        self.outputs, self.rtol, self.atol = tuple(outputs), rtol, atol
        self._zeroed = [self.arguments[n] for n in reset_to_zero]
        self._saved = {n: _copy(self.arguments[n]) for n in restore_value}
        self.on_gpu = any(_on_cuda(v) for v in self.arguments.values())
        self.expected: tuple[Any, ...] | None = None
        if reference is not None:
            expected = reference(**self.arguments)
            self.expected = expected if isinstance(expected, tuple | list) else (expected,)
            if len(self.expected) != len(self.outputs):
                raise AutotuneError(f"The reference returns {len(self.expected)} values for "
                                    f"{len(self.outputs)} outputs ({', '.join(self.outputs)}).")
            self.restore()

    def restore(self) -> None:
        """Put the ``restore_value`` arguments back as they were."""
        for name, saved in self._saved.items():
            _assign(self.arguments[name], saved)

    def zero(self) -> None:
        """Zero the ``reset_to_zero`` arguments (before every run)."""
        for value in self._zeroed:
            _fill(value, 0.0)

    def before_check(self) -> None:
        """Restore, zero, and fill the float outputs with NaN: the state a checked run starts from
        (an output the kernel also reads, a ``restore_value`` or ``reset_to_zero`` one, keeps its
        restored or zeroed value)."""
        self.restore()
        if self.expected is not None:
            for name in self.outputs:
                if name not in self._saved and all(self.arguments[name] is not z for z in self._zeroed):
                    _fill(self.arguments[name], float("nan"), floats_only=True)
        self.zero()

    def check(self) -> str | None:
        """``None`` if the outputs match the reference (or there is none), else the reason."""
        self.sync()
        if self.expected is None:
            return None
        for name, want in zip(self.outputs, self.expected, strict=True):
            problem = _mismatch(name, self.arguments[name], want, self.rtol, self.atol)
            if problem:
                return problem
        return None

    def sync(self) -> None:
        if self.on_gpu:
            import torch

            torch.cuda.synchronize()
