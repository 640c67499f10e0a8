"""The examples/ kernels: each matches its reference under Triton's interpreter for a handful of
configs of its space (tests/examples/_interpret.py, in a process of its own), its module has the
interface flysearch.autotune's callers use, its keys file and workload are its KEYS, and its space
keeps at least 500 configs for every key on sm_90.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")

from flysearch import get_arch
from flysearch.tune import load_keys
from tests.examples._interpret import CASES

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("softmax", "layernorm", "matmul")
LAUNCH_OPTIONS = {"num_warps", "num_stages", "num_ctas", "maxnreg"}


# Under pytest-xdist one worker runs this module, so that its module fixture is set up once.
pytestmark = pytest.mark.xdist_group("examples/test_examples")


@pytest.fixture(scope="module")
def interpreted() -> list[str]:
    """Each case's verdict, from one interpreter process."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-m", "tests.examples._interpret"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(verdicts) == len(CASES), done.stderr[-2000:]
    return verdicts


def _example(name: str) -> ModuleType:
    if os.environ.get("TRITON_INTERPRET"):
        pytest.skip("the interface is read from the compiled kernel, not the interpreted one")
    return importlib.import_module(f"examples.{name}")


CASE_IDS = [f"{name}-{'x'.join(map(str, key.values()))}-{i}" for i, (name, key, _) in enumerate(CASES)]


@pytest.mark.parametrize("case", range(len(CASES)), ids=CASE_IDS)
def test_kernel_matches_reference_in_interpreter(interpreted: list[str], case: int) -> None:
    assert interpreted[case] == "ok", CASES[case]


@pytest.mark.parametrize("name", NAMES)
def test_module_interface(name: str) -> None:
    """What flysearch.autotune's callers read: the raw kernel, the key, the outputs and the space's
    parameters are the kernel's own names or launch options; make_args builds every runtime
    argument; reference takes them as keywords."""
    import triton

    module = _example(name)
    assert isinstance(module.kernel_fn, triton.runtime.JITFunction)
    constexprs = {p.name for p in module.kernel_fn.params if p.is_constexpr}
    runtime = [p.name for p in module.kernel_fn.params if not p.is_constexpr]
    params = {p.name for p in module.SPACE.params}
    assert params - LAUNCH_OPTIONS == constexprs
    assert set(module.KEY) <= set(runtime) and set(module.OUTPUTS) <= set(runtime)
    assert len(module.KEYS) >= 8 and all(set(key) == set(module.KEY) for key in module.KEYS)
    args = module.make_args(module.KEYS[0], "meta")
    assert list(args) == runtime
    assert {k: args[k] for k in module.KEY} == module.KEYS[0]
    outputs = module.reference(**args)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    assert [o.shape for o in outputs] == [args[name].shape for name in module.OUTPUTS]
    assert (module.kernel.check["rtol"], module.kernel.check["atol"]) == (module.RTOL, module.ATOL)


@pytest.mark.parametrize("name", NAMES)
def test_keys_file_and_workload_are_the_modules_keys(name: str) -> None:
    """``flysearch tune run examples/NAME.py:workload --keys examples/NAME_keys.toml`` tunes KEYS."""
    module = _example(name)
    assert load_keys(ROOT / "examples" / f"{name}_keys.toml") == module.KEYS
    assert list(inspect.signature(module.workload).parameters) == module.KEY


@pytest.mark.parametrize("name", NAMES)
def test_space_keeps_500_configs_per_key_on_sm90(name: str) -> None:
    module = _example(name)
    arch = get_arch("sm_90")
    counts = {str(key): sum(module.SPACE.reject_reason(c, key, arch) is None for c in module.SPACE.configs())
              for key in module.KEYS}
    assert min(counts.values()) >= 500, counts
    assert max(counts.values()) < module.SPACE.size  # the constraints cut every key's space
