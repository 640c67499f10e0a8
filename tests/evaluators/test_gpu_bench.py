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


class _SimulatedGPU:
    """One CUDA stream in simulated time: the host pays *launch_s* to enqueue a kernel of *kernel_s*;
    the GPU runs what is queued in order; events stamp the time the GPU reaches them."""

    def __init__(self, launch_s: float, kernel_s: float) -> None:
        self.launch_s, self.kernel_s = launch_s, kernel_s
        self.host = 0.0  # the host's clock
        self.free_at = 0.0  # when the GPU has run everything queued

    def enqueue(self, seconds: float) -> float:
        self.free_at = max(self.host, self.free_at) + seconds
        return self.free_at

    def launch(self, _i: int) -> None:
        self.host += self.launch_s
        self.enqueue(self.kernel_s)

    def torch(self) -> object:
        from types import SimpleNamespace

        gpu = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.at = 0.0

            def record(self) -> None:
                self.at = gpu.enqueue(0.0)

            def synchronize(self) -> None:
                gpu.host = max(gpu.host, self.at)

            def elapsed_time(self, end: Event) -> float:
                return (end.at - self.at) * 1e3

        def synchronize() -> None:
            gpu.host = max(gpu.host, gpu.free_at)

        def sleep(cycles: int) -> None:
            from flysearch.evaluators._gpu_bench import _SLEEP_CYCLES_PER_S

            gpu.enqueue(cycles / _SLEEP_CYCLES_PER_S)

        return SimpleNamespace(cuda=SimpleNamespace(Event=Event, synchronize=synchronize, _sleep=sleep))


def test_a_kernel_shorter_than_its_launch_is_timed_on_the_gpu_not_at_the_hosts_launch_rate(monkeypatch):
    """A 10 us kernel whose launch costs the host 30 us times at 10 us: the launches are queued ahead
    of the GPU, so the host's launch rate does not set the time."""
    import sys
    from types import SimpleNamespace

    from flysearch.evaluators import _gpu_bench

    for launch_s, kernel_s in [(30e-6, 10e-6), (5e-6, 10e-6), (100e-6, 2e-6)]:
        gpu = _SimulatedGPU(launch_s, kernel_s)
        monkeypatch.setitem(sys.modules, "torch", gpu.torch())
        monkeypatch.setattr(_gpu_bench, "time", SimpleNamespace(perf_counter=lambda gpu=gpu: gpu.host))
        ms, info = _gpu_bench.time_launches(gpu.launch, _gpu_bench.TimingProtocol())
        assert abs(ms - kernel_s * 1e3) < 0.02 * kernel_s * 1e3, (launch_s, kernel_s, ms, info)
