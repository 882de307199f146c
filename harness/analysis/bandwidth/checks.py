"""Every figure a bandwidth document states, against its recomputation. Standard library only.

The raw data are each point's per-iteration times, its size, the kernel and the element type;
the byte count of every point is recomputed from the kernel's byte rule and the buffer size
(never taken from the stated `bytes_per_iteration`), and no figure of device memory may exceed the
datasheet bandwidth of the SKU re-identified from the document's PCI identity. The stated rule
parameters (plateau tolerance, spread limit, launch-bound factor, byte table) must be this
build's, since they decide the verdicts.
"""

from __future__ import annotations

import statistics
from typing import Any

from harness import catalogue
from harness.analysis.bandwidth import figures as bw
from harness.analysis.units import number_or_none
from harness.analysis.verdict import Verdict

DATASHEET_RULE = (
    "no measurement of device memory can exceed the SKU's published memory bandwidth: "
    "a figure above it means bytes were counted that were not moved"
)


def _stated(found: list[str], name: str, stated: Any, computed: Any, why: str = "") -> None:
    if bw.differs(stated, computed):
        found.append(f"{name}: states {stated!r}, recomputed {computed!r}" + (f" ({why})" if why else ""))


def _measurement(entry: Any) -> Any:
    """A known-good entry less its citation (`source`: where the catalogue of the build that made the
    bundle said the figure is written down, a text a later catalogue may move); the measurement itself
    (value, unit, kernel, setting, tool, date) must be the catalogue's."""
    return {k: v for k, v in entry.items() if k != "source"} if isinstance(entry, dict) else entry


def identified_sku(document: dict[str, Any]) -> str | None:
    """The SKU the catalogue gives for the document's PCI identity (None on a CPU or when unread)."""
    identity = document.get("device_identity")
    if not isinstance(identity, dict) or not isinstance(identity.get("pci_device_id"), str):
        return None
    return catalogue.identify(
        identity["pci_device_id"],
        number_or_none(identity.get("memory_total_mib")),
        number_or_none(identity.get("power_limit_w")),
    ).sku_id


def rule_discrepancies(document: dict[str, Any]) -> list[str]:
    """The byte counting and rules the document states (they decide its verdicts) against this build's,
    and how it was timed."""
    found: list[str] = []
    counting, kernel = document["byte_counting"], document["kernel"]
    spec = bw.KERNELS[kernel]
    _stated(found, "byte_counting.reads", counting.get("reads"), spec["reads"], f"the {kernel} kernel")
    _stated(found, "byte_counting.writes", counting.get("writes"), spec["writes"], f"the {kernel} kernel")
    _stated(
        found,
        "byte_counting.element_bytes",
        counting.get("element_bytes"),
        bw.ELEMENT_BYTES.get(document["dtype"]),
        f"one {document['dtype']} element",
    )
    table = {k: (v.get("reads"), v.get("writes")) for k, v in (counting.get("kernels") or {}).items()}
    if counting.get("kernels") is not None and table != {k: (v["reads"], v["writes"]) for k, v in bw.KERNELS.items()}:
        found.append(f"byte_counting.kernels: states {table}, this build's byte table is {bw.KERNELS}")
    _stated(found, "plateau.tolerance", document["plateau"].get("tolerance"), bw.PLATEAU_TOLERANCE, "this build's rule")
    _stated(
        found,
        "repeats.spread_max",
        document["repeats"].get("spread_max"),
        bw.REPEAT_SPREAD_MAX,
        bw.REPEAT_SPREAD_SOURCE,
    )
    _stated(
        found,
        "launch.launch_bound_factor",
        document["launch"].get("launch_bound_factor"),
        bw.LAUNCH_BOUND_FACTOR,
        "this build's rule",
    )
    for where, stated, rule in (
        ("byte_counting.rule", counting.get("rule"), bw.BYTE_RULE),
        ("launch.rule", document["launch"].get("rule"), bw.LAUNCH_RULE),
        ("launch.cache_rule", document["launch"].get("cache_rule"), bw.CACHE_RULE),
        ("plateau.rule", document["plateau"].get("rule"), bw.PLATEAU_RULE),
    ):
        if stated != rule:
            found.append(f"{where}: not the rule this build recomputes by")
    if counting.get("kernels") is None:
        found.append("byte_counting.kernels is missing: the byte table the verdicts are computed with")
    return found + _timing_discrepancies(document)


def _timing_discrepancies(document: dict[str, Any]) -> list[str]:
    """How the run was timed: a GPU's with CUDA events, every run naming its device, and from probe
    contract 2 on the empty launches kept, their median the stated empty_launch_s."""
    found: list[str] = []
    cuda = document.get("device") == "cuda"
    if (document.get("timing", {}).get("method") == "cuda_events") != cuda or "device_identity" not in document:
        found.append(
            f"device {document.get('device')!r} timed with {document.get('timing', {}).get('method')!r}, "
            f"device_identity {'present' if 'device_identity' in document else 'missing'}: a GPU run times "
            "with CUDA events, and every run says which device it measured (the datasheet limit's SKU)"
        )
    times = document["launch"].get("empty_launch_times_s")
    if document.get("contract_version", 1) >= 2 and not (isinstance(times, list) and times):
        found.append(
            "launch.empty_launch_times_s is missing: kept from probe contract 2 on, empty_launch_s is their median"
        )
    if isinstance(times, list) and times:  # kept from probe contract 2 on
        _stated(
            found,
            "launch.empty_launch_s",
            document["launch"].get("empty_launch_s"),
            statistics.median(times),
            "the median of empty_launch_times_s",
        )
    return found


def point_discrepancies(document: dict[str, Any], point: dict[str, Any], where: str) -> list[str]:
    """One timed point: its byte count from the kernel's rule and size, its times' summary, its marks."""
    found: list[str] = []
    element_bytes = bw.ELEMENT_BYTES.get(document["dtype"], 0)
    label = f"{where} {point['size_mib']:g} MiB"
    elements = int(point["size_mib"] * 2**20) // element_bytes if element_bytes else None
    _stated(
        found, f"{label} elements", point["elements"], elements, f"{point['size_mib']:g} MiB of {document['dtype']}"
    )
    buffer_bytes = point["elements"] * element_bytes
    _stated(found, f"{label} buffer_bytes", point["buffer_bytes"], buffer_bytes, "elements x element bytes")
    nbytes = bw.bytes_per_iteration(document["kernel"], buffer_bytes)
    _stated(found, f"{label} bytes_per_iteration", point["bytes_per_iteration"], nbytes, bw.BYTE_RULE)
    times = point["iteration_times_s"]
    median_s = statistics.median(times)
    _stated(found, f"{label} iterations", point["iterations"], len(times), "iteration_times_s holds that many")
    for key, value in (("median_s", median_s), ("min_s", min(times)), ("max_s", max(times))):
        _stated(found, f"{label} {key}", point.get(key), value, "from iteration_times_s")
    _stated(
        found,
        f"{label} median_gbps",
        point["median_gbps"],
        bw.gbps(nbytes, median_s),
        "the byte rule over the median of iteration_times_s",
    )
    cache, empty = (
        number_or_none(document["cache"].get("size_bytes")),
        number_or_none(document["launch"].get("empty_launch_s")),
    )
    marks, why = bw.classify(median_s, nbytes, cache, empty)
    _stated(found, f"{label} marks", point["marks"], marks, f"{bw.CACHE_RULE}; {bw.LAUNCH_RULE}")
    _stated(found, f"{label} why", point.get("why"), why)
    if "bytes_vs_cache" in point:  # documents before it was stated lack it
        _stated(found, f"{label} bytes_vs_cache", point["bytes_vs_cache"], nbytes / cache if cache else None)
    safe = number_or_none(document["memory"].get("largest_safe_size_mib"))
    if safe is not None and point["size_mib"] > safe * (1 + 1e-9):
        found.append(f"{label}: above the largest safe size {safe:g} MiB the probe allows")
    return found


def memory_discrepancies(document: dict[str, Any]) -> list[str]:
    found: list[str] = []
    memory, cache = document["memory"], document["cache"]
    if all(number_or_none(memory.get(k)) is not None for k in ("free_mib", "safe_fraction", "buffers")):
        _stated(
            found,
            "memory.largest_safe_size_mib",
            memory.get("largest_safe_size_mib"),
            memory["free_mib"] * memory["safe_fraction"] / memory["buffers"],
            "free x safe fraction / buffers",
        )
    if number_or_none(cache.get("size_bytes")) is not None:
        _stated(found, "cache.size_mib", cache.get("size_mib"), cache["size_bytes"] / 2**20)
    return found


def plateau_discrepancies(document: dict[str, Any]) -> list[str]:
    """The plateau, the maximum and each off-plateau explanation, from the recomputed points."""
    found: list[str] = []
    stated, points = document["plateau"], bw.recomputed_points(document)
    again = bw.plateau(points, stated.get("tolerance", bw.PLATEAU_TOLERANCE))
    sizes = again["sizes_mib"] if again["reached"] else []
    for key, value in (
        ("gbps", again["gbps"]),
        ("sizes_mib", sizes),
        ("reached", again["reached"]),
        ("why", again["why"]),
    ):
        _stated(found, f"plateau.{key}", stated.get(key), value)
    if points:
        top = max(points, key=lambda p: p["gbps"])
        maximum = stated.get("maximum") or {}
        _stated(found, "plateau.maximum.size_mib", maximum.get("size_mib"), top["size_mib"])
        _stated(found, "plateau.maximum.gbps", maximum.get("gbps"), top["gbps"])
    off = bw.explain_off_plateau(points, again["gbps"], sizes)
    _stated(found, "plateau.off_plateau", stated.get("off_plateau"), off)
    return found


def repeats_discrepancies(document: dict[str, Any]) -> list[str]:
    found: list[str] = []
    repeats, heads = document["repeats"], bw.headlines(document)
    _stated(found, "repeats.count", repeats.get("count"), len(repeats["runs"]))
    _stated(found, "repeats.size_mib", repeats.get("size_mib"), heads["repeat_size_mib"], "the largest run's size")
    largest = max((p["size_mib"] for p in document["sweep"]), default=None)
    if heads["repeat_size_mib"] is not None and largest is not None and heads["repeat_size_mib"] != largest:
        found.append(
            f"repeats at {heads['repeat_size_mib']:g} MiB, not the largest size swept ({largest:g} MiB): "
            "lab M1 step 3 repeats the largest safe size"
        )
    _stated(
        found,
        "repeats.medians_gbps",
        repeats.get("medians_gbps"),
        heads["repeat_medians_gbps"],
        "the median of each run's iteration_times_s",
    )
    _stated(
        found, "repeats.runs[].median_gbps", [r["median_gbps"] for r in repeats["runs"]], heads["repeat_medians_gbps"]
    )
    _stated(found, "repeats.spread", repeats.get("spread"), heads["repeat_spread"])
    _stated(found, "repeats.verdict", repeats.get("verdict"), heads["repeat_verdict"], bw.REPEAT_SPREAD_SOURCE)
    _stated(found, "repeats.trusted", repeats.get("trusted"), heads["repeat_verdict"] == Verdict.PASS)
    _stated(found, "repeats.diagnosis", repeats.get("diagnosis"), expected_diagnosis(document, heads["repeat_verdict"]))
    return found


def again_discrepancies(document: dict[str, Any]) -> list[str]:
    """Repeats measured again by this build's rule (bw.AGAIN_RULE, probe contract 6 on): the first
    round's figures recomputed from its times, measured again only when it disagreed, longer, and
    whenever it disagreed (or why not: repeats.again)."""
    found: list[str] = []
    repeats, heads = document["repeats"], bw.headlines(document)
    first, again = repeats.get("first_round"), repeats.get("again")
    if isinstance(first, dict):
        for index, run in enumerate(first["runs"]):
            found += point_discrepancies(document, run, f"repeats.first_round.runs[{index}]")
            if "bytes_vs_cache" not in run:  # a first round is of probe contract 6: every point states it
                found.append(f"repeats.first_round.runs[{index}]: bytes_vs_cache is missing")
        _stated(
            found, "repeats.first_round.medians_gbps", first.get("medians_gbps"), heads["repeat_first_medians_gbps"]
        )
        _stated(found, "repeats.first_round.spread", first.get("spread"), heads["repeat_first_spread"])
        verdict = bw.repeat_verdict(heads["repeat_first_spread"], repeats["spread_max"])
        _stated(found, "repeats.first_round.verdict", first.get("verdict"), verdict, bw.REPEAT_SPREAD_SOURCE)
        if verdict != Verdict.FAIL or again is None:
            found.append(
                "repeats.first_round: measured again although the first repeats agreed, or without repeats.again"
            )
        if len(first["runs"]) != len(repeats["runs"]) or not (heads["repeat_budget_s"] or 0) > first["repeat_budget_s"]:
            found.append("repeats.first_round: the repeats measured again are not as many, each longer")
    if isinstance(again, dict) and not isinstance(first, dict):
        if not str(again.get("why", "")).endswith("no budget left") or heads["repeat_verdict"] != Verdict.FAIL:
            found.append("repeats.again without repeats.first_round: only disagreeing repeats left for want of budget")
    if isinstance(again, dict):
        _stated(found, "repeats.again.rule", again.get("rule"), bw.AGAIN_RULE, "this build's rule")
        _stated(found, "repeats.again.factor", again.get("factor"), bw.AGAIN_FACTOR, "this build's rule")
    spread = heads["repeat_first_spread"] if isinstance(first, dict) else heads["repeat_spread"]
    disagreed = spread is not None and not bw.repeats_agree(spread, repeats["spread_max"])
    if document.get("contract_version", 1) >= bw.AGAIN_FROM and disagreed and again is None:
        found.append(
            "repeats: they varied by the spread limit or more, but were not measured again and repeats.again "
            f"does not say why (probe contract {bw.AGAIN_FROM} on: {bw.AGAIN_RULE})"
        )
    return found


def expected_diagnosis(document: dict[str, Any], verdict: str | None) -> dict[str, Any] | None:
    """What the probe diagnoses from its telemetry when the repeats disagree (nothing when they agree)."""
    if verdict != Verdict.FAIL:
        return None
    telemetry = document["repeats"].get("telemetry") or {}
    samples = telemetry.get("samples")
    if not isinstance(samples, list):
        reason = samples.get("unavailable") if isinstance(samples, dict) else "no telemetry"
        return {"causes": [], "summary": f"no telemetry to diagnose from ({reason})"}
    identity = document.get("device_identity")
    power = number_or_none(identity.get("power_limit_w")) if isinstance(identity, dict) else None
    return bw.diagnose(samples, telemetry.get("own_pids") or [], power)


def reference_discrepancies(document: dict[str, Any]) -> list[str]:
    found: list[str] = []
    ref, heads, sku = document["reference"], bw.headlines(document), identified_sku(document)
    identity = document.get("device_identity")
    if isinstance(identity, dict):
        _stated(
            found,
            "device_identity.sku_id",
            identity.get("sku_id"),
            sku,
            "the catalogue's SKU for the PCI device id, memory and power limit",
        )
        _stated(found, "reference.sku_id", ref.get("sku_id"), sku, "the re-identified SKU")
    known = ref.get("known_good")
    _stated(
        found,
        "reference.known_good_gbps",
        ref.get("known_good_gbps"),
        known.get("value") if isinstance(known, dict) else None,
    )
    compared = "--compare-sku" in (document.get("argv") or [])
    if sku and not compared:  # the catalogue's entry for the identified SKU, as the probe looked it up
        ok = catalogue.comparable(sku, sku)[0]
        listed = catalogue.by_id(sku) if ok else None  # as the probe looks it up (probes/bandwidth/device.py)
        entry = catalogue.primary_known_good(listed, "hbm_bandwidth", kernel=document["kernel"]) if listed else None
        _stated(found, "reference.comparable", ref.get("comparable"), ok, f"catalogue {sku}")
        _stated(
            found,
            "reference.known_good",
            _measurement(known),
            _measurement(entry),
            f"catalogue {sku}, kernel {document['kernel']}",
        )
    elif not sku and (ref.get("comparable") or known is not None):
        found.append("reference: a known-good result compared, but no SKU was identified to compare within")
    _stated(found, "reference.known_good_ratio", number_or_none(ref.get("known_good_ratio")), heads["known_good_ratio"])
    spec = number_or_none(ref.get("spec_gbps"))
    plateau = heads["plateau_gbps"]
    _stated(
        found,
        "reference.spec_ratio",
        number_or_none(ref.get("spec_ratio")),
        plateau / spec if plateau is not None and spec else None,
    )
    if str(ref.get("spec_source", "")).startswith("catalogue") and sku:
        _stated(found, "reference.spec_gbps", spec, catalogue.datasheet_bandwidth_gbps(sku), f"catalogue {sku}")
    elif str(ref.get("spec_source", "")).startswith("none") and spec is not None:
        found.append(f"reference.spec_gbps {spec} although spec_source says there is none")
    sizes = [p.get("size_mib") for p in document["sweep"]]
    if sizes != sorted(set(sizes)):
        found.append("sweep: its sizes must increase, each once")
    return found


def datasheet_discrepancies(document: dict[str, Any]) -> list[str]:
    """Figures of device memory above the identified SKU's datasheet bandwidth."""
    sku = identified_sku(document)
    limit = catalogue.datasheet_bandwidth_gbps(sku)
    if limit is None:
        return []
    heads = bw.headlines(document)
    figures = [("plateau.gbps", heads["plateau_gbps"])]
    figures += [(f"repeats.runs[{i}] median", value) for i, value in enumerate(heads["repeat_medians_gbps"])]
    figures += [
        (f"sweep {p['size_mib']:g} MiB", p["gbps"])
        for p in bw.recomputed_points(document)
        if "cache_resident" not in p["marks"]
    ]  # a cache may outrun the memory
    return [
        f"{name}: {value:.0f} GB/s is above the {limit:g} GB/s datasheet figure for {sku} ({DATASHEET_RULE})"
        for name, value in figures
        if value is not None and value > limit
    ]


def discrepancies(document: dict[str, Any]) -> list[str]:
    """Where the document's stated figures differ from the recomputation from its raw times."""
    found = rule_discrepancies(document) + memory_discrepancies(document)
    for point in document["sweep"]:
        found += point_discrepancies(document, point, "sweep")
    for index, run in enumerate(document["repeats"]["runs"]):
        found += point_discrepancies(document, run, f"repeats.runs[{index}]")
    return (
        found
        + plateau_discrepancies(document)
        + repeats_discrepancies(document)
        + again_discrepancies(document)
        + reference_discrepancies(document)
        + datasheet_discrepancies(document)
    )
