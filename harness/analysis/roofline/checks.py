"""A roofline document's evidence is all there, and where each roof came from is what the document
holds (issue 28). Standard library only.

harness.analysis.roofline_figures recomputes every figure from the evidence present; these checks
make a missing piece of evidence a failure instead of a check skipped: a roof said to be measured
here needs its CPU measurement (`cpu_roofs`: copy times, GEMM trials), a roof given on the command
line needs that argument in `argv` with that value, a roof from the catalogue needs the SKU it was
read for; a fusion whose fused version was timed says whether the outputs matched (and, from probe
contract 2 on, what fused it); every predicted shape has its measurement record, once; the summary
states every figure the probe states.
"""

from __future__ import annotations

import math
from typing import Any

from harness.analysis.roofline import model as rl

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


def _roof(document: dict[str, Any], name: str, option: str, evidence: str) -> list[str]:
    roofs, measured = document.get("roofs", {}), document.get("cpu_roofs")
    source, value = str(roofs.get(f"{name}_source", "")), roofs.get(f"{name}_{'gbps' if name == 'bandwidth' else 'tflops'}")
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
    found = (_roof(document, "bandwidth", "--bandwidth-gbps", "copy_times_s")
             + _roof(document, "peak", "--peak-tflops", "gemm_trials"))
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
        return [f"fusion: chain {str(fusion.get('chain'))[:60]!r} in {str(fusion.get('dtype'))[:20]!r} is not the chain "
                f"the probe times ({rl.FUSION_CHAIN['text']!r}) in a dtype it knows"]
    if isinstance(fused, dict) and "unavailable" not in fused:
        found = [] if isinstance(match, bool) else ["fusion: the fused version was timed, but outputs_match does not "
                                                    "say whether its outputs matched the eager chain's"]
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
        return [f"measurements {len(measured)} shape(s) and predictions {len(predicted)}: each predicted shape has one "
                "measurement record, in the prediction's order"]
    return []


def summary_discrepancies(document: dict[str, Any]) -> list[str]:
    summary = document.get("summary", {})
    missing = [k for k in SUMMARY_KEYS if k not in summary] + ([] if any(k in summary for k in BEST_KEYS)
                                                                else [BEST_KEYS[0]])
    return [f"summary states no {', '.join(missing)} (the probe states every one)"] if missing else []


def discrepancies(document: dict[str, Any]) -> list[str]:
    return (roof_discrepancies(document) + fusion_discrepancies(document) + shape_discrepancies(document)
            + summary_discrepancies(document))
