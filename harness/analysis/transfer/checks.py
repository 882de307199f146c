"""A transfer document's stated parts, all of them, against what the probe states from its raw parts
(issue 28).

Standard library only. The probe measures raw per-copy times and reads NVML facts; `state_figures`
then writes every stated part from them (each point's median, rate, marks and why; each series'
plateau, latency and link with its explanation; each group's totals and overlap; the link and P2P
verdicts with their reasons). The probe calls it to write the document and verify calls it to
check one: the whole stated part recomputed and compared, so no stated field is left unchecked
by being forgotten in a list. Besides: the rules and byte rule stated are this build's, the sizes
every point was copied at are the stated sizes, the copy counts keep to the stated bounds, the
device and timing method agree, series ids are unique and the groups name real ones, and what is
said to have been measured (peer, all GPUs, NUMA) was.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from harness.analysis.transfer import figures as analysis
from harness.analysis.transfer import links as link_rules
from harness.analysis.transfer import series as series_rules

LARGE_COUNT = 3  # peer, all-GPU and NUMA copies use the largest sizes only (their plateau)
GB_BYTES = 10**9


def rules() -> dict[str, Any]:
    """The rules a transfer document states, as this build judges them."""
    return {
        "plateau_tolerance": series_rules.PLATEAU_TOLERANCE,
        "plateau": series_rules.PLATEAU_RULE,
        "latency_max_bytes": series_rules.LATENCY_MAX_BYTES,
        "latency_bound_factor": series_rules.LATENCY_BOUND_FACTOR,
        "latency": series_rules.LATENCY_RULE,
        "cache_resident": series_rules.CACHE_RULE,
        "degraded_link_fraction": link_rules.DEGRADED_LINK_FRACTION,
        "degraded_link_source": link_rules.DEGRADED_LINK_SOURCE,
        "exceeds_tolerance": link_rules.EXCEEDS_TOLERANCE,
        "pcie_source": link_rules.PCIE_SOURCE,
        "nvlink_source": link_rules.NVLINK_SOURCE,
    }


def byte_counting() -> dict[str, Any]:
    return {"rule": series_rules.BYTE_RULE, "gb_bytes": GB_BYTES}


def state_figures(document: dict[str, Any]) -> dict[str, Any]:
    """Fill every series', group's and verdict's stated figures from the raw per-copy times."""
    figures = analysis.all_series_figures(document)
    for series in document["series"]:
        fig = figures[series["id"]]
        by_bytes = {p["bytes"]: p for p in fig["points"]}
        for point in series["points"]:
            computed = by_bytes[point["bytes"]]
            point.update(
                median_s=computed["median_s"], gbps=computed["gbps"], marks=computed["marks"], why=computed["why"]
            )
        link = fig["link"]
        series.update(
            plateau=fig["plateau"],
            latency=fig["latency"],
            link={
                **link,
                "explanation": link["explanation"].rstrip(".")
                + ". "
                + link_rules.ratio_sentence(link["rate_gbps"], link["ceiling_gbps"], series["id"], link["rate_basis"]),
            },
        )
    for group in document["groups"]:
        computed = analysis.group_figures(group, figures)
        group["total_plateau_gbps"] = computed["total_plateau_gbps"]
        for entry, again in zip(group["per_size"], computed["per_size"], strict=True):
            entry.update(total_gbps=again["total_gbps"], overlap=again["overlap"])
    document["link_checks"] = analysis.link_checks(document, figures)
    document["p2p_checks"] = analysis.p2p_checks(document, figures)
    return document


def _differences(path: str, stated: Any, again: Any) -> list[str]:
    if stated == again:  # equal trees differ nowhere: compared at C speed, most of a document at once
        return []
    if isinstance(stated, dict) and isinstance(again, dict):
        return [
            line
            for key in sorted(set(stated) | set(again), key=str)
            for line in _differences(f"{path}.{key}", stated.get(key, "(absent)"), again.get(key, "(absent)"))
        ]
    if isinstance(stated, list) and isinstance(again, list) and len(stated) == len(again):
        return [
            line
            for i, (a, b) in enumerate(zip(stated, again, strict=True))
            for line in _differences(f"{path}[{i}]", a, b)
        ]
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (stated, again))
    if (
        numbers
        and not (isinstance(stated, int) and isinstance(again, int))
        and math.isclose(stated, again, rel_tol=analysis.REL_TOL, abs_tol=1e-15)
    ):
        return []
    return (
        []
        if stated == again
        else [f"{path.lstrip('.')}: states {str(stated)[:120]}, the raw copies give {str(again)[:120]}"]
    )


def stated_discrepancies(document: dict[str, Any]) -> list[str]:
    """Every stated part of the document against `state_figures` of its raw parts."""
    return _differences("", document, state_figures(copy.deepcopy(document)))


def _sizes_discrepancies(document: dict[str, Any]) -> list[str]:
    sizes, large = document.get("sizes_bytes", []), document.get("large_sizes_bytes", [])
    found = []
    if sizes != sorted(set(sizes)) or large != sizes[-LARGE_COUNT:]:
        found.append(
            f"sizes_bytes {sizes} must be sorted and distinct, large_sizes_bytes {large} their largest {LARGE_COUNT}"
        )
    timing = document.get("timing", {})
    for series in document.get("series", []):
        alone = (
            series.get("concurrency") in ("alone", "bidirectional")
            and series.get("numa_placement") == "default"
            and series.get("direction") != "device_to_device_peer"
        )
        allowed = sizes if alone else large
        copied = [p.get("bytes") for p in series.get("points", [])]
        if copied != sorted(set(copied)) or not set(copied) <= set(allowed):
            found.append(
                f"series {series.get('id')}: copied at {copied}, not sizes of {'sizes' if alone else 'large_sizes'}"
                f"_bytes in order"
            )
        for point in series.get("points", []):
            if not timing.get("min_copies", 0) <= point.get("copies", 0) <= timing.get("max_copies", math.inf):
                found.append(
                    f"series {series.get('id')} {point.get('bytes')} B: {point.get('copies')} copies, outside "
                    f"timing's [{timing.get('min_copies')}, {timing.get('max_copies')}]"
                )
    return found


def _measured_discrepancies(document: dict[str, Any]) -> list[str]:
    series, found = document.get("series", []), []
    ids = [s.get("id") for s in series]
    if len(ids) != len(set(ids)):
        found.append("series ids repeat")
    groups = [g.get("id") for g in document.get("groups", [])]
    if len(groups) != len(set(groups)):
        found.append("group ids repeat")
    by_id = {s.get("id"): s for s in series}
    for group in document.get("groups", []):
        named = [s.get("group") for s in series if s.get("id") in group.get("members", [])]
        if not group.get("members") or len(named) != len(group["members"]) or set(named) != {group.get("id")}:
            found.append(f"group {group.get('id')}: its members {group.get('members')} are not series of this group")
            continue
        together = [e.get("bytes") for e in group.get("per_size", [])]
        if any(together != [p.get("bytes") for p in by_id[m].get("points", [])] for m in group["members"]):
            found.append(f"group {group.get('id')}: per_size at {together}, not the sizes its members were copied at")
    grouped = {s.get("group") for s in series if s.get("group") is not None}
    if grouped != {g.get("id") for g in document.get("groups", [])}:
        found.append("series name groups that the document does not hold, or a group has no series")
    said = {
        "peer": any(s.get("direction") == "device_to_device_peer" for s in series),
        "all_gpus": any(s.get("concurrency") == "all_gpus" for s in series),
        "numa": any(s.get("numa_placement") != "default" for s in series),
    }
    for key, measured in said.items():
        if (document.get(key) or {}).get("measured") != measured:
            found.append(
                f"{key}.measured {(document.get(key) or {}).get('measured')}, but the series "
                f"{'hold' if measured else 'hold no'} such copies"
            )
    cuda = document.get("device") == "cuda"
    if bool(document.get("gpus")) != cuda or (document.get("timing", {}).get("method") == "cuda_events") != cuda:
        found.append(
            f"device {document.get('device')!r}, {len(document.get('gpus', []))} GPU(s), timed with "
            f"{document.get('timing', {}).get('method')!r}: a GPU run times copies with CUDA events"
        )
    return found


def series_id(series: dict[str, Any]) -> str | None:
    """The id the probe gives a series of these labels (None for labels it never combines)."""
    # labels are any JSON: a value no map below knows finds None
    direction: Any = series.get("direction")
    concurrency: Any = series.get("concurrency")
    memory, gpu, placement = series.get("memory"), series.get("gpu"), series.get("numa_placement")
    short = analysis.SHORT.get(direction)
    if direction == "host_to_host":
        return "host/copy"
    if direction == "device_to_device_peer":
        return (
            f"peer/{series.get('peer_mode')}/{series.get('src_gpu')}->{series.get('dst_gpu')}"
            if concurrency == "alone"
            else None
        )
    if direction == "device_local":
        return f"gpu{gpu}/local"
    if short is None:
        return None
    if placement != "default":
        return f"gpu{gpu}/numa-{placement}/{short}"
    return {
        "alone": f"gpu{gpu}/{short}/{memory}",
        "bidirectional": f"gpu{gpu}/bidirectional/{short}/{memory}",
        "all_gpus": f"all-gpus/{short}/gpu{gpu}",
    }.get(concurrency)


def _series_discrepancies(document: dict[str, Any]) -> list[str]:
    """Each series' labels against its id; the pinned copies of every GPU (never skipped) present."""
    found, ids = [], {s.get("id") for s in document.get("series", [])}
    for series in document.get("series", []):
        expected = series_id(series)
        if expected is not None and series.get("id") != expected:
            found.append(
                f"series {series.get('id')}: its labels (direction, memory, GPU, concurrency, placement) "
                f"make it {expected}"
            )
    required = [
        f"gpu{g.get('torch_index')}/{short}/pinned" for g in document.get("gpus", []) for short in ("h2d", "d2h")
    ]
    if document.get("device") == "cpu":
        required = ["host/copy"]
    missing = [sid for sid in required if sid not in ids]
    if missing:
        found.append(f"series {missing} missing: the probe measures them on every run (no --skip leaves them out)")
    return found


def _gpu_discrepancies(document: dict[str, Any]) -> list[str]:
    found = []
    for position, gpu in enumerate(document.get("gpus", [])):
        nvlink = gpu.get("nvlink") if isinstance(gpu.get("nvlink"), dict) else {}
        links = nvlink.get("links")
        if isinstance(links, list) and nvlink.get("active_links") != sum(
            1 for link in links if link.get("active") is True
        ):
            found.append(
                f"gpus[{position}].nvlink.active_links {nvlink.get('active_links')}, but "
                f"{sum(1 for link in links if link.get('active') is True)} of its links are active"
            )
        code = nvlink.get("version_code")
        if isinstance(code, int) and nvlink.get("version") != link_rules.NVLINK_VERSION_NAMES.get(code):
            found.append(
                f"gpus[{position}].nvlink.version {nvlink.get('version')!r}, but NVML's version code {code} "
                f"is NVLink {link_rules.NVLINK_VERSION_NAMES.get(code)}"
            )
    return found


def record_discrepancies(document: dict[str, Any]) -> list[str]:
    """The rules and byte rule against this build's, and the raw records against each other."""
    found = [] if document.get("rules") == rules() else ["rules differ from the rules this build judges transfers by"]
    if document.get("byte_counting") != byte_counting():
        found.append("byte_counting differs from the byte rule this build counts with")
    return (
        found
        + _sizes_discrepancies(document)
        + _measured_discrepancies(document)
        + _series_discrepancies(document)
        + _gpu_discrepancies(document)
    )
