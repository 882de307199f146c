"""The acceptance criteria: small functions of a verified bundle's facts and a profile.

Each gives one or more `Result`s: pass, fail or not-measured, the measured value with its unit,
the threshold, the evidence (which raw JSON fields it comes from) and why. A criterion whose
input is absent is not-measured, with the reason; `judge` then fails the ones the profile
requires.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from harness import catalogue
from harness.acceptance.profile import Profile
from harness.analysis import bandwidth as bandwidth_rules
from harness.analysis import health_contracts as contracts
from harness.analysis.health_diff import load_window_samples, unexpected_processes
from harness.analysis.verdict import Verdict
from harness.judge import engine
from harness.judge.engine import Criterion, Result, Value
from harness.judge.facts import BundleFacts

DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32", "fp64", "int8")  # the order rows appear in


def _num(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _fmt(value: float, digits: int = 4) -> str:
    return f"{value:.{digits}g}" if abs(value) < 10 ** digits else f"{value:.0f}"


def _share_threshold(share: float, reference, unit: str, what: str) -> Value:
    floor = share * reference.value
    return Value(floor, unit, f"at least {share:.0%} of the known-good {_fmt(reference.value)} {unit} "
                             f"({what}) = {_fmt(floor)} {unit}")


# --- identity -------------------------------------------------------------------------------

def sku_matches_profile(facts: BundleFacts, profile: Profile) -> list[Result]:
    name, title = "sku_matches_profile", f"The GPUs are the SKU being bought: {profile.name} ({profile.form_factor})"
    threshold = Value(profile.sku_id, "SKU id", f"every GPU identified as {profile.sku_id}")
    health = facts.figures("health")
    if health.present:
        devices = health.values.get("devices") or []
        evidence = (f"{facts.output('health')} devices[].pci_device_id, memory_total_mib, "
                    "power.default_limit_w (re-identified with the catalogue)")
        found = [(f"GPU{d.get('index')} {d.get('name')}", d.get("sku_id")) for d in devices]
    else:
        bandwidth = facts.figures("bandwidth")
        if not bandwidth.present:
            return [Result(name, title, Verdict.NOT_MEASURED, None, threshold, "raw/health.json devices[]",
                           f"{health.why}; {bandwidth.why}")]
        evidence = f"{facts.output('bandwidth')} reference.sku_id (health did not complete: {health.why})"
        found = [(f"the {bandwidth.values.get('device')} device", bandwidth.values.get("sku_id"))]
    if not found:
        return [Result(name, title, Verdict.FAIL, Value(None, "SKU id", "no GPU"), threshold, evidence,
                       "the bundle lists no GPU: it was not measured on the hardware being bought")]
    measured = Value(", ".join(sorted({str(s) for _, s in found})), "SKU id",
                     "; ".join(f"{label}: {sku or 'not identified'}" for label, sku in found))
    wrong = [(label, sku) for label, sku in found if sku != profile.sku_id]
    if not wrong:
        return [Result(name, title, Verdict.PASS, measured, threshold, evidence, f"{len(found)} GPU(s), all {profile.sku_id}")]
    reasons = []
    for label, sku in wrong:
        _, why = catalogue.comparable(sku, profile.sku_id)
        reasons.append(f"{label}: {why}" if sku else f"{label}: not identified as any catalogue SKU")
    return [Result(name, title, Verdict.FAIL, measured, threshold, evidence, "; ".join(reasons))]


# --- memory bandwidth -----------------------------------------------------------------------

def bandwidth_plateau(facts: BundleFacts, profile: Profile) -> list[Result]:
    name = "bandwidth_plateau"
    title = "Memory bandwidth (sustained plateau) reaches the stated share of a known-good unit"
    b = facts.figures("bandwidth")
    evidence = (f"{facts.output('bandwidth')} sweep[].iteration_times_s and bytes_per_iteration "
                "(plateau recomputed by harness.analysis.bandwidth)")
    if not b.present:
        return [Result(name, title, Verdict.NOT_MEASURED, None, None, evidence, b.why)]
    kernel, share = b.values.get("kernel"), profile.threshold("bandwidth_plateau_min_share")
    reference = profile.hbm_known_good.get(kernel)
    if share is None or reference is None:
        missing = "no bandwidth_plateau_min_share" if share is None else f"no known-good {kernel} bandwidth"
        return [Result(name, title, Verdict.NOT_MEASURED, None, None, evidence,
                       f"the profile for {profile.sku_id} states {missing}; a profile file can add it")]
    threshold = _share_threshold(share, reference, "GB/s", f"{kernel} kernel")
    plateau = _num(b.values.get("plateau_gbps"))
    if plateau is None:
        document = facts.document("bandwidth") or {}
        why = (document.get("plateau") or {}).get("why", "no plateau")
        return [Result(name, title, Verdict.FAIL, Value(None, "GB/s", "no plateau reached"), threshold, evidence,
                       f"the sweep reached no plateau: {why}")]
    sizes = ", ".join(f"{s:g}" for s in b.values.get("plateau_sizes_mib") or [])
    measured = Value(plateau, "GB/s", f"{_fmt(plateau)} GB/s ({kernel} kernel on {b.values.get('device')}, "
                                      f"median of the plateau at {sizes} MiB), {plateau / reference.value:.1%} "
                                      "of known-good")
    ok = bandwidth_rules.meets_known_good_floor(plateau, reference.value, share)
    return [Result(name, title, Verdict.PASS if ok else Verdict.FAIL, measured, threshold, evidence,
                   f"{_fmt(plateau)} GB/s is {'at or above' if ok else 'below'} {_fmt(threshold.value)} GB/s "
                   f"({bandwidth_rules.KNOWN_GOOD_FLOOR_SOURCE})")]


def repeat_spread(facts: BundleFacts, profile: Profile) -> list[Result]:
    name = "repeat_spread"
    title = "Three repeated large-buffer bandwidth runs agree (the figure can be trusted)"
    b = facts.figures("bandwidth")
    evidence = f"{facts.output('bandwidth')} repeats.runs[].iteration_times_s (medians recomputed)"
    limit = profile.threshold("repeat_spread_max")
    threshold = (Value(limit, "fraction", f"under {limit:.0%} ((max - min) / median of the repeat medians)")
                 if limit is not None else None)
    if not b.present:
        return [Result(name, title, Verdict.NOT_MEASURED, None, threshold, evidence, b.why)]
    if limit is None:
        return [Result(name, title, Verdict.NOT_MEASURED, None, None, evidence,
                       f"the profile for {profile.sku_id} states no repeat_spread_max")]
    spread, medians = _num(b.values.get("repeat_spread")), b.values.get("repeat_medians_gbps") or []
    if spread is None or len(medians) < 2:
        return [Result(name, title, Verdict.FAIL, Value(None, "fraction", f"{len(medians)} repeat(s)"), threshold, evidence,
                       "fewer than two repeats were recorded, so their agreement cannot be shown")]
    measured = Value(spread, "fraction", f"{spread:.2%} across {len(medians)} repeats at "
                                         f"{b.values.get('repeat_size_mib'):g} MiB "
                                         f"({', '.join(_fmt(m) for m in medians)} GB/s)")
    ok = bandwidth_rules.repeats_agree(spread, limit)
    return [Result(name, title, Verdict.PASS if ok else Verdict.FAIL, measured, threshold, evidence,
                   f"spread {spread:.2%} is {'under' if ok else 'not under'} {limit:.0%}")]


# --- GEMM ---------------------------------------------------------------------------------

def gemm(facts: BundleFacts, profile: Profile) -> list[Result]:
    """One result per dtype the profile has a share for and that was measured or has a known-good."""
    shares = profile.threshold("gemm_min_share") or {}
    rooflines = facts.figures_by_analysis("roofline")
    measured = {f.values.get("dtype"): f for f in rooflines if f.present}
    absent_why = ("; ".join(f.why for f in rooflines if not f.present) or facts.step_why("roofline"))
    results = []
    for dtype in DTYPES:
        if dtype not in shares or (dtype not in measured and dtype not in profile.gemm_known_good):
            continue
        results.append(_gemm_one(dtype, shares[dtype], measured.get(dtype), sorted(d for d in measured if d),
                                 absent_why, profile, facts))
    return results


def _gemm_one(dtype, share, figures, measured_dtypes, absent_why, profile, facts) -> Result:
    name, title = f"gemm_{dtype}", f"Dense matrix multiply ({dtype}) reaches the stated share of a known-good unit"
    step = figures.step if figures else "roofline"
    evidence = (f"{facts.output(step)} measurements[].median_s with the shapes' FLOP counts "
                "(best recomputed by harness.analysis.roofline)")
    reference = profile.gemm_known_good.get(dtype)
    threshold = _share_threshold(share, reference, "TFLOPS", dtype) if reference else None
    if figures is None:
        why = (f"the roofline measured {', '.join(measured_dtypes)} only" if measured_dtypes else absent_why)
        return Result(name, title, Verdict.NOT_MEASURED, None, threshold, evidence, why)
    if reference is None:
        return Result(name, title, Verdict.NOT_MEASURED, None, None, evidence,
                      f"the profile for {profile.sku_id} has no known-good {dtype} GEMM figure; a profile "
                      f"file can add known_good.gemm_tflops.{dtype}")
    best = _num(figures.values.get("best_tflops"))
    if best is None:
        return Result(name, title, Verdict.FAIL, Value(None, "TFLOPS", "no GEMM timed"), threshold, evidence,
                      "the roofline step completed but timed no GEMM")
    value = Value(best, "TFLOPS", f"{_fmt(best)} TFLOPS best ({figures.values.get('best_shape')}, on "
                                  f"{figures.values.get('device')}), {best / reference.value:.1%} of known-good")
    ok = best >= threshold.value
    return Result(name, title, Verdict.PASS if ok else Verdict.FAIL, value, threshold, evidence,
                  f"{_fmt(best)} TFLOPS is {'at or above' if ok else 'below'} {_fmt(threshold.value)} TFLOPS")


# --- memory health (ECC, row remapping) -----------------------------------------------------

def _health_documents(facts: BundleFacts) -> list[tuple[str, dict[str, Any]]]:
    return [(step, doc) for step in ("health", "health-load") if (doc := facts.document(step)) is not None]


def _gpus(document: dict[str, Any]) -> list[dict[str, Any]]:
    devices, _ = contracts.gpus(document)
    return devices


def _contract_result(facts: BundleFacts, name: str, title: str, contract: Callable, fields: str,
                     measure: Callable[[list[tuple[str, dict]]], Value], threshold: Value) -> list[Result]:
    """A criterion that is a health contract re-judged on the idle and the under-load document."""
    documents = _health_documents(facts)
    evidence = " and ".join(f"{facts.output(step)} devices[].{fields}" for step, _ in documents) or \
        f"raw/health.json devices[].{fields}"
    if not documents:
        return [Result(name, title, Verdict.NOT_MEASURED, None, threshold, evidence,
                       f"{facts.step_why('health')}; {facts.step_why('health-load')}")]
    judged = [(step, contract(doc)) for step, doc in documents]
    failed = [f"{step}: {c['evidence']}" for step, c in judged if c["status"] == Verdict.FAIL]
    passed = [f"{step}: {c['evidence']}" for step, c in judged if c["status"] == Verdict.PASS]
    measured = measure(documents)
    if failed:
        return [Result(name, title, Verdict.FAIL, measured, threshold, evidence, "; ".join(failed))]
    if not passed:
        return [Result(name, title, Verdict.NOT_MEASURED, None, threshold, evidence,
                       "; ".join(f"{step}: {c['evidence']}" for step, c in judged))]
    return [Result(name, title, Verdict.PASS, measured, threshold, evidence, "; ".join(passed))]


def _shown(value: Any) -> str:
    reason = contracts.unavailable_reason(value)
    return f"unavailable ({reason})" if reason else str(value).lower()


def _sum_counts(documents, keys) -> tuple[int | None, list[str]]:
    total, parts = 0, []
    for step, doc in documents:
        for device in _gpus(doc):
            ecc = device.get("ecc", {})
            values = [_num(ecc.get(k)) for k in keys]
            if any(v is None for v in values):
                return None, parts
            total = max(total, int(sum(values)))
            parts.append(f"GPU{device.get('nvml_index')} {step}: " + ", ".join(
                f"{k.replace('_', ' ')} {int(v)}" for k, v in zip(keys, values)))
    return total, parts


def ecc_uncorrectable_zero(facts: BundleFacts, profile: Profile) -> list[Result]:
    def measure(documents) -> Value:
        worst, parts = _sum_counts(documents, ("volatile_uncorrected_errors", "aggregate_uncorrected_errors"))
        return Value(worst, "errors", "; ".join(parts) if worst is not None else "counts unreadable")
    return _contract_result(
        facts, "ecc_uncorrectable_zero", "Memory has no uncorrectable ECC errors (and ECC is on)",
        contracts.ecc_enabled_no_uncorrectable,
        "ecc.mode_current, ecc.volatile_uncorrected_errors, ecc.aggregate_uncorrected_errors", measure,
        Value(0, "errors", "ECC enabled and 0 uncorrectable errors, volatile and aggregate, idle and under load"))


def row_remaps_clean(facts: BundleFacts, profile: Profile) -> list[Result]:
    def measure(documents) -> Value:
        bad, parts = 0, []
        for step, doc in documents:
            for device in _gpus(doc):
                ecc = device.get("ecc", {})
                pending, failure = ecc.get("remapped_rows_pending"), ecc.get("remapped_rows_failure")
                bad = max(bad, int(pending is True) + int(failure is True))
                parts.append(f"GPU{device.get('nvml_index')} {step}: pending {_shown(pending)}, "
                             f"failure {_shown(failure)}")
        return Value(bad, "rows pending or failed", "; ".join(parts))
    return _contract_result(
        facts, "row_remaps_clean", "No memory row remap is pending or has failed",
        contracts.no_pending_or_failed_row_remaps, "ecc.remapped_rows_pending, ecc.remapped_rows_failure",
        measure, Value(0, "rows pending or failed", "no pending and no failed row remap"))


# --- PCIe under load ----------------------------------------------------------------------

def pcie_link_at_max_under_load(facts: BundleFacts, profile: Profile) -> list[Result]:
    name = "pcie_link_at_max_under_load"
    title = "The host link (PCIe) runs at its full generation and width while working"
    gen, width = profile.threshold("pcie_min_generation"), profile.threshold("pcie_min_width")
    stated = f"; the SKU's Gen{gen} x{width}" if gen and width else ""
    threshold = Value(f"Gen{gen} x{width}" if gen and width else "link maximum", "PCIe generation x lanes",
                      f"current generation and width equal the link's maximum{stated}, read under load")
    evidence = f"{facts.output('health-load')} devices[].pcie.current_gen, max_gen, gpu_max_gen, current_width, max_width"
    document = facts.document("health-load")
    if document is None or not _gpus(document):
        why = facts.step_why("health-load") if document is None else \
            f"the under-load health lists no GPU: {contracts.gpus(document)[1]}"
        return [Result(name, title, Verdict.NOT_MEASURED, None, threshold, evidence, why + " (an idle reading cannot "
                       "tell: the driver lowers the link speed when idle)")]
    devices = _gpus(document)
    links = [(d, d.get("pcie", {})) for d in devices]
    measured = Value(", ".join(sorted({f"Gen{p.get('current_gen')} x{p.get('current_width')}" for _, p in links})),
                     "PCIe generation x lanes",
                     "; ".join(f"GPU{d.get('nvml_index')} Gen{p.get('current_gen')} x{p.get('current_width')} "
                               f"of Gen{p.get('max_gen')} x{p.get('max_width')}" for d, p in links))
    judged = contracts.pcie_link_at_max(document)
    problems = [judged["evidence"]] if judged["status"] != Verdict.PASS else []
    for d, p in links:
        if gen and isinstance(p.get("current_gen"), int) and p["current_gen"] < gen:
            problems.append(f"GPU{d.get('nvml_index')} runs Gen{p['current_gen']}, the SKU's host link is Gen{gen}")
        if width and isinstance(p.get("current_width"), int) and p["current_width"] < width:
            problems.append(f"GPU{d.get('nvml_index')} runs x{p['current_width']}, the SKU's host link is x{width}")
    if problems:
        return [Result(name, title, Verdict.FAIL, measured, threshold, evidence, "; ".join(problems))]
    return [Result(name, title, Verdict.PASS, measured, threshold, evidence, judged["evidence"] + " (under load)")]


# --- idle versus load (health-diff) ---------------------------------------------------------

def _diff_checks(facts: BundleFacts, check: str) -> tuple[list[dict[str, Any]] | None, str]:
    """The health-diff's CHECK entries (one per GPU), or None and why they are absent."""
    document = facts.document("health-diff")
    if document is None:
        return None, facts.step_why("health-diff")
    checks = [c for c in document.get("checks") or [] if isinstance(c, dict)]
    load_ran = next((c for c in checks if c.get("name") == "load_ran"), None)
    if load_ran and load_ran.get("status") != Verdict.PASS:
        return None, f"no load was observed: {load_ran.get('evidence')}"
    found = [c for c in checks if c.get("name") == check]
    return (found, "") if found else (None, f"derived/health-diff.json has no {check} check")


def _under_load_clock(facts: BundleFacts) -> list[tuple[str, float | None, float | None]]:
    idle, active = facts.document("health") or {}, facts.document("health-load") or {}
    idle_by_uuid = {d.get("uuid"): d for d in _gpus(idle)}
    rows = []
    for device in _gpus(active):
        before = idle_by_uuid.get(device.get("uuid"), {}).get("clocks", {}).get("sm_current_mhz")
        samples = [_num(s.get("sm_clock_mhz")) for s in load_window_samples(active, device.get("nvml_index"))]
        samples = [s for s in samples if s is not None]
        rows.append((f"GPU{device.get('nvml_index')}", _num(before), statistics.median(samples) if samples else
                     _num(device.get("clocks", {}).get("sm_current_mhz"))))
    return rows


def clocks_rise_under_load(facts: BundleFacts, profile: Profile) -> list[Result]:
    name, title = "clocks_rise_under_load", "GPU clocks rise from idle when work starts (not stuck low)"
    threshold = Value("rise", "MHz", "the SM clock under load (median of load samples) above the idle SM clock, every GPU")
    evidence = ("derived/health-diff.json checks[clocks_rose], from raw/health.json devices[].clocks.sm_current_mhz "
                "and raw/health-load.json load.devices[].samples[].sm_clock_mhz")
    checks, why = _diff_checks(facts, "clocks_rose")
    if checks is None:
        return [Result(name, title, Verdict.NOT_MEASURED, None, threshold, evidence, why)]
    rows = _under_load_clock(facts)
    under = [u for _, _, u in rows if u is not None]
    measured = Value(min(under) if under else None, "MHz", "; ".join(
        f"{label} idle {_fmt(i) if i is not None else '?'} MHz -> under load {_fmt(u) if u is not None else '?'} MHz"
        for label, i, u in rows))
    statuses = {c.get("status") for c in checks}
    detail = "; ".join(f"{c.get('device')}: {c.get('evidence')}" for c in checks)
    if Verdict.FAIL in statuses:
        return [Result(name, title, Verdict.FAIL, measured, threshold, evidence, detail)]
    if statuses != {Verdict.PASS}:
        return [Result(name, title, Verdict.NOT_MEASURED, measured, threshold, evidence, detail)]
    return [Result(name, title, Verdict.PASS, measured, threshold, evidence, detail)]


def _foreign_processes(facts: BundleFacts) -> list[str]:
    """Distinct processes, idle or under load, that the harness did not start (per GPU)."""
    idle, active = facts.document("health") or {}, facts.document("health-load") or {}
    found: list[str] = []
    for device in _gpus(active):
        uuid, label = device.get("uuid"), f"GPU{device.get('nvml_index')}"
        samples = load_window_samples(active, device.get("nvml_index"))
        for process in unexpected_processes(idle, uuid, []) + unexpected_processes(active, uuid, samples):
            if f"{label} {process}" not in found:
                found.append(f"{label} {process}")
    return found


def no_unexpected_process(facts: BundleFacts, profile: Profile) -> list[Result]:
    name, title = "no_unexpected_process", "Nothing else was running on the GPUs (idle or under load)"
    threshold = Value(0, "processes", "no process the harness did not start, idle or under load")
    evidence = ("derived/health-diff.json checks[no_unexpected_process], from raw/health.json devices[].processes "
                "and raw/health-load.json load.devices[].samples[].processes")
    checks, why = _diff_checks(facts, "no_unexpected_process")
    if checks is None:
        return [Result(name, title, Verdict.NOT_MEASURED, None, threshold, evidence, why)]
    failed = [c for c in checks if c.get("status") == Verdict.FAIL]
    foreign = _foreign_processes(facts)
    measured = Value(len(foreign), "processes", "; ".join(foreign) if foreign else
                     "only the harness's own processes were listed")
    if failed:
        return [Result(name, title, Verdict.FAIL, measured, threshold, evidence,
                       "; ".join(f"{c.get('device')}: {c.get('evidence')}" for c in failed))]
    return [Result(name, title, Verdict.PASS, measured, threshold, evidence, "every listed process was the harness's own")]


# --- all-reduce -----------------------------------------------------------------------------

def allreduce_busbw(facts: BundleFacts, profile: Profile) -> list[Result]:
    name = "allreduce_busbw"
    title = "GPU-to-GPU all-reduce bus bandwidth reaches the stated share of a known-good system"
    a = facts.figures("allreduce")
    evidence = (f"{facts.output('allreduce')} runs[].points[] per-rank medians "
                "(busbw_at_max_gbps of the normal curve recomputed by harness.analysis.allreduce)")
    if not a.present:
        return [Result(name, title, Verdict.NOT_MEASURED, None, None, evidence, a.why)]
    backend, world = a.values.get("backend"), a.values.get("world_size")
    curve = (a.values.get("curves") or {}).get("normal") or {}
    busbw = _num(curve.get("busbw_at_max_gbps"))
    limits = "; ".join(str(x) for x in a.values.get("limitations") or [])
    if backend != "nccl":
        return [Result(name, title, Verdict.NOT_MEASURED, None, None, evidence,
                       f"all-reduce ran over {backend} (not NCCL on the GPUs), so it says nothing about the GPU "
                       f"interconnect" + (f"; recorded limitations: {limits}" if limits else ""))]
    if busbw is None:
        return [Result(name, title, Verdict.NOT_MEASURED, None, None, evidence,
                       "no bus bandwidth was measured" + (f": {limits}" if limits else ""))]
    share, reference = profile.threshold("allreduce_busbw_min_share"), profile.allreduce_known_good.get(world)
    measured = Value(busbw, "GB/s", f"{_fmt(busbw)} GB/s bus bandwidth at the largest message, {world} GPUs, NCCL")
    if share is None or reference is None:
        missing = "no allreduce_busbw_min_share" if share is None else f"no known-good bus bandwidth for {world} GPUs"
        return [Result(name, title, Verdict.NOT_MEASURED, measured, None, evidence,
                       f"measured, but the profile for {profile.sku_id} states {missing}; a profile file can add it")]
    threshold = _share_threshold(share, reference, "GB/s", f"{world} GPUs")
    ok = busbw >= threshold.value
    return [Result(name, title, Verdict.PASS if ok else Verdict.FAIL, measured, threshold, evidence,
                   f"{_fmt(busbw)} GB/s is {'at or above' if ok else 'below'} {_fmt(threshold.value)} GB/s")]


# Each criterion once; the registry entries (harness/registry/) say which probe brings which, and
# harness.registry.acceptance_criteria() lists them in the order the run completes their evidence.
SKU_MATCHES_PROFILE = Criterion("sku_matches_profile", "The GPUs are the SKU being bought",
                                ("health", "bandwidth"), sku_matches_profile)
BANDWIDTH_PLATEAU = Criterion("bandwidth_plateau", "Memory bandwidth (sustained plateau) reaches the stated share "
                              "of a known-good unit", ("bandwidth",), bandwidth_plateau)
REPEAT_SPREAD = Criterion("repeat_spread", "Three repeated large-buffer bandwidth runs agree", ("bandwidth",),
                          repeat_spread)
GEMM = Criterion("gemm", "Dense matrix multiply reaches the stated share of a known-good unit", ("roofline",), gemm)
ECC_UNCORRECTABLE_ZERO = Criterion("ecc_uncorrectable_zero", "Memory has no uncorrectable ECC errors",
                                   ("health", "health-load"), ecc_uncorrectable_zero)
ROW_REMAPS_CLEAN = Criterion("row_remaps_clean", "No memory row remap is pending or has failed",
                             ("health", "health-load"), row_remaps_clean)
PCIE_LINK_AT_MAX_UNDER_LOAD = Criterion("pcie_link_at_max_under_load", "The host link (PCIe) runs at its full "
                                        "generation and width while working", ("health-load",),
                                        pcie_link_at_max_under_load)
CLOCKS_RISE_UNDER_LOAD = Criterion("clocks_rise_under_load", "GPU clocks rise from idle when work starts",
                                   ("health", "health-load", "health-diff"), clocks_rise_under_load)
NO_UNEXPECTED_PROCESS = Criterion("no_unexpected_process", "Nothing else was running on the GPUs",
                                  ("health", "health-load", "health-diff"), no_unexpected_process)
ALLREDUCE_BUSBW = Criterion("allreduce_busbw", "GPU-to-GPU all-reduce bus bandwidth reaches the stated share of a "
                            "known-good system", ("allreduce",), allreduce_busbw)


def apply_required(results: Iterable[Result], required: Iterable[str]) -> list[Result]:
    """Mark required criteria; a required one that was not measured fails, saying so."""
    needed = set(required)
    out = []
    for r in results:
        if r.name not in needed:
            out.append(r)
        elif r.status == Verdict.NOT_MEASURED:
            out.append(replace(r, status=Verdict.FAIL, required=True,
                               why=f"not measured, and the profile requires it: {r.why}"))
        else:
            out.append(replace(r, required=True))
    return out


def evaluate(facts: BundleFacts, profile: Profile) -> list[Result]:
    from harness import registry  # the entries name these criteria

    results = engine.evaluate(registry.acceptance_criteria(), facts, profile)
    present = {r.name for r in results}
    # A required GEMM dtype the profile has no share or known-good for still gets a row.
    for name in profile.required:
        if name not in present and name.startswith("gemm_"):
            results.append(Result(name, f"Dense matrix multiply ({name[5:]})", Verdict.NOT_MEASURED, None, None,
                                  "raw/roofline.json", "the profile states no share or known-good for this dtype"))
    return apply_required(results, profile.required)
