"""Acceptance: the stress run (issue 16): the sustained rate against a known-good sustained figure,
the run's length against the profile's, and the probe's per-GPU checks (recomputed by
harness.analysis.stress from the raw buckets, samples, events and counters) held to zero faults."""

from __future__ import annotations

from typing import Any

from harness.analysis.stress.declared import SUSTAINED_GEMM
from harness.analysis.stress.view import DeviceFigures, StressFigures
from harness.analysis.units import number_or_none
from harness.analysis.verdict import Verdict
from harness.judge.acceptance.criteria import Judging, at_least, fmt, share_threshold
from harness.judge.acceptance.profile import Profile
from harness.judge.engine import Criterion, Result, Value
from harness.judge.facts import BundleFacts

STEP = "stress"
# The known-good figure the sustained rate is a share of (the registry's stress entry brings it).


def _who(stress: StressFigures, device: DeviceFigures) -> str:
    return f"GPU{device.index}" if stress.device == "cuda" else "CPU"


def sustained(facts: BundleFacts, profile: Profile) -> list[Result]:
    stress = facts.viewed(STEP, StressFigures.from_headlines)
    dtype = stress.dtype if stress is not None else "bf16"
    name = f"stress_sustained_{dtype}"
    title = f"Sustained {dtype} GEMM (steady state of the stress run) reaches the stated share of a known-good unit"
    evidence = (
        f"{facts.output(STEP)} devices[].gemm.buckets (steady state: median of the second half, "
        "recomputed by harness.analysis.stress), lowest over the GPUs"
    )
    judging = Judging(name, title, evidence)
    share, reference = profile.threshold("stress_sustained_min_share"), profile.known(SUSTAINED_GEMM).get(dtype)
    threshold = (
        share_threshold(share, reference, "TFLOPS", f"{dtype} sustained", f"{dtype} GEMM sustained (stress)")
        if share and reference
        else None
    )
    if stress is None:
        return [judging.incomplete(facts.figures(STEP).why or "", threshold=threshold)]
    if threshold is None or reference is None:  # (no threshold without a reference)
        return [
            judging.incomplete(
                f"the profile for {profile.sku_id} states no "
                + (
                    "stress_sustained_min_share"
                    if not share
                    else f"known-good sustained {dtype} GEMM (known_good.gemm_sustained_tflops.{dtype})"
                )
            )
        ]
    lowest = stress.min_steady_tflops
    if lowest is None:
        return [
            judging.failed(
                "the stress step completed but no GPU reached a steady state",
                Value(None, "TFLOPS", "no steady rate"),
                threshold,
            )
        ]
    rates = ", ".join(
        f"{_who(stress, d)} {fmt(d.steady_tflops)}" for d in stress.devices if d.steady_tflops is not None
    )
    value = Value(
        lowest,
        "TFLOPS",
        f"{fmt(lowest)} TFLOPS lowest steady ({rates}; {fmt(stress.seconds)} s run), "
        f"{lowest / reference.value:.1%} of known-good sustained",
    )
    return [at_least(name, title, value, threshold, evidence)]


def duration(facts: BundleFacts, profile: Profile) -> list[Result]:
    name, title = "stress_duration", "The stress run lasted at least as long as the profile asks"
    evidence = f"{facts.output(STEP)} settings.seconds"
    judging = Judging(name, title, evidence)
    wanted = number_or_none(profile.threshold("stress_min_seconds"))
    threshold = (
        Value(wanted, "s", f"a GEMM phase of at least {fmt(wanted)} s (dossier run --stress-seconds {fmt(wanted)})")
        if wanted is not None
        else None
    )
    stress = facts.viewed(STEP, StressFigures.from_headlines)
    if stress is None:
        return [judging.incomplete(facts.figures(STEP).why or "", threshold=threshold)]
    if threshold is None or wanted is None:  # (no threshold without a number)
        return [judging.incomplete(f"the profile for {profile.sku_id} states no stress_min_seconds")]
    seconds = stress.seconds
    ok = seconds >= wanted
    return [
        judging.judged(
            ok,
            f"{fmt(seconds)} s is {'at least' if ok else 'shorter than'} {fmt(wanted)} s"
            + ("" if ok else f": run `dossier run --stress-seconds {fmt(wanted)}`"),
            Value(seconds, "s", f"{fmt(seconds)} s"),
            threshold,
        )
    ]


def _from_checks(
    facts: BundleFacts, name: str, title: str, checks: tuple[str, ...], fields: str, measure, threshold: Value
) -> list[Result]:
    """A criterion that is one or more of the stress analysis' per-device checks, on every GPU."""
    evidence = f"{facts.output(STEP)} {fields} (checks recomputed by harness.analysis.stress)"
    judging = Judging(name, title, evidence)
    stress = facts.viewed(STEP, StressFigures.from_headlines)
    if stress is None:
        return [judging.incomplete(facts.figures(STEP).why or "", threshold=threshold)]
    if not stress.devices:
        return [judging.failed("no device was stressed", threshold=threshold)]
    judged = [(f"{_who(stress, d)}: {c.name}", c) for d in stress.devices for c in d.checks if c.name in checks]
    failed = [f"{who}: {c.evidence}" for who, c in judged if c.status == Verdict.FAIL]
    unmeasured = [f"{who}: {c.evidence}" for who, c in judged if c.status != Verdict.PASS and c.status != Verdict.FAIL]
    measured = measure(stress.values)
    if failed:
        return [judging.failed("; ".join(failed), measured, threshold)]
    if unmeasured or not judged:
        return [judging.incomplete("; ".join(unmeasured) or "no check recorded", measured, threshold)]
    return [judging.passed("; ".join(f"{who}: {c.evidence}" for who, c in judged), measured, threshold)]


def _total(heads: dict[str, Any], read) -> int | None:
    values = [read(d) for d in heads["devices"]]
    return sum(values) if values and all(v is not None for v in values) else None


def _count(value: int | None, unit: str) -> Value:
    return Value(value, unit, f"{value} {unit} over all GPUs" if value is not None else "not counted on every GPU")


def result_mismatches_zero(facts: BundleFacts, profile: Profile) -> list[Result]:
    def measure(heads):
        return _count(
            _total(
                heads,
                lambda d: d["result_check"]["mismatched_elements"] if d["result_check"]["iterations_checked"] else None,
            ),
            "elements",
        )

    return _from_checks(
        facts,
        "stress_result_mismatches_zero",
        "Every GEMM result of the stress run matched the reference bit for bit",
        ("result_check",),
        "devices[].gemm.buckets[].figures.mismatched_elements, failing iterations",
        measure,
        Value(0, "elements", "0 mismatched elements (tolerance 0 bits)"),
    )


def memory_errors_zero(facts: BundleFacts, profile: Profile) -> list[Result]:
    def measure(heads):
        return _count(
            _total(heads, lambda d: d["memory_test"]["mismatched_words"] if d["memory_test"] else None), "words"
        )

    return _from_checks(
        facts,
        "stress_memory_errors_zero",
        "The stress run's memory test read back every word written",
        ("memory_test",),
        "devices[].memory_test.patterns[].mismatched_words_per_chunk",
        measure,
        Value(0, "words", "0 mismatched 64-bit words"),
    )


def no_new_errors(facts: BundleFacts, profile: Profile) -> list[Result]:
    def measure(heads):
        return _count(_total(heads, lambda d: d["nvml_events"]["events"] if d["nvml_events"] else None), "events")

    return _from_checks(
        facts,
        "stress_no_new_errors",
        "No XID or ECC event, no new uncorrectable ECC error or row remap during the stress run",
        ("nvml_events", "ecc_and_row_remap"),
        "devices[].nvml_events, devices[].counters_before and counters_after",
        measure,
        Value(0, "events", "0 XID/ECC events, 0 new uncorrected errors and remapped rows, no remap pending or failed"),
    )


def no_slowdown_events(facts: BundleFacts, profile: Profile) -> list[Result]:
    def measure(heads):
        flagged = sorted({r for d in heads["devices"] for r in d["flagged_reasons"]})
        return Value(len(flagged), "reasons", ", ".join(flagged) or "none (sw_power_cap is expected, not counted)")

    return _from_checks(
        facts,
        "stress_no_slowdown_events",
        "No HW slowdown, thermal slowdown or power-brake sample under the stress load",
        ("clock_event_reasons",),
        "devices[].telemetry.samples[].clock_event_reasons_mask",
        measure,
        Value(0, "reasons", "no hw_slowdown, sw/hw thermal slowdown or power brake"),
    )


def power_target_reached(facts: BundleFacts, profile: Profile) -> list[Result]:
    """The lowest maximum power / enforced limit over the GPUs, held to the profile's share."""
    name, title = "stress_power_target_reached", "Every GPU reached its power target under the stress load"
    evidence = (
        f"{facts.output(STEP)} devices[].telemetry.samples[].power_average_w, devices[].power_limit_w "
        "(recomputed by harness.analysis.stress)"
    )
    judging = Judging(name, title, evidence)
    share = number_or_none(profile.threshold("stress_power_target_min_share"))
    threshold = (
        Value(
            share,
            "fraction",
            f"maximum board power at least {share:g} of the enforced limit on every "
            "GPU, the statistic DCGM's targeted power judges",
        )
        if share
        else None
    )
    stress = facts.viewed(STEP, StressFigures.from_headlines)
    if stress is None:
        return [judging.incomplete(facts.figures(STEP).why or "", threshold=threshold)]
    if threshold is None:
        return [judging.incomplete(f"the profile for {profile.sku_id} states no stress_power_target_min_share")]
    devices = stress.devices
    shares = [d.power_max_fraction for d in devices if d.power_max_fraction is not None]
    if not devices or len(shares) != len(devices):
        unread = "; ".join(f"{_who(stress, d)}: {d.power_why}" for d in devices if d.power_max_fraction is None)
        return [judging.incomplete(unread or "no device was stressed", threshold=threshold)]
    lowest = min(shares)
    value = Value(lowest, "fraction", f"lowest maximum power / enforced limit over the GPUs: {lowest:.1%}")
    return [at_least(name, title, value, threshold, evidence)]


def _criterion(name: str, title: str, judge) -> Criterion:
    return Criterion(name, title, (STEP,), judge)


CRITERIA = (
    _criterion("stress_sustained", "Sustained GEMM reaches the stated share of a known-good unit", sustained),
    _criterion("stress_duration", "The stress run lasted as long as the profile asks", duration),
    _criterion("stress_result_mismatches_zero", "Every stress GEMM result matched", result_mismatches_zero),
    _criterion("stress_memory_errors_zero", "The memory test found no error", memory_errors_zero),
    _criterion("stress_no_new_errors", "No XID, ECC or row-remap event", no_new_errors),
    _criterion("stress_no_slowdown_events", "No HW slowdown, thermal or power-brake event", no_slowdown_events),
    _criterion("stress_power_target_reached", "Power target reached", power_target_reached),
)
