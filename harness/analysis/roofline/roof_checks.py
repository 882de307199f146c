"""A roofline document's roofs against their source: on a CPU each measured roof from its own recorded
times (the copy, the GEMM trials), and a compute roof said to come from the catalogue against the
catalogue's dense figure. Standard library only (`checks` says each roof's evidence is there)."""

from __future__ import annotations

from typing import Any

from harness import catalogue
from harness.analysis.roofline import checks as roofline_checks
from harness.analysis.roofline import reading, timings


def cpu_roof_discrepancies(document: dict[str, Any]) -> list[str]:
    """On a CPU the probe measures the roofs it was not given: each from its own recorded times."""
    measured, roofs = document.get("cpu_roofs"), document.get("roofs", {})
    if not isinstance(measured, dict):
        return []
    found = []
    if "copy_times_s" in measured:
        seconds = timings.median_of(measured["copy_times_s"])
        copy = 2 * measured["copy_buffer_mib"] * 2**20 / seconds / 1e9 if seconds else None
        if reading.differs(measured.get("copy_gbps"), copy):
            found.append(f"cpu_roofs.copy_gbps {measured.get('copy_gbps')} != {copy} (from copy_times_s)")
        if str(roofs.get("bandwidth_source", "")).startswith(roofline_checks.MEASURED) and reading.differs(
            roofs.get("bandwidth_gbps"), copy
        ):
            found.append(f"roofs.bandwidth_gbps {roofs.get('bandwidth_gbps')} is not the copy measured here ({copy})")
    trials = measured.get("gemm_trials")
    if isinstance(trials, list) and trials:
        for trial in trials:
            median = timings.median_of(trial.get("times_s"))  # the times are kept from probe contract 2 on
            if median is not None and reading.differs(trial["median_s"], median):
                found.append(
                    f"cpu_roofs.gemm_trials[{trial['size']}].median_s {trial['median_s']} but the median "
                    f"of its times_s is {median}"
                )
            rate = 2 * trial["size"] ** 3 / trial["median_s"] / 1e12
            if reading.differs(trial.get("tflops"), rate):
                found.append(f"cpu_roofs.gemm_trials[{trial['size']}].tflops {trial.get('tflops')} != {rate}")
        best = max(trials, key=lambda t: 2 * t["size"] ** 3 / t["median_s"])
        rate = 2 * best["size"] ** 3 / best["median_s"] / 1e12
        if reading.differs(measured.get("gemm_peak_tflops"), rate) or measured.get("gemm_peak_size") != best["size"]:
            found.append(
                f"cpu_roofs.gemm_peak_tflops {measured.get('gemm_peak_tflops')} at "
                f"{measured.get('gemm_peak_size')} is not the best trial ({rate} at {best['size']})"
            )
        if str(roofs.get("peak_source", "")).startswith(roofline_checks.MEASURED) and reading.differs(
            roofs.get("peak_tflops"), rate
        ):
            found.append(f"roofs.peak_tflops {roofs.get('peak_tflops')} is not the GEMM peak measured here ({rate})")
    return found


def catalogue_peak_discrepancies(document: dict[str, Any]) -> list[str]:
    """A compute roof the document says came from the catalogue is the catalogue's dense figure."""
    roofs, sku_id = document.get("roofs", {}), document.get("device_facts", {}).get("sku_id")
    if not str(roofs.get("peak_source", "")).startswith("catalogue") or not isinstance(sku_id, str):
        return []
    peak = ((catalogue.by_id(sku_id) or {}).get("published", {}).get("dense_tflops", {})).get(document.get("dtype"))
    if reading.differs(roofs.get("peak_tflops"), peak):
        return [
            f"roofs.peak_tflops {roofs.get('peak_tflops')} but the catalogue's dense {document.get('dtype')} "
            f"figure for {sku_id} is {peak}"
        ]
    return []
