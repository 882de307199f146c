"""How far each headline figure moves between separate dossiers, and which figures are noisy.

Standard library (and the catalogue) only. Three spreads appear in a bundle, each over a different
distance (the report names which one every figure carries):
- within one run: a roofline shape's spread across its timed windows (tens of milliseconds apart),
  the bandwidth probe's spread across its three repeats (seconds apart, one process);
- run to run: one figure across separate dossiers (separate processes, machine starts), measured
  per SKU and kept in the catalogue (harness/data/gpus.json `run_to_run`, with its source): issue 30's
  spreads, against each kind's bound.

At run time `dossier run` records the SKU's run-to-run block in the bundle (commands.json
`repeatability`, made by `declaration`): every measured figure with its kind, its kind's bound, its
spread, its source, and `noisy` (true when the spread exceeds the bound) with why. The report
renders it from the bundle alone, and a later catalogue does not change what a bundle declared.

Figure ids (the catalogue's `repeatability.figure_ids`): PROBE.FIGURE, e.g. bandwidth.plateau_gbps,
stress.steady_tflops, transfer.h2d_pinned_gbps, roofline.bf16.burst_best_tflops,
roofline.bf16.square-256.tflops (a shape's headline: kernel-only for a launch-bound shape from probe
contract 4 on), roofline.bf16.square-256.eager_tflops (beside a kernel-only headline: the host's launch
rate); an entry's figure may hold * (fnmatch), and an exact id wins.

The noise a verdict is judged with is harness.analysis.noise's (a SKU's noise campaign and the verdict
rule): this block says which figures the catalogue declares noisy, and why, in every bundle.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from harness import catalogue

UNIDENTIFIED = "no GPU SKU was identified in this run, so no run-to-run measurement applies"


def declaration(sku_id: str | None) -> dict[str, Any]:
    """What a bundle records at run time: the SKU's run-to-run spreads from the catalogue, each against its
    kind's bound, noisy or not; or why there is nothing to record."""
    if not sku_id:
        return {"unavailable": UNIDENTIFIED}
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
    return {
        "sku_id": sku_id,
        "catalogue_version": catalogue.load().get("catalogue_version"),
        "spread": rules.get("spread"),
        "bounds": bounds,
        "bounds_source": rules.get("source"),
        "figure_ids": rules.get("figure_ids"),
        "sources": measured["sources"],
        "figures": figures,
    }


def _unavailable_discrepancies(why: Any, sku_id: str | None) -> list[str]:
    """An unavailable block says why in `declaration`'s words for the SKU the documents identify."""
    expected = UNIDENTIFIED if sku_id is None else f"the catalogue has no run-to-run measurement for {sku_id} yet"
    return (
        []
        if why == expected
        else [
            f"repeatability: unavailable ({str(why)[:80]!r}), but for the SKU the documents "
            f"identify ({sku_id}) `dossier run` records {expected!r}"
        ]
    )


def _figure_discrepancies(record: Mapping[str, Any]) -> list[str]:
    """Each declared figure against the block's bounds and sources: its kind's bound, noisy exactly when
    its spread exceeds the bound (with why), a campaign the block names, each figure once."""
    bounds, sources = record.get("bounds") or {}, record.get("sources") or {}
    figures = [f for f in record.get("figures") or [] if isinstance(f, Mapping)]
    found = (
        [] if len({f.get("figure") for f in figures}) == len(figures) else ["repeatability: a figure is declared twice"]
    )
    for entry in figures:
        kind_bound = (bounds.get(entry.get("kind")) or {}).get("max_spread") if isinstance(bounds, Mapping) else None
        spread, bound, noisy = entry.get("spread"), entry.get("bound"), entry.get("noisy")
        over = isinstance(bound, (int, float)) and isinstance(spread, (int, float)) and spread > bound
        if (
            bound != kind_bound
            or noisy is not over
            or (noisy and not entry.get("why"))
            or entry.get("source") not in sources
        ):
            found.append(
                f"repeatability: figure {str(entry.get('figure'))[:60]}: bound {bound}, noisy {noisy} at spread "
                f"{spread}, source {str(entry.get('source'))[:40]!r}; its kind {entry.get('kind')}'s bound is "
                f"{kind_bound}, noisy means over it (with why), and the source must be one the block names"
            )
    return found


def declaration_discrepancies(record: Any, documents: Mapping[str, Any]) -> list[str]:
    """commands.json's `repeatability` (RECORD; None: not recorded, which the bundle's format rules judge)
    against the bundle's DOCUMENTS: the SKU they identify (`bundle_sku`); recorded with this build's
    catalogue version, exactly what `declaration` gives for it; with another (an older catalogue, whose
    spreads are that catalogue's), each figure against the block's own bounds and sources. A catalogue
    newer than this build's cannot be checked here: update rig-dossier."""
    if record is None:
        return []
    sku_id = bundle_sku(documents)
    if not isinstance(record, Mapping):
        return ["repeatability is not an object"]
    if "unavailable" in record:
        return _unavailable_discrepancies(record["unavailable"], sku_id)
    if record.get("sku_id") != sku_id:
        return [f"repeatability: sku_id {str(record.get('sku_id'))[:40]!r}, but the documents identify {sku_id}"]
    version, mine = record.get("catalogue_version"), catalogue.load().get("catalogue_version")
    if version == mine:
        again = declaration(sku_id)
        return (
            []
            if dict(record) == again
            else [
                f"repeatability differs from what catalogue version {mine} declares for "
                f"{sku_id} (harness.analysis.repeatability.declaration)"
            ]
        )
    if isinstance(version, int) and isinstance(mine, int) and version > mine:
        return [f"repeatability: catalogue version {version}, newer than this build's ({mine}): update rig-dossier"]
    return _figure_discrepancies(record)


def lookup(record: Any, figure_id: str) -> Mapping[str, Any] | None:
    """The declared entry for FIGURE_ID: an exact id first, else the first pattern that matches."""
    if not isinstance(record, Mapping) or not isinstance(record.get("figures"), list):
        return None
    entries = [e for e in record["figures"] if isinstance(e, Mapping) and isinstance(e.get("figure"), str)]
    exact = next((e for e in entries if e["figure"] == figure_id), None)
    return exact or next((e for e in entries if fnmatch.fnmatchcase(figure_id, e["figure"])), None)


def noisy(record: Any) -> list[Mapping[str, Any]]:
    """The declared figures whose run-to-run spread exceeds their kind's bound."""
    return (
        [e for e in (record.get("figures") or []) if isinstance(e, Mapping) and e.get("noisy") is True]
        if isinstance(record, Mapping)
        else []
    )


def noisy_note(record: Any, figure_id: str) -> str:
    """ "" for a figure not declared noisy; else what a verdict on it must say: its run-to-run spread, its
    bound and why (acceptance appends it to the criterion's why)."""
    entry = lookup(record, figure_id)
    if entry is None or entry.get("noisy") is not True:
        return ""
    return (
        f"; declared noisy in this bundle: {entry['spread']:.2%} run to run over its {entry['bound']:.0%} "
        f"{entry['kind']} bound ({entry.get('why')}), so a result this close to the threshold may not repeat"
    )


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


def bundle_identity(documents: Mapping[str, Any], cpu_model: Any) -> tuple[tuple[Any, ...], str, str | None]:
    """What a run's figures were measured on, as (a key two runs compare by, the same in words, its SKU id):
    the GPUs health lists (their SKUs, or names where the catalogue has none), else the GPU the bandwidth
    step identified, else the CPU (CPU_MODEL, the host's) where the run found no GPU."""
    sku_id = bundle_sku(documents)
    health = documents.get("health")
    devices: list[Any] = []
    if isinstance(health, Mapping):
        from harness.analysis import health as health_analysis

        try:
            devices = [
                d for d in health_analysis.headlines(dict(health)).get("devices") or [] if isinstance(d, Mapping)
            ]
        except Exception:  # noqa: BLE001 - an unreadable health document identifies nothing
            devices = []
    if devices:
        names = sorted({f"{d.get('name')} ({d.get('sku_id') or 'not in the catalogue'})" for d in devices})
        return (
            ("gpu", tuple(sorted({str(d.get("sku_id") or d.get("name")) for d in devices}))),
            f"{len(devices)} x {', '.join(names)}",
            sku_id,
        )
    bandwidth = documents.get("bandwidth")
    device = bandwidth.get("device") if isinstance(bandwidth, Mapping) else None
    if device == "cuda":
        return ("gpu", (sku_id,)), f"GPU {sku_id or 'of unknown SKU'} (the bandwidth step's)", sku_id
    if device == "cpu" or isinstance(health, Mapping):
        return ("cpu", cpu_model), f"the CPU, no GPU ({cpu_model or 'model not recorded'})", None
    return ("unknown",), "not recorded (neither health nor bandwidth completed)", None
