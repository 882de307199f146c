"""How far each headline figure moves between separate dossiers, and which figures are noisy.

Standard library (and the catalogue) only. Three spreads appear in a bundle, each over a different
distance (the report names which one every figure carries):
- within one run: a roofline shape's spread across its timed windows (tens of milliseconds apart),
  the bandwidth probe's spread across its three repeats (seconds apart, one process);
- run to run: one figure across separate dossiers (separate processes, machine starts), measured
  per SKU and kept in the catalogue (harness/data/gpus.json `run_to_run`, with its source). This is
  the one that says what the next run will read, and the floor of any tolerance that compares two
  bundles (`dossier reproduce`, baselines).

At run time `dossier run` records the SKU's run-to-run block in the bundle (commands.json
`repeatability`, made by `declaration`): every measured figure with its kind, its kind's bound, its
spread, its source, and `noisy` (true when the spread exceeds the bound) with why. The report
renders it from the bundle alone, and a later catalogue does not change what a bundle declared.

Figure ids (the catalogue's `repeatability.figure_ids`): PROBE.FIGURE, e.g. bandwidth.plateau_gbps,
stress.steady_tflops, transfer.pinned.host_to_device_gbps, roofline.bf16.burst_best_tflops,
roofline.bf16.square-256.tflops; an entry's figure may hold * (fnmatch), and an exact id wins.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from harness import catalogue

KINDS = ("steady", "burst", "launch_bound")
STEADY_CALL_S = 1e-3  # a GEMM of 1 ms or more a call is a steady-state figure (issue 30's kinds)


def roofline_kind(per_call_s: float, launch_bound: bool) -> str:
    """A roofline shape's figure kind: launch-bound (an eager call under 20 us), steady (1 ms or more),
    else a burst."""
    if launch_bound:
        return "launch_bound"
    return "steady" if per_call_s >= STEADY_CALL_S else "burst"


def declaration(sku_id: str | None) -> dict[str, Any]:
    """What a bundle records at run time: the SKU's run-to-run spreads from the catalogue, each against its
    kind's bound, noisy or not; or why there is nothing to record."""
    if not sku_id:
        return {"unavailable": "no GPU SKU was identified in this run, so no run-to-run measurement applies"}
    measured = catalogue.run_to_run(sku_id)
    if not measured:
        return {"unavailable": f"the catalogue has no run-to-run measurement for {sku_id} yet"}
    rules = catalogue.repeatability_bounds()
    bounds = rules.get("bounds", {})
    figures = []
    for entry in measured["figures"]:
        bound = bounds.get(entry["kind"], {}).get("max_spread")
        noisy = bound is not None and entry["spread"] > bound
        row = {**entry, "bound": bound, "noisy": noisy}
        if noisy and "why" not in row:
            row["why"] = "no cause recorded in the catalogue"
        figures.append(row)
    return {"sku_id": sku_id, "catalogue_version": catalogue.load().get("catalogue_version"),
            "spread": rules.get("spread"), "bounds": bounds, "bounds_source": rules.get("source"),
            "figure_ids": rules.get("figure_ids"), "sources": measured["sources"], "figures": figures}


def lookup(record: Any, figure_id: str) -> dict[str, Any] | None:
    """The declared entry for FIGURE_ID: an exact id first, else the first pattern that matches."""
    if not isinstance(record, Mapping) or not isinstance(record.get("figures"), list):
        return None
    entries = [e for e in record["figures"] if isinstance(e, Mapping) and isinstance(e.get("figure"), str)]
    exact = next((e for e in entries if e["figure"] == figure_id), None)
    return exact or next((e for e in entries if fnmatch.fnmatchcase(figure_id, e["figure"])), None)


def noisy(record: Any) -> list[dict[str, Any]]:
    """The declared figures whose run-to-run spread exceeds their kind's bound."""
    return [e for e in (record.get("figures") or []) if isinstance(e, Mapping) and e.get("noisy") is True] \
        if isinstance(record, Mapping) else []


def noisy_note(record: Any, figure_id: str) -> str:
    """"" for a figure not declared noisy; else what a verdict on it must say: its run-to-run spread, its
    bound and why (acceptance appends it to the criterion's why)."""
    entry = lookup(record, figure_id)
    if entry is None or entry.get("noisy") is not True:
        return ""
    return (f"; declared noisy in this bundle: {entry['spread']:.2%} run to run over its {entry['bound']:.0%} "
            f"{entry['kind']} bound ({entry.get('why')}), so a result this close to the threshold may not repeat")


def tolerance_floor(record: Any, figure_id: str) -> tuple[float | None, str]:
    """The smallest tolerance a comparison of FIGURE_ID across two runs may use: its declared run-to-run
    spread (None when the bundle declares none), and where that came from."""
    entry = lookup(record, figure_id)
    if entry is None:
        why = record.get("unavailable") if isinstance(record, Mapping) and "unavailable" in record else \
            f"no run-to-run spread declared for {figure_id}"
        return None, str(why)
    source = (record.get("sources") or {}).get(entry.get("source"), {})
    return entry["spread"], (f"{entry['figure']}: {entry['spread']:.2%} over {source.get('runs', '?')} dossiers "
                             f"({source.get('machine', '?')}, {source.get('date', '?')}, commit "
                             f"{source.get('commit', '?')})")


def bundle_sku(documents: Mapping[str, Any]) -> str | None:
    """The one SKU a run's GPUs were identified as: health's devices, else the bandwidth or roofline step's
    identification; None when unidentified or when the GPUs differ."""
    health = documents.get("health")
    if isinstance(health, Mapping):
        from harness.analysis import health as health_analysis
        try:
            ids = {d.get("sku_id") for d in health_analysis.headlines(dict(health)).get("devices") or []}
        except Exception:  # noqa: BLE001 - an unreadable health document identifies nothing
            ids = set()
        if len(ids) == 1 and None not in ids:
            return ids.pop()
        if len(ids) > 1:
            return None
    for step, path in (("bandwidth", ("reference", "sku_id")), ("roofline", ("device_facts", "sku_id"))):
        value: Any = documents.get(step)
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, str):
            return value
    return None
