"""The report's stress criterion (beyond lab M1): under a sustained load on every GPU at once, every
GEMM result matches the reference bit for bit and nothing faults. Its evidence is the stress
analysis's verdict, recomputed from the raw buckets, samples and events (harness.analysis.stress);
the thresholds a buyer holds a card to (sustained rate, run length) are acceptance's."""

from __future__ import annotations

from typing import Any

from harness.analysis.stress.view import StressFigures
from harness.analysis.verdict import Verdict
from harness.judge.engine import Criterion, Result
from harness.judge.facts import BundleFacts
from harness.judge.lab import prerequisite, result

STEP = "stress"
TEXT = (
    "Beyond lab M1, stress: under a sustained GEMM load on every GPU at once every result matches the "
    "reference bit for bit, the memory test finds no error, and no XID, ECC, row-remap, hardware-slowdown, "
    "thermal or power-brake event occurs"
)


def judge_stress(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    values, early, why = prerequisite(facts, STEP)
    if early:
        return result(STEP, TEXT, early, why, (STEP,))
    heads = StressFigures.from_headlines(values)
    steady = heads.min_steady_tflops
    rate = f", steady {steady:.4g} TFLOPS" if steady is not None else ""
    shape = "x".join(str(heads.shape[d]) for d in "mnk")
    lowest = f"; the lowest steady rate was {steady:.4g} TFLOPS" if steady is not None else ""
    findings = [
        f"A {heads.dtype} GEMM of {shape} ran back to back for {heads.seconds:g} s on "
        f"{heads.device_count} {'GPU' if heads.device == 'cuda' else 'device'}(s) at once{lowest}."
    ]
    findings += [f"Failed: {failure}." for failure in heads.failures]
    missing = list(heads.not_measured)
    if missing:
        findings.append(f"Not measured: {', '.join(missing)}" + (" (no NVML on a CPU)." if heads.on_cpu else "."))
    if heads.status == Verdict.FAIL:
        return result(STEP, TEXT, Verdict.FAIL, findings, (STEP,), why="; ".join(heads.failures))
    if missing and not heads.on_cpu:
        return result(
            STEP,
            TEXT,
            Verdict.INCOMPLETE,
            findings,
            (STEP,),
            why=f"no check failed, but {', '.join(missing)} could not be measured",
        )
    checked = "every result bit-exact, memory test clean" + (
        f"; on a CPU, {', '.join(missing)} do not apply" if missing else ", no fault event"
    )
    return result(STEP, TEXT, Verdict.PASS, findings, (STEP,), why=f"{heads.device_count} device(s){rate}: {checked}")


STRESS = Criterion(STEP, TEXT, (STEP,), judge_stress, "Stress (every result bit-exact, no fault)")
