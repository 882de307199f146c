"""A roofline document's evidence is all there, and where each roof came from is what the document
holds (issue 28). Standard library only.

harness.analysis.roofline_figures recomputes every figure from the evidence present; these checks
make a missing piece of evidence a failure instead of a check skipped: a roof said to be measured
here needs its CPU measurement (`cpu_roofs`: copy times, GEMM trials), a roof given on the command
line needs that argument in `argv` with that value, a roof from the catalogue needs the SKU it was
read for; a fusion whose fused version was timed says whether the outputs matched (and, from probe
contract 2 on, what fused it); every predicted shape has its measurement record, once; the summary
states every figure the probe states. From probe contract 3 on (windows), every timed record is what
the timing rule the document states makes of it (`window_discrepancies`: the count of windows, the
calls each holds, the idle gap before each, a CUDA-graph replay's calls), the launch-bound limits
are this build's (the flags are recomputed with them), and the dtype checks are exactly the
`--check-dtypes` the argv gives, each with its own predictions and measurements (`dtype_discrepancies`).
"""

from __future__ import annotations

import math
from typing import Any

from harness.analysis import timing
from harness.analysis.roofline import model as rl
from harness.analysis.units import is_number

MEASURED = "measured here"  # how roofs.*_source starts when a CPU run measured the roof itself
SUMMARY_KEYS = ("all_explained", "best_shape", "classifications", "fusion_speedup")
# the best rate's two names: burst_best_tflops now, best_tflops in documents made before (format 1)
BEST_KEYS = ("burst_best_tflops", "best_tflops")


def _given(argv: Any, option: str) -> float | None:
    """The number after OPTION in the probe's argv, or None."""
    if not isinstance(argv, list) or option not in argv or argv.index(option) + 1 >= len(argv):
        return None
    try:
        return float(argv[argv.index(option) + 1])
    except (TypeError, ValueError):
        return None


def _values_after(argv: Any, option: str) -> list[str] | None:
    """The values an `nargs="+"` OPTION took in the probe's argv (up to the next option), or None."""
    if not isinstance(argv, list) or option not in argv:
        return None
    values = []
    for token in argv[argv.index(option) + 1 :]:
        if not isinstance(token, str) or token.startswith("-"):
            break
        values.append(token)
    return values


def _roof(document: dict[str, Any], name: str, option: str, evidence: str) -> list[str]:
    roofs, measured = document.get("roofs", {}), document.get("cpu_roofs")
    source, value = (
        str(roofs.get(f"{name}_source", "")),
        roofs.get(f"{name}_{'gbps' if name == 'bandwidth' else 'tflops'}"),
    )
    if source.startswith("given with"):
        given = _given(document.get("argv"), option)
        if given is None or not isinstance(value, (int, float)) or not math.isclose(given, value, rel_tol=1e-9):
            return [f"roofs.{name} {value} is said to be given with {option}, but argv gives {given}"]
    elif source.startswith(MEASURED):
        if not isinstance(measured, dict) or not measured.get(evidence):
            return [f"roofs.{name} is said to be measured here, but cpu_roofs.{evidence} (its evidence) is missing"]
    elif source.startswith("catalogue"):
        if name != "peak" or not isinstance(document.get("device_facts", {}).get("sku_id"), str):
            return [f"roofs.{name} is said to come from the catalogue, but device_facts names no SKU to read it for"]
    elif not (name == "peak" and source == "none" and isinstance(value, dict)):
        return [f"roofs.{name}_source {source[:60]!r} is not a source the probe states"]
    return []


def roof_discrepancies(document: dict[str, Any]) -> list[str]:
    found = _roof(document, "bandwidth", "--bandwidth-gbps", "copy_times_s") + _roof(
        document, "peak", "--peak-tflops", "gemm_trials"
    )
    sources = [str(document.get("roofs", {}).get(f"{n}_source", "")) for n in ("bandwidth", "peak")]
    if document.get("cpu_roofs") is not None and not any(s.startswith(MEASURED) for s in sources):
        found.append("cpu_roofs is present, but no roof says it was measured here")
    return found


def fusion_discrepancies(document: dict[str, Any]) -> list[str]:
    fusion = document.get("fusion")
    if not isinstance(fusion, dict) or "unavailable" in fusion:
        return []
    fused, match = fusion.get("fused"), fusion.get("outputs_match")
    if fusion.get("chain") != rl.FUSION_CHAIN["text"] or fusion.get("dtype") not in rl.DTYPE_WIDTHS:
        return [
            f"fusion: chain {str(fusion.get('chain'))[:60]!r} in {str(fusion.get('dtype'))[:20]!r} is not the chain "
            f"the probe times ({rl.FUSION_CHAIN['text']!r}) in a dtype it knows"
        ]
    if isinstance(fused, dict) and "unavailable" not in fused:
        found = (
            []
            if isinstance(match, bool)
            else [
                "fusion: the fused version was timed, but outputs_match does not "
                "say whether its outputs matched the eager chain's"
            ]
        )
        if document.get("contract_version", 1) >= 2 and not isinstance(fusion.get("fused_by"), dict):
            found.append("fusion: the fused version was timed, but fused_by does not say what fused it")
        return found
    if not (isinstance(match, dict) and "unavailable" in match):
        return ["fusion: the fused version was not timed, but outputs_match states a result"]
    return []


def shape_discrepancies(document: dict[str, Any]) -> list[str]:
    predicted = [p.get("label") for p in document.get("predictions", {}).get("shapes", [])]
    measured = [m.get("label") for m in document.get("measurements", {}).get("shapes", [])]
    if len(predicted) != len(set(predicted)) or measured != predicted:
        return [
            f"measurements {len(measured)} shape(s) and predictions {len(predicted)}: each predicted shape has one "
            "measurement record, in the prediction's order"
        ]
    return []


def summary_discrepancies(document: dict[str, Any]) -> list[str]:
    summary = document.get("summary", {})
    missing = [k for k in SUMMARY_KEYS if k not in summary] + (
        [] if any(k in summary for k in BEST_KEYS) else [BEST_KEYS[0]]
    )
    return [f"summary states no {', '.join(missing)} (the probe states every one)"] if missing else []


GAP_SLACK = 1e-6  # relative: a gap is slept out in full (time.sleep never returns early); float rounding aside


def _gaps(where: str, windows: list[Any], before_s: Any, ratio: float) -> list[str]:
    """Each window's idle gap is at least RATIO times the burst before it (BEFORE_S for the first, the
    window before for the others): the probe sleeps that long after every burst (harness.probes.timing)."""
    found = []
    for i, window in enumerate(windows):
        burst = before_s if i == 0 else windows[i - 1].get("seconds") if isinstance(windows[i - 1], dict) else None
        gap = window.get("gap_before_s") if isinstance(window, dict) else None
        if is_number(burst) and is_number(gap) and gap < ratio * burst * (1 - GAP_SLACK):
            found.append(
                f"{where}: window {i} idled {gap:.6g} s before it, but timing.gap_ratio {ratio:g} after "
                f"a {burst:.6g} s burst is {ratio * burst:.6g} s"
            )
    return found


def window_discrepancies(where: str, timed: dict[str, Any], rule: dict[str, Any]) -> list[str]:
    """A record timed in windows (a shape or a fusion version, probe contract 3 on) against the timing
    RULE its document states: a warm-up of at least warmup_s and warmup_min_calls, then `windows` windows,
    each of calls_per_window(the warm-up's time per call, window_s) calls, each after an idle gap of at least gap_ratio times the burst before it (the warm-up,
    then the window before), its window_spread stated; its CUDA-graph replay (where there is one) as many
    windows, each of replays x calls_per_replay calls, calls_per_replay as `graph.calls` says."""
    windows, warmup = timed.get("windows"), timed.get("warmup")
    if not isinstance(windows, list) or not isinstance(warmup, dict):
        return [f"{where}: timed in windows, but no windows or warm-up record"]
    found = [] if "window_spread" in timed else [f"{where}: window_spread is not stated"]
    least_s, least_calls = rule.get("warmup_s"), rule.get("warmup_min_calls")
    if (is_number(least_s) and not (is_number(warmup.get("seconds")) and warmup["seconds"] >= least_s)) or (
        isinstance(least_calls, int) and not (isinstance(warmup.get("calls"), int) and warmup["calls"] >= least_calls)
    ):
        found.append(
            f"{where}: a warm-up of {warmup.get('calls')} calls in {warmup.get('seconds')} s, but the timing "
            f"rule warms up at least {least_s} s and {least_calls} calls"
        )
    if len(windows) != rule.get("windows"):
        found.append(f"{where}: {len(windows)} windows, but timing.windows says {rule.get('windows')}")
    per_call, window_s = warmup.get("per_call_s"), rule.get("window_s")
    if is_number(per_call) and is_number(window_s):
        calls = timing.calls_per_window(per_call, window_s)
        if any(isinstance(w, dict) and w.get("calls") != calls for w in windows):
            sizes = {w.get("calls") for w in windows if isinstance(w, dict)}  # any JSON: numbers first, in order
            shown = sorted(sizes, key=lambda c: (not is_number(c), c if is_number(c) else 0, repr(c)))
            found.append(
                f"{where}: windows of {shown} calls, but "
                f"a warm-up of {per_call:.6g} s a call sizes {window_s:g} s windows at {calls} calls"
            )
    ratio = rule.get("gap_ratio")
    if is_number(ratio):
        found += _gaps(where, windows, warmup.get("seconds"), ratio)
    graph = timed.get("graph")
    replayed = timing.graph_windows(graph)
    if replayed is not None and isinstance(graph, dict):  # windows replayed only from a graph record
        per_replay, stated = graph.get("calls_per_replay"), (rule.get("graph") or {}).get("calls")
        if per_replay != stated:
            found.append(f"{where}: graph.calls_per_replay {per_replay}, but timing.graph.calls says {stated}")
        if len(replayed) != rule.get("windows") or any(
            not isinstance(w, dict)
            or not isinstance(w.get("replays"), int)
            or w.get("calls") != w["replays"] * per_replay
            for w in replayed
        ):
            found.append(f"{where}: graph windows are not timing.windows windows of replays x calls_per_replay calls")
        if is_number(ratio):
            found += _gaps(f"{where} graph", replayed, None, ratio)
    return found


def timing_discrepancies(document: dict[str, Any]) -> list[str]:
    """The launch-bound limits the document states are this build's, with which its flags and headlines
    are recomputed (timing.LAUNCH_BOUND_S; from probe contract 4 on, timing.GRAPH_BELOW_S)."""
    rule = document.get("timing")
    if not isinstance(rule, dict):
        return []
    found = []
    if rule.get("launch_bound_s") != timing.LAUNCH_BOUND_S:
        found.append(
            f"timing.launch_bound_s {rule.get('launch_bound_s')} is not the limit the launch-bound flags are "
            f"recomputed with ({timing.LAUNCH_BOUND_S:g} s)"
        )
    graph = rule.get("graph")
    if (
        isinstance(graph, dict)
        and "below_s" in graph
        and rule.get("launch_bound_headline") == timing.KERNEL_ONLY
        and graph["below_s"] != timing.GRAPH_BELOW_S
    ):
        found.append(
            f"timing.graph.below_s {graph['below_s']} is not the limit a replay is required under "
            f"({timing.GRAPH_BELOW_S:g} s)"
        )
    return found


def dtype_discrepancies(document: dict[str, Any], views: dict[str, dict[str, Any]]) -> list[str]:
    """The dtype checks are the argv's `--check-dtypes`, in its order, the run's own dtype left out, each
    once; each one's predictions and measurements, and roofs, as the run's (VIEWS: the document as one
    roofline document per dtype, harness.analysis.roofline.reading.dtype_documents)."""
    asked = _values_after(document.get("argv"), "--check-dtypes") or []
    expected = [d for d in asked if d != document.get("dtype")]
    checks = document.get("dtype_checks")
    stated = [c.get("dtype") if isinstance(c, dict) else None for c in checks] if isinstance(checks, list) else None
    found = []
    if stated != (expected if asked else None) and not (stated == [] and not expected):
        found.append(
            f"dtype_checks {stated} are not the --check-dtypes the argv gives ({asked or 'none'}; the run's own "
            f"dtype {document.get('dtype')} left out)"
        )
    for dtype, view in views.items():
        if view is not document:  # its roofs' evidence is the run's: a roof measured here, the run's CPU roofs
            with_evidence = {**view, "cpu_roofs": document.get("cpu_roofs")}
            found += [
                f"dtype_checks[{dtype}] {problem}"
                for problem in shape_discrepancies(view) + roof_discrepancies(with_evidence)
            ]
    return found


def discrepancies(document: dict[str, Any]) -> list[str]:
    found = (
        roof_discrepancies(document)
        + fusion_discrepancies(document)
        + shape_discrepancies(document)
        + summary_discrepancies(document)
        + timing_discrepancies(document)
    )
    rule = document.get("timing")
    fusion = document.get("fusion")
    if isinstance(rule, dict) and isinstance(fusion, dict):
        for version in ("unfused", "fused"):
            record = fusion.get(version)
            if isinstance(record, dict) and "windows" in record:
                found += window_discrepancies(f"fusion.{version}", record, rule)
    return found
