"""The roofline document's figures recomputed from its raw data. Standard library only.

The raw data are the timed windows (`windows`: calls and seconds of each, from probe contract 3 on;
`times_s`, one time per call, before) of every measured GEMM, of its CUDA-graph replay and of both
versions of the fusion chain, the shapes, the dtype widths and the roofs, for the run's dtype and
for each dtype check (`dtype_checks`). Every time-derived figure the document states (each
`median_s`, spread, launch-bound flag, the achieved rates, the explanations, the fusion comparison,
the CPU roofs measured on a CPU, the summary) is recomputed from them here: a stated median is
compared with the median of its window means (or per-call times), never used in place of it.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from harness import catalogue
from harness.analysis import timing
from harness.analysis.memo import per_document
from harness.analysis.roofline import checks as roofline_checks
from harness.analysis.roofline import gemm_shapes
from harness.analysis.roofline import model as rl
from harness.analysis.roofline.explanation import context_of, explain
from harness.analysis.units import is_number

MEASURED = roofline_checks.MEASURED


def median_of(times: Any) -> float | None:
    """The median of a list of per-call times, or None when there is no such list."""
    # set(map(type, ...)) first: the same answer for parsed JSON at C speed (verify asks ~200 times a bundle)
    if (
        isinstance(times, list)
        and times
        and (set(map(type, times)) <= {int, float} or all(is_number(t) for t in times))
    ):
        return statistics.median(times)
    return None


def _differs(stated: Any, recomputed: Any) -> bool:
    if isinstance(stated, int) and isinstance(recomputed, int):  # counts and byte totals: exact
        return stated != recomputed
    if is_number(stated) and is_number(recomputed):
        return not math.isclose(stated, recomputed, rel_tol=rl.REL_TOL, abs_tol=0.0)
    return stated != recomputed


def _roofs_known(document: dict[str, Any]) -> bool:
    roofs = document.get("roofs", {})
    return is_number(roofs.get("peak_tflops")) and is_number(roofs.get("bandwidth_gbps"))


def _measured(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in document.get("measurements", {}).get("shapes", []) if s.get("status") == "measured"]


def _predictions(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["label"]: p for p in document.get("predictions", {}).get("shapes", [])}


def _prediction(document: dict[str, Any], label: str) -> dict[str, Any]:
    """The shape's prediction recomputed on the document's roofs and widths."""
    roofs, precision, shape = document["roofs"], document["precision"], _predictions(document)[label]
    return {
        **shape,
        **rl.classify(
            shape["m"],
            shape["n"],
            shape["k"],
            precision["input_bytes"],
            precision["output_bytes"],
            roofs["peak_tflops"],
            roofs["bandwidth_gbps"],
        ),
    }


def windowed(document: dict[str, Any]) -> bool:
    """Timed in windows (probe contract 3 on, which requires `timing`): the burst best is then taken over
    the fixed burst-best shapes."""
    timing_record = document.get("timing")
    return isinstance(timing_record, dict) and timing_record.get("method") == "windows"


def kernel_headline(document: dict[str, Any]) -> bool:
    """The document follows the kernel-only rule (probe contract 4 on, stated in timing.launch_bound_headline):
    a launch-bound shape replayed from a CUDA graph is headlined by its kernels' own time. Documents before
    headline every shape by its eager time, and are read so."""
    return windowed(document) and document["timing"].get("launch_bound_headline") == timing.KERNEL_ONLY


def seconds_of(timed: dict[str, Any]) -> float | None:
    """Eager time per call of a timed record: the median of its window means (contract 3 on), else the
    median of its per-call times."""
    if "windows" in timed:
        return timing.per_call_s(timed.get("windows"))
    return median_of(timed.get("times_s"))


def headline_of(document: dict[str, Any], shape: dict[str, Any]) -> tuple[float | None, str]:
    """A measured shape's headline time per call and what it is timed from (timing.KERNEL_ONLY or
    timing.EAGER), by the document's rule."""
    if "windows" in shape:
        return timing.headline(shape, kernel_headline(document))
    return seconds_of(shape), timing.EAGER


def _as_timed(document: dict[str, Any], shape: dict[str, Any]) -> dict[str, Any]:
    """The measurement with its times recomputed from its windows (or per-call times): the eager median_s,
    and the headline time and what it is timed from."""
    headline_s, basis = headline_of(document, shape)
    return {**shape, "median_s": seconds_of(shape), "headline_s": headline_s, "rate_basis": basis}


def fusion_medians(fusion: Any) -> tuple[float | None, float | None]:
    """(unfused, fused) time per call of the fusion chain, recomputed; None where not timed."""
    if not isinstance(fusion, dict):
        return None, None
    unfused, fused = (seconds_of(fusion[v]) if isinstance(fusion.get(v), dict) else None for v in ("unfused", "fused"))
    return unfused, fused


BURST_RULE = (
    "every roofline rate is a burst: one shape's calls timed in short windows (tens of milliseconds, "
    "idle between them so the power cap does not engage) at the clock the card held then; the sustained "
    "rate under a long load is the stress probe's steady state (docs/stress.md)"
)
LEGACY_BURST_RULE = (
    "every roofline rate is a burst: the median call of one shape's short timed window (milliseconds "
    "to a few hundred, each call timed alone), at whatever clock the card held then; the sustained "
    "rate under a long load is the stress probe's steady state (docs/stress.md)"
)
BURST_BEST_RULE = (
    "burst best: the best median-of-windows rate over the fixed burst-best shapes "
    "(on a GPU 4096x4096x8192, 4096x8192x8192 and 8192x8192x8192, mamf-finder's best shapes on the "
    "H200; on a CPU 1024x1024x1024), the same shapes and timing every run and in every dtype"
)
LEGACY_BEST_RULE = (
    "burst best: the best median call over every shape the run measured (documents before probe "
    "contract 3, per-call timing)"
)
BEST_OVER = {True: "the fixed burst-best shapes", False: "every shape (per-call timing)"}
# The names the probe's summary has given the best GEMM rate: `burst_best_tflops` now, `best_tflops` in
# documents made before it was named a burst (the committed H200 bundles); both are the same figure.
BEST_SUMMARY_KEYS = ("burst_best_tflops", "best_tflops")


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def burst_window(shape: dict[str, Any], basis: str = timing.EAGER) -> dict[str, Any]:
    """How a shape's headline rate was measured: its window (ms: the median window's length in contract 3,
    the CUDA-graph windows' for a kernel-only headline, the sum of the timed calls before), the calls in
    it, the median SM clock NVML gave around the shape's windows, and whether the power cap was flagged then."""
    if "windows" in shape:
        timed = timing.graph_windows(shape.get("graph")) if basis == timing.KERNEL_ONLY else shape["windows"]
        windows = [w for w in timed if isinstance(w, dict)] if isinstance(timed, list) else []
        seconds = [w["seconds"] for w in windows if is_number(w.get("seconds"))]
        calls = [w["calls"] for w in windows if isinstance(w.get("calls"), int)]
        window = {
            "label": shape.get("label"),
            "window_ms": (_median(seconds) or 0.0) * 1e3,
            "timed_calls": sum(calls),
            "windows": len(windows),
        }
        readings = [w.get(k) for w in windows for k in ("nvml_before", "nvml_after")]
        powers = [r["power_instant_w"] for r in readings if isinstance(r, dict) and is_number(r.get("power_instant_w"))]
        window["power_instant_w"] = _median(powers)
    else:
        times = shape.get("times_s")
        times = times if isinstance(times, list) else []
        plain = set(map(type, times)) <= {int, float}  # parsed JSON times: summed at C speed
        window = {
            "label": shape.get("label"),
            "window_ms": math.fsum(times if plain else (t for t in times if is_number(t))) * 1e3,
            "timed_calls": len(times),
        }
    clocks = shape.get("clocks")
    if not isinstance(clocks, dict) or "unavailable" in clocks:
        why = clocks["unavailable"] if isinstance(clocks, dict) else "no clock samples recorded"
        return {**window, "sm_clock_mhz": None, "power_cap": {"unavailable": why}}
    samples = clocks.get("sm_clock_mhz_samples")
    clock = median_of(samples) if isinstance(samples, list) else clocks.get("sm_clock_mhz_median")
    reasons = clocks.get("clock_event_reasons")
    reasons = reasons if isinstance(reasons, list) else []
    return {
        **window,
        "sm_clock_mhz": clock if is_number(clock) else None,
        "power_cap": "flagged (sw_power_cap)" if "sw_power_cap" in reasons else "not flagged",
    }


def _tflops(document: dict[str, Any], shape: dict[str, Any], seconds: float | None) -> float | None:
    p = _predictions(document).get(shape["label"], {})
    dims: list[Any] = [p.get(d) for d in "mnk"]  # numbers where _is_number says so, below
    return rl.gemm_flops(*dims) / seconds / 1e12 if seconds and all(is_number(d) for d in dims) else None


def _rate(document: dict[str, Any], shape: dict[str, Any]) -> float | None:
    """The shape's headline rate (FLOPs / its headline time per call)."""
    return _tflops(document, shape, headline_of(document, shape)[0])


def burst_windows(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every measured shape's headline burst rate (FLOPs / its headline time per call) and its window,
    and (contract 3 on) what the rate is timed from (rate_basis), the spread across its windows, the
    launch-bound flag and, where the calls were replayed from a CUDA graph, both rates: kernel-only (the
    GPU's) and eager (the host's launch rate for an eager caller on this host), and the host's launch
    cost per call."""
    rows = []
    for shape in _measured(document):
        headline_s, basis = headline_of(document, shape)
        row = burst_window(shape, basis)
        row["burst_tflops"] = _tflops(document, shape, headline_s)
        if "windows" in shape:
            figures = timing.timing_figures(shape, kernel_headline(document))
            kernel, host = figures["kernel_s"], figures["host_launch_s"]
            spread = figures["graph_spread"] if basis == timing.KERNEL_ONLY else figures["window_spread"]
            row.update(
                rate_basis=basis,
                launch_bound=figures["launch_bound"],
                window_spread=spread,
                kernel_tflops=_tflops(document, shape, kernel) if kernel else None,
                eager_tflops=_tflops(document, shape, figures["per_call_s"]) if kernel else None,
                eager_spread=figures["window_spread"] if kernel else None,
                host_launch_us=host * 1e6 if host is not None else None,
            )
        rows.append(row)
    return rows


def best_rule(document: dict[str, Any]) -> str:
    """The rule the document's burst best follows, in words."""
    return BURST_BEST_RULE if windowed(document) else LEGACY_BEST_RULE


def _best_over(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The shapes the burst best is taken over: the fixed shapes (contract 3 on), else every measured one."""
    shapes = _measured(document)
    if not windowed(document):
        return shapes
    predictions = _predictions(document)
    device = str(document.get("device"))

    def reference(shape: dict[str, Any]) -> bool:
        dims = predictions.get(shape["label"], {})
        return gemm_shapes.is_reference(dims.get("m"), dims.get("n"), dims.get("k"), device)

    return [s for s in shapes if reference(s)]


def _window_of(document: dict[str, Any], label: Any) -> dict[str, Any] | None:
    """The best shape's window, clock and cap state (its label and rate are best_shape and
    burst_best_tflops beside it)."""
    window = next((w for w in burst_windows(document) if w["label"] == label), None)
    return None if window is None else {k: v for k, v in window.items() if k not in ("label", "burst_tflops")}


@per_document
def headlines(document: dict[str, Any]) -> dict[str, Any]:
    """Headline figures recomputed from the document's roofs, shapes and timings (and each dtype check's)."""
    heads = _dtype_headlines(document)
    unfused_s, fused_s = fusion_medians(document.get("fusion"))
    if (document.get("fusion") or {}).get("outputs_match") is not True:
        fused_s = None  # a fused version whose outputs differ from the eager chain's is no speedup
    heads["fusion_speedup"] = unfused_s / fused_s if unfused_s and fused_s else None
    if windowed(document):
        rows = burst_windows(document)
        spreads = [r["window_spread"] for r in rows if is_number(r.get("window_spread"))]
        heads["max_window_spread"] = max(spreads) if spreads else None
        heads["launch_bound_shapes"] = [r["label"] for r in rows if r.get("launch_bound")]
        heads["launch_bound_headline"] = timing.KERNEL_ONLY if kernel_headline(document) else timing.EAGER
    checks = dtype_documents(document)
    if len(checks) > 1:  # each dtype check's burst best (its shape and window: dtype_headlines)
        heads["dtype_burst_best_tflops"] = {
            dtype: _dtype_headlines(view)["burst_best_tflops"]
            for dtype, view in checks.items()
            if dtype != document["dtype"]
        }
    return heads


def _dtype_headlines(document: dict[str, Any]) -> dict[str, Any]:
    """One dtype's figures: roofs, classifications, the burst best by its rule, every shape explained."""
    roofs = document["roofs"]
    known = _roofs_known(document)
    classifications, best, best_shape, explained = {}, None, None, []
    if known:
        for label in _predictions(document):
            classifications[label] = _prediction(document, label)["bound"]
        for shape in _measured(document):
            explained.append(
                explain(_prediction(document, shape["label"]), _as_timed(document, shape), context_of(document))[
                    "explained"
                ]
            )
    for shape in _best_over(document):
        tflops = _rate(document, shape)
        if tflops is not None and (best is None or tflops > best):
            best, best_shape = tflops, shape["label"]
    return {
        "device": document["device"],
        "dtype": document["dtype"],
        "bandwidth_gbps": roofs["bandwidth_gbps"] if known else None,
        "peak_tflops": roofs["peak_tflops"] if known else None,
        "ridge_flop_per_byte": rl.ridge_flop_per_byte(roofs["peak_tflops"], roofs["bandwidth_gbps"]) if known else None,
        "classifications": classifications,
        "burst_best_tflops": best,
        "best_shape": best_shape,
        "burst_best_window": _window_of(document, best_shape),
        "burst_best_over": BEST_OVER[windowed(document)],
        "all_explained": bool(explained) and all(explained),
    }


def dtype_documents(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The document as one roofline document per dtype: its own, then each dtype check's (its precision,
    roofs, predictions and measurements with the run's device facts, timing and timeline)."""
    found = {document["dtype"]: document}
    checks = document.get("dtype_checks")
    for check in checks if isinstance(checks, list) else []:
        if isinstance(check, dict) and isinstance(check.get("dtype"), str):
            view = {k: v for k, v in document.items() if k not in ("dtype_checks", "summary", "fusion", "cpu_roofs")}
            tile = check.get("tile")
            tile = tile if isinstance(tile, dict) else {}
            found[check["dtype"]] = {
                **view,
                **check,
                "device_facts": {**document.get("device_facts", {}), **tile},
                "fusion": {"unavailable": "fusion runs in the main dtype"},
            }
    return found


def dtype_headlines(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A roofline document's figures by dtype: its own dtype's headlines, then each dtype check's (roofs,
    classifications, burst best with its shape and window, every shape explained). Acceptance judges
    each dtype's burst best against its known-good."""
    own = headlines(document)
    return {
        dtype: own if view is document else {**_dtype_headlines(view), "fusion_speedup": None}
        for dtype, view in dtype_documents(document).items()
    }


def discrepancies(document: dict[str, Any]) -> list[str]:
    """Where the document's stated figures differ from the recomputation, or order is broken."""
    found: list[str] = []
    head = headlines(document)
    found += cpu_roof_discrepancies(document) + sample_discrepancies(document)
    for dtype, view in dtype_documents(document).items():
        where = "" if dtype == document["dtype"] else f"dtype_checks[{dtype}] "
        found += [where + problem for problem in _dtype_discrepancies(view)]
    found += _order_discrepancies(document)
    found += fusion_discrepancies(document) + roofline_checks.discrepancies(document)
    found += roofline_checks.dtype_discrepancies(document, dtype_documents(document))
    summary = document.get("summary", {})
    for key in (*BEST_SUMMARY_KEYS, "best_shape", "all_explained", "fusion_speedup", "classifications"):
        again = head["burst_best_tflops"] if key in BEST_SUMMARY_KEYS else head[key]
        if key in summary and _differs(summary[key], again):
            found.append(f"summary.{key} {summary[key]!r} != recomputed {again!r}")
    return found


def _dtype_discrepancies(document: dict[str, Any]) -> list[str]:
    """One dtype's ridge, catalogue peak, predictions and measurements."""
    found = []
    head = _dtype_headlines(document)
    stated_ridge = document["roofs"].get("ridge_flop_per_byte")
    if head["ridge_flop_per_byte"] is not None and _differs(stated_ridge, head["ridge_flop_per_byte"]):
        found.append(f"roofs.ridge_flop_per_byte {stated_ridge} != {head['ridge_flop_per_byte']}")
    found += catalogue_peak_discrepancies(document)
    if _roofs_known(document):
        found += _prediction_discrepancies(document)
        for shape in _measured(document):
            found += measurement_discrepancies(document, shape)
    return found


def _prediction_discrepancies(document: dict[str, Any]) -> list[str]:
    found = []
    for label, stated in _predictions(document).items():
        again = _prediction(document, label)
        found += [
            f"prediction {label}: {key} {stated.get(key)} != {again[key]}"
            for key in ("flops", "min_bytes", "ai_flop_per_byte", "bound", "attainable_tflops")
            if _differs(stated.get(key), again[key])
        ]
    return found


def timed_discrepancies(where: str, timed: dict[str, Any], kernel_rule: bool = False) -> list[str]:
    """A stated time per call (and call count, spread, launch-bound flag, graph time) against the
    windows or per-call times they summarise (KERNEL_RULE: the document's kernel-only rule)."""
    if "windows" in timed:
        return _window_discrepancies(where, timed, kernel_rule)
    times = timed.get("times_s")
    median = median_of(times)
    if median is None or not isinstance(times, list):  # a median only of a list
        return [f"{where}: no per-call times_s to recompute median_s from"]
    found = []
    if _differs(timed.get("median_s"), median):
        found.append(
            f"{where}: median_s {timed.get('median_s')} but the median of its {len(times)} per-call times_s is {median}"
        )
    if timed.get("iterations") != len(times):
        found.append(f"{where}: iterations {timed.get('iterations')} but times_s holds {len(times)} calls")
    return found


def _window_discrepancies(where: str, timed: dict[str, Any], kernel_rule: bool) -> list[str]:
    figures = timing.timing_figures(timed, kernel_rule)
    if figures["per_call_s"] is None:
        return [f"{where}: no usable windows (calls, seconds) to recompute median_s from"]
    found = [
        f"{where}: window {i} per_call_s {w['per_call_s']} but its {w['calls']} calls took {w['seconds']} s"
        for windows in (timed["windows"], timing.graph_windows(timed.get("graph")) or [])
        for i, w in enumerate(windows)
        if "per_call_s" in w and _differs(w["per_call_s"], w["seconds"] / w["calls"])
    ]
    if _differs(timed.get("median_s"), figures["per_call_s"]):
        found.append(
            f"{where}: median_s {timed.get('median_s')} but the median of its {figures['windows']} "
            f"window means is {figures['per_call_s']}"
        )
    if "window_spread" in timed and _differs(timed["window_spread"], figures["window_spread"]):
        found.append(
            f"{where}: window_spread {timed['window_spread']} != {figures['window_spread']} (from its windows)"
        )
    if "launch_bound" in timed and timed["launch_bound"] != figures["launch_bound"]:
        by_kernel = kernel_rule and figures["kernel_s"] is not None
        seconds, which = (figures["kernel_s"], "kernel-only") if by_kernel else (figures["per_call_s"], "eager")
        found.append(
            f"{where}: launch_bound {timed['launch_bound']} but its {seconds * 1e6:.3g} us {which} "
            f"per call says {figures['launch_bound']} (under {timing.LAUNCH_BOUND_S * 1e6:g} us)"
        )
    graph = timed.get("graph")
    if isinstance(graph, dict) and "unavailable" not in graph and _differs(graph.get("median_s"), figures["kernel_s"]):
        found.append(f"{where}: graph.median_s {graph.get('median_s')} != {figures['kernel_s']} (from its windows)")
    return found


def measurement_discrepancies(document: dict[str, Any], shape: dict[str, Any]) -> list[str]:
    """One measured GEMM: its median, rates, rotation and explanation from its per-call times."""
    label = shape["label"]
    if label not in _predictions(document):
        return [f"measurement {label} has no prediction"]
    found = timed_discrepancies(f"measurement {label}", shape, kernel_headline(document))
    if found and seconds_of(shape) is None:
        return found
    if "windows" in shape and isinstance(document.get("timing"), dict):  # sized and spaced by the stated rule
        found += roofline_checks.window_discrepancies(f"measurement {label}", shape, document["timing"])
    p, timed = _prediction(document, label), _as_timed(document, shape)
    seconds = timed["headline_s"]
    recomputed = {
        "achieved_tflops": p["flops"] / seconds / 1e12,
        "effective_gbps": p["min_bytes"] / seconds / 1e9,
        "fraction_of_attainable": p["flops"] / seconds / 1e12 / p["attainable_tflops"],
    }
    if kernel_headline(document):  # contract 4 on: what the headline is timed from, stated and recomputed
        recomputed.update(rate_basis=timed["rate_basis"], headline_s=seconds)
        if timed["rate_basis"] == timing.KERNEL_ONLY:
            recomputed["eager_tflops"] = p["flops"] / timed["median_s"] / 1e12
    found += [
        f"measurement {label}: {key} {shape.get(key)} != {value} (from the per-call times)"
        for key, value in recomputed.items()
        if _differs(shape.get(key), value)
    ]
    if "eager_tflops" in shape and "eager_tflops" not in recomputed:
        found.append(f"measurement {label}: eager_tflops is stated but its headline is not kernel-only")
    found += _rotation_discrepancies(document, shape, p)
    if (
        windowed(document)
        and document.get("device") == "cuda"
        and "graph" not in shape
        and (timed["median_s"] < timing.GRAPH_BELOW_S if kernel_headline(document) else shape.get("launch_bound"))
    ):
        limit = timing.GRAPH_BELOW_S if kernel_headline(document) else timing.LAUNCH_BOUND_S
        found.append(
            f"measurement {label}: an eager call under {limit * 1e6:g} us on a GPU but no CUDA-graph replay "
            "(or why none) is recorded"
        )
    again, stated = explain(p, timed, context_of(document)), shape.get("explanation", {})
    found += [
        f"measurement {label}: explanation {key} differs from the recomputation"
        for key in ("verdict", "explained", "text", "causes")
        if stated.get(key) != again[key]
    ]
    return found


def _rotation_discrepancies(document: dict[str, Any], shape: dict[str, Any], p: dict[str, Any]) -> list[str]:
    """rotated_mib = input sets x the bytes of one (aligned) set; cache_defeated = twice the cache."""
    if not all(is_number(shape.get(k)) for k in ("input_sets", "rotated_mib")):
        return []
    in_bytes = document["precision"]["input_bytes"]
    rotated = shape["input_sets"] * rl.input_set_bytes(p["m"], p["n"], p["k"], in_bytes)
    found = []
    if _differs(shape["rotated_mib"], rotated / 2**20):
        found.append(
            f"measurement {shape['label']}: rotated_mib {shape['rotated_mib']} but "
            f"{shape['input_sets']} input sets of this shape are {rotated / 2**20} MiB"
        )
    cache = document["device_facts"].get("cache_mib")
    if is_number(cache) and "cache_defeated" in shape and shape["cache_defeated"] != (rotated >= 2 * cache * 2**20):
        found.append(
            f"measurement {shape['label']}: cache_defeated {shape['cache_defeated']} but "
            f"{rotated / 2**20:g} MiB rotated against twice the {cache:g} MiB cache says otherwise"
        )
    return found


def _order_discrepancies(document: dict[str, Any]) -> list[str]:
    """The predictions (every dtype's) must be recorded before the first GEMM is timed."""
    predicted = document.get("predictions", {}).get("recorded_at")
    found = []
    for view in dtype_documents(document).values():
        for shape in view.get("measurements", {}).get("shapes", []):
            at = shape.get("measured_at")
            if predicted and at and at < predicted:  # RFC 3339 UTC strings order as text
                found.append(f"measurement {shape['label']} at {at} precedes the prediction at {predicted}")
    events = [e["event"] for e in document.get("timeline", [])]
    if (
        "predictions recorded" in events
        and "first GEMM timed" in events
        and events.index("first GEMM timed") < events.index("predictions recorded")
    ):
        found.append("timeline: a GEMM was timed before the predictions were recorded")
    return found


def fusion_discrepancies(document: dict[str, Any]) -> list[str]:
    """The fusion chain's byte accounting, medians, rates and comparison, from its per-call times."""
    fusion = document.get("fusion")
    if not isinstance(fusion, dict) or "unavailable" in fusion:
        return []
    accounting = rl.fusion_accounting(
        fusion["elements"], fusion["element_bytes"], fusion["unfused_kernels"], fusion["flops_per_element"]
    )
    found = [
        f"fusion.{key} {fusion.get(key)} != {value}"
        for key, value in accounting.items()
        if _differs(fusion.get(key), value)
    ]
    if fusion.get("chain") == rl.FUSION_CHAIN["text"]:
        for key, value in (
            ("unfused_kernels", rl.FUSION_CHAIN["kernels"]),
            ("flops_per_element", rl.FUSION_CHAIN["flops_per_element"]),
        ):
            if fusion.get(key) != value:
                found.append(f"fusion.{key} {fusion.get(key)} but the chain {fusion['chain']!r} has {value}")
    width = rl.DTYPE_WIDTHS[fusion["dtype"]][0] if fusion.get("dtype") in rl.DTYPE_WIDTHS else None
    if width is not None and fusion["element_bytes"] != width:
        found.append(f"fusion.element_bytes {fusion['element_bytes']} but {fusion['dtype']} is {width} bytes")
    timed = {}
    for version in ("unfused", "fused"):
        record = fusion.get(version)
        if not isinstance(record, dict) or "unavailable" in record:
            continue
        problems = timed_discrepancies(f"fusion.{version}", record)
        found += problems
        seconds = seconds_of(record)
        if seconds is None:
            continue
        timed[version] = seconds
        for key, value in (
            ("achieved_gbps", accounting[f"{version}_bytes"] / seconds / 1e9),
            ("achieved_tflops", accounting["flops"] / seconds / 1e12),
        ):
            if _differs(record.get(key), value):
                found.append(f"fusion.{version}.{key} {record.get(key)} != {value} (from the per-call times)")
    return found + _fusion_comparison_discrepancies(document, fusion, accounting, timed)


def _fusion_comparison_discrepancies(
    document: dict[str, Any], fusion: dict[str, Any], accounting: dict[str, Any], timed: dict[str, float]
) -> list[str]:
    stated = fusion.get("comparison")
    if len(timed) < 2 or not _roofs_known(document):
        return ["fusion.comparison is stated but cannot be recomputed"] if stated is not None else []
    rates = {
        v: {**fusion[v], "median_s": timed[v], "achieved_gbps": accounting[f"{v}_bytes"] / timed[v] / 1e9}
        for v in timed
    }
    again = rl.fusion_comparison(
        {**fusion, **accounting, **rates}, document["roofs"]["peak_tflops"], document["roofs"]["bandwidth_gbps"]
    )
    if not isinstance(stated, dict):
        return ["fusion.comparison is missing although both versions were timed"]
    return [
        f"fusion.comparison.{key} {stated.get(key)!r} != {value!r}"
        for key, value in again.items()
        if _differs(stated.get(key), value)
    ]


def cpu_roof_discrepancies(document: dict[str, Any]) -> list[str]:
    """On a CPU the probe measures the roofs it was not given: each from its own recorded times."""
    measured, roofs = document.get("cpu_roofs"), document.get("roofs", {})
    if not isinstance(measured, dict):
        return []
    found = []
    if "copy_times_s" in measured:
        seconds = median_of(measured["copy_times_s"])
        copy = 2 * measured["copy_buffer_mib"] * 2**20 / seconds / 1e9 if seconds else None
        if _differs(measured.get("copy_gbps"), copy):
            found.append(f"cpu_roofs.copy_gbps {measured.get('copy_gbps')} != {copy} (from copy_times_s)")
        if str(roofs.get("bandwidth_source", "")).startswith(MEASURED) and _differs(roofs.get("bandwidth_gbps"), copy):
            found.append(f"roofs.bandwidth_gbps {roofs.get('bandwidth_gbps')} is not the copy measured here ({copy})")
    trials = measured.get("gemm_trials")
    if isinstance(trials, list) and trials:
        for trial in trials:
            median = median_of(trial.get("times_s"))  # the times are kept from probe contract 2 on
            if median is not None and _differs(trial["median_s"], median):
                found.append(
                    f"cpu_roofs.gemm_trials[{trial['size']}].median_s {trial['median_s']} but the median "
                    f"of its times_s is {median}"
                )
            rate = 2 * trial["size"] ** 3 / trial["median_s"] / 1e12
            if _differs(trial.get("tflops"), rate):
                found.append(f"cpu_roofs.gemm_trials[{trial['size']}].tflops {trial.get('tflops')} != {rate}")
        best = max(trials, key=lambda t: 2 * t["size"] ** 3 / t["median_s"])
        rate = 2 * best["size"] ** 3 / best["median_s"] / 1e12
        if _differs(measured.get("gemm_peak_tflops"), rate) or measured.get("gemm_peak_size") != best["size"]:
            found.append(
                f"cpu_roofs.gemm_peak_tflops {measured.get('gemm_peak_tflops')} at "
                f"{measured.get('gemm_peak_size')} is not the best trial ({rate} at {best['size']})"
            )
        if str(roofs.get("peak_source", "")).startswith(MEASURED) and _differs(roofs.get("peak_tflops"), rate):
            found.append(f"roofs.peak_tflops {roofs.get('peak_tflops')} is not the GEMM peak measured here ({rate})")
    return found


def sample_discrepancies(document: dict[str, Any]) -> list[str]:
    """Medians of samples the document keeps (probe contract 2 on): the empty-kernel floor (its windows
    from contract 3 on) and each shape's SM clock (read around its windows from contract 3 on)."""
    found = []
    facts = document.get("device_facts", {})
    floor = (
        timing.per_call_s(facts.get("launch_floor_windows"))
        if "launch_floor_windows" in facts
        else median_of(facts.get("launch_floor_times_s"))
    )
    source = "launch_floor_windows" if "launch_floor_windows" in facts else "launch_floor_times_s"
    if floor is not None and _differs(facts.get("launch_floor_s"), floor):
        found.append(f"device_facts.launch_floor_s {facts.get('launch_floor_s')} but the median of {source} is {floor}")
    kernel_floor = timing.per_call_s(facts.get("kernel_floor_windows"))  # contract 4 on, on a GPU
    if "kernel_floor_windows" in facts and _differs(facts.get("kernel_floor_s"), kernel_floor):
        found.append(
            f"device_facts.kernel_floor_s {facts.get('kernel_floor_s')} but the median of "
            f"kernel_floor_windows' means is {kernel_floor}"
        )
    for view in dtype_documents(document).values():
        for shape in _measured(view):
            found += _clock_discrepancies(shape)
    return found


def _clock_discrepancies(shape: dict[str, Any]) -> list[str]:
    clocks = shape.get("clocks")
    if "windows" in shape and isinstance(clocks, dict) and "unavailable" not in clocks:
        again = timing.clocks_of(shape["windows"])
        return (
            []
            if again == clocks
            else [
                f"measurement {shape['label']}: clocks {clocks} are not the NVML readings around its windows ({again})"
            ]
        )
    samples = clocks.get("sm_clock_mhz_samples") if isinstance(clocks, dict) else None
    if not isinstance(clocks, dict) or not isinstance(samples, list):
        return []
    median = median_of(samples)
    if clocks.get("samples") != len(samples) or _differs(clocks.get("sm_clock_mhz_median"), median):
        return [
            f"measurement {shape['label']}: clocks state {clocks.get('samples')} samples, median "
            f"{clocks.get('sm_clock_mhz_median')} MHz, but sm_clock_mhz_samples give {len(samples)}, "
            f"{median} MHz"
        ]
    return []


def catalogue_peak_discrepancies(document: dict[str, Any]) -> list[str]:
    """A compute roof the document says came from the catalogue is the catalogue's dense figure."""
    roofs, sku_id = document.get("roofs", {}), document.get("device_facts", {}).get("sku_id")
    if not str(roofs.get("peak_source", "")).startswith("catalogue") or not isinstance(sku_id, str):
        return []
    peak = ((catalogue.by_id(sku_id) or {}).get("published", {}).get("dense_tflops", {})).get(document.get("dtype"))
    if _differs(roofs.get("peak_tflops"), peak):
        return [
            f"roofs.peak_tflops {roofs.get('peak_tflops')} but the catalogue's dense {document.get('dtype')} "
            f"figure for {sku_id} is {peak}"
        ]
    return []
