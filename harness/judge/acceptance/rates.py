"""Acceptance: the measured rates (memory bandwidth, its repeats, GEMM per dtype, all-reduce bus
bandwidth) against the stated share of a known-good unit's figure."""

from __future__ import annotations

from dataclasses import replace

from harness.analysis import repeatability
from harness.analysis.allreduce.declared import ALLREDUCE_KNOWN_GOOD
from harness.analysis.bandwidth import figures as bandwidth_rules
from harness.analysis.bandwidth.declared import HBM_KNOWN_GOOD
from harness.analysis.bandwidth.view import BandwidthFigures
from harness.analysis.roofline import figures as roofline_figures
from harness.analysis.roofline.declared import GEMM_KNOWN_GOOD
from harness.analysis.units import number_or_none
from harness.judge.acceptance.criteria import Judging, at_least, fmt, share_threshold
from harness.judge.acceptance.profile import Profile
from harness.judge.engine import Criterion, Result, Value
from harness.judge.facts import BundleFacts

DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32", "fp64", "int8")  # the order rows appear in


def bandwidth_plateau(facts: BundleFacts, profile: Profile) -> list[Result]:
    name = "bandwidth_plateau"
    title = "Memory bandwidth (sustained plateau) reaches the stated share of a known-good unit"
    evidence = (
        f"{facts.output('bandwidth')} sweep[].iteration_times_s and bytes_per_iteration "
        "(plateau recomputed by harness.analysis.bandwidth)"
    )
    judging = Judging(name, title, evidence)
    b = facts.viewed("bandwidth", BandwidthFigures.from_headlines)
    if b is None:
        return [judging.incomplete(facts.figures("bandwidth").why)]
    kernel, share = b.kernel, profile.threshold("bandwidth_plateau_min_share")
    reference = profile.known(HBM_KNOWN_GOOD).get(kernel)
    if share is None or reference is None:
        missing = "no bandwidth_plateau_min_share" if share is None else f"no known-good {kernel} bandwidth"
        return [judging.incomplete(f"the profile for {profile.sku_id} states {missing}; a profile file can add it")]
    threshold = share_threshold(share, reference, "GB/s", f"{kernel} kernel", f"memory bandwidth, {kernel} plateau")
    plateau = b.plateau_gbps
    if plateau is None:
        document = facts.document("bandwidth") or {}
        why = (document.get("plateau") or {}).get("why", "no plateau")
        return [
            judging.failed(f"the sweep reached no plateau: {why}", Value(None, "GB/s", "no plateau reached"), threshold)
        ]
    sizes = ", ".join(f"{s:g}" for s in b.plateau_sizes_mib)
    measured = Value(
        plateau,
        "GB/s",
        f"{fmt(plateau)} GB/s ({kernel} kernel on {b.device}, "
        f"median of the plateau at {sizes} MiB), {plateau / reference.value:.1%} "
        "of known-good",
    )
    return [
        noise_said(
            facts,
            "bandwidth.plateau_gbps",
            at_least(
                name,
                title,
                measured,
                threshold,
                evidence,
                ok=bandwidth_rules.meets_known_good_floor(plateau, reference.value, share),
                source=bandwidth_rules.KNOWN_GOOD_FLOOR_SOURCE,
            ),
        )
    ]


def noise_said(facts: BundleFacts, figure_id: str, result: Result) -> Result:
    """RESULT, its why saying so when the bundle declares FIGURE_ID noisy (commands.json repeatability)."""
    note = repeatability.noisy_note(facts.view.commands.get("repeatability"), figure_id)
    return replace(result, why=result.why + note) if note else result


def repeat_spread(facts: BundleFacts, profile: Profile) -> list[Result]:
    name = "repeat_spread"
    title = "Three repeated large-buffer bandwidth runs agree (the figure can be trusted)"
    evidence = f"{facts.output('bandwidth')} repeats.runs[].iteration_times_s (medians recomputed)"
    judging = Judging(name, title, evidence)
    limit = profile.threshold("repeat_spread_max")
    threshold = (
        Value(limit, "fraction", f"under {limit:.0%} ((max - min) / median of the repeat medians)")
        if limit is not None
        else None
    )
    b = facts.viewed("bandwidth", BandwidthFigures.from_headlines)
    if b is None:
        return [judging.incomplete(facts.figures("bandwidth").why, threshold=threshold)]
    if limit is None:
        return [judging.incomplete(f"the profile for {profile.sku_id} states no repeat_spread_max")]
    spread, medians = b.repeat_spread, b.repeat_medians_gbps
    if spread is None or len(medians) < 2:
        return [
            judging.failed(
                "fewer than two repeats were recorded, so their agreement cannot be shown",
                Value(None, "fraction", f"{len(medians)} repeat(s)"),
                threshold,
            )
        ]
    measured = Value(
        spread,
        "fraction",
        f"{spread:.2%} across {len(medians)} repeats at "
        f"{b.repeat_size_mib:g} MiB "
        f"({', '.join(fmt(m) for m in medians)} GB/s)",
    )
    ok = bandwidth_rules.repeats_agree(spread, limit)
    return [
        judging.judged(ok, f"spread {spread:.2%} is {'under' if ok else 'not under'} {limit:.0%}", measured, threshold)
    ]


def gemm(facts: BundleFacts, profile: Profile) -> list[Result]:
    """One result per dtype the profile has a share for and that was measured or has a known-good. A
    dtype's figures come from the roofline step (its own dtype and its dtype_checks) or, in bundles
    before format 5, from a roofline step of its own (roofline-fp8, ...)."""
    shares = profile.threshold("gemm_min_share") or {}
    rooflines = facts.figures_by_analysis("roofline")
    measured: dict[str, tuple[str, dict]] = {}
    for figures in rooflines:
        document = facts.document(figures.step)
        if figures.present and document is not None:
            for dtype, values in roofline_figures.dtype_headlines(document).items():
                measured.setdefault(dtype, (figures.step, values))
    absent_why = "; ".join(f.why for f in rooflines if not f.present) or facts.step_why("roofline")
    results = []
    for dtype in DTYPES:
        if dtype not in shares or (dtype not in measured and dtype not in profile.known(GEMM_KNOWN_GOOD)):
            continue
        results.append(
            _gemm_one(
                dtype, shares[dtype], measured.get(dtype), sorted(d for d in measured if d), absent_why, profile, facts
            )
        )
    return results


def _gemm_one(dtype, share, found, measured_dtypes, absent_why, profile, facts) -> Result:
    name = f"gemm_{dtype}"
    title = f"Dense matrix multiply burst ({dtype}, short timed windows) reaches the stated share of a known-good unit"
    step, values = found if found else ("roofline", None)
    where = "" if values is None or (facts.document(step) or {}).get("dtype") == dtype else f"dtype_checks[{dtype}] "
    evidence = (
        f"{facts.output(step)} {where}measurements[].windows (times_s before format 5) with the shapes' "
        "FLOP counts (burst best recomputed by harness.analysis.roofline)"
    )
    judging = Judging(name, title, evidence)
    reference = profile.known(GEMM_KNOWN_GOOD).get(dtype)
    threshold = share_threshold(share, reference, "TFLOPS", dtype, f"{dtype} GEMM burst") if reference else None
    if values is None:
        why = f"the roofline measured {', '.join(measured_dtypes)} only" if measured_dtypes else absent_why
        return judging.incomplete(why, threshold=threshold)
    if reference is None or threshold is None:  # (a reference always gives a threshold)
        return judging.incomplete(
            f"the profile for {profile.sku_id} has no known-good {dtype} GEMM figure; a profile "
            f"file can add known_good.gemm_tflops.{dtype}"
        )
    best = number_or_none(values.get("burst_best_tflops"))
    if best is None:
        return judging.failed(
            f"the roofline step completed but timed no {dtype} GEMM of its burst-best shapes",
            Value(None, "TFLOPS", "no GEMM timed"),
            threshold,
        )
    value = Value(
        best,
        "TFLOPS",
        f"{fmt(best)} TFLOPS burst best ({values.get('best_shape')}, on "
        f"{values.get('device')}{burst_conditions(values)}), "
        f"{best / reference.value:.1%} of known-good",
    )
    return noise_said(facts, f"roofline.{dtype}.burst_best_tflops", at_least(name, title, value, threshold, evidence))


def burst_conditions(heads: dict) -> str:
    """ ", 3 windows of 20 ms at 1965 MHz, power cap not flagged": how the roofline's best burst was timed."""
    window = heads.get("burst_best_window")
    if not isinstance(window, dict) or number_or_none(window.get("window_ms")) is None:
        return ""
    clock = number_or_none(window.get("sm_clock_mhz"))
    cap = window.get("power_cap")
    cap_text = cap if isinstance(cap, str) else f"state unknown ({(cap or {}).get('unavailable')})"
    count = window.get("windows")
    what = (
        f"{count} windows of {fmt(window['window_ms'])} ms"
        if isinstance(count, int)
        else f"a {fmt(window['window_ms'])} ms window"
    )
    return f", {what}" + (f" at {fmt(clock)} MHz" if clock is not None else "") + f", power cap {cap_text}"


def allreduce_busbw(facts: BundleFacts, profile: Profile) -> list[Result]:
    name = "allreduce_busbw"
    title = "GPU-to-GPU all-reduce bus bandwidth reaches the stated share of a known-good system"
    a = facts.figures("allreduce")
    evidence = (
        f"{facts.output('allreduce')} runs[].points[] per-rank medians "
        "(busbw_at_max_gbps of the normal curve recomputed by harness.analysis.allreduce)"
    )
    judging = Judging(name, title, evidence)
    if a.values is None:
        return [judging.incomplete(a.why)]
    backend, world = a.values.get("backend"), a.values.get("world_size")
    curve = (a.values.get("curves") or {}).get("normal") or {}
    busbw = number_or_none(curve.get("busbw_at_max_gbps"))
    limits = "; ".join(str(x) for x in a.values.get("limitations") or [])
    if backend != "nccl":
        return [
            judging.incomplete(
                f"all-reduce ran over {backend} (not NCCL on the GPUs), so it says nothing about the GPU "
                f"interconnect" + (f"; recorded limitations: {limits}" if limits else "")
            )
        ]
    if busbw is None:
        return [judging.incomplete("no bus bandwidth was measured" + (f": {limits}" if limits else ""))]
    share, reference = profile.threshold("allreduce_busbw_min_share"), profile.known(ALLREDUCE_KNOWN_GOOD).get(world)
    measured = Value(busbw, "GB/s", f"{fmt(busbw)} GB/s bus bandwidth at the largest message, {world} GPUs, NCCL")
    if share is None or reference is None:
        missing = "no allreduce_busbw_min_share" if share is None else f"no known-good bus bandwidth for {world} GPUs"
        return [
            judging.incomplete(
                f"measured, but the profile for {profile.sku_id} states {missing}; a profile file can add it", measured
            )
        ]
    threshold = share_threshold(share, reference, "GB/s", f"{world} GPUs", f"all-reduce bus bandwidth, {world} GPUs")
    return [at_least(name, title, measured, threshold, evidence)]


BANDWIDTH_PLATEAU = Criterion(
    "bandwidth_plateau",
    "Memory bandwidth (sustained plateau) reaches the stated share of a known-good unit",
    ("bandwidth",),
    bandwidth_plateau,
)
REPEAT_SPREAD = Criterion(
    "repeat_spread", "Three repeated large-buffer bandwidth runs agree", ("bandwidth",), repeat_spread
)
GEMM = Criterion(
    "gemm", "Dense matrix multiply burst reaches the stated share of a known-good unit", ("roofline",), gemm
)
ALLREDUCE_BUSBW = Criterion(
    "allreduce_busbw",
    "GPU-to-GPU all-reduce bus bandwidth reaches the stated share of a known-good system",
    ("allreduce",),
    allreduce_busbw,
)
