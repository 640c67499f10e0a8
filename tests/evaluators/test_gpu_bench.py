"""The timer's device description, without a GPU."""

from __future__ import annotations

from flysearch.evaluators._gpu_bench import driver_from_proc


def test_driver_version_read_from_the_kernel_module_file():
    proprietary = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
    open_module = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  "
                   "(dvs-builder@U16-I3-B03-4-3)  Thu Jan 23 2025\n")
    assert driver_from_proc(proprietary) == "550.54.15"
    assert driver_from_proc(open_module) == "570.86.15"
    assert driver_from_proc("no driver here") is None


def test_versions_unpickle_without_importing_torch() -> None:
    """The timer's versions reach the study's process as plain strings: unpickling a TorchVersion
    would import torch there."""
    import pickle
    import subprocess
    import sys

    from flysearch.evaluators._gpu_bench import library_versions

    versions = library_versions()
    assert versions["torch"] and all(type(v) is str for v in versions.values())
    code = ("import pickle, sys; pickle.loads(sys.stdin.buffer.read()); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(versions),
                         capture_output=True, check=True)
    assert out.stdout.strip() == b"False"
