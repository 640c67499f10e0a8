"""A compile's answer and its timing make one measurement, the same way in a race and a live study."""

from __future__ import annotations

from flysearch.evaluators import CompileResult, Measurement, Outcome, TaskResult


def test_a_compile_whose_process_died_is_a_failed_build_with_its_seconds() -> None:
    built = CompileResult.of_task(TaskResult("k", "crash", None, "worker died (exit 11)", 2.5))
    assert not built.ok
    assert built.failure() == Measurement(Outcome.COMPILE_FAILED, None, 2.5, 0.0,
                                          "compile crash: worker died (exit 11)", {})
    answer = CompileResult(True, 1.0, notes={"shared": 0})
    assert CompileResult.of_task(TaskResult("k", "ok", answer)) is answer


def test_a_timing_carries_the_compiles_seconds_and_extra_under_the_timers() -> None:
    built = CompileResult(True, 1.5, extra={"vgprs": 64, "spread": None})
    timed = built.timed(TaskResult("k", "ok", Measurement(Outcome.OK, 0.2, None, 0.01, "", {"spread": 0.03})))
    assert timed == Measurement(Outcome.OK, 0.2, 1.5, 0.01, "", {"vgprs": 64, "spread": 0.03})
    wrong = built.timed(TaskResult("k", "ok", Measurement(Outcome.WRONG_RESULT, 0.2, None, 0.01, "err")))
    assert wrong.time_ms is None and wrong.compile_s == 1.5
    hung = built.timed(TaskResult("k", "timeout", None, "killed after 60 s", 60.0))
    assert hung == Measurement(Outcome.RUNTIME_FAILED, None, 1.5, 60.0, "timer timeout: killed after 60 s",
                               {"vgprs": 64, "spread": None})
