"""Acceptance: the GPUs are the SKU being bought (from health's identification, else bandwidth's).

A profile `dossier baseline` made also carries the GPUs' identity as its input bundles recorded it
(PCI device ids and memory size, the keys DCGM's per-SKU diagnostic configuration is matched by):
a GPU the catalogue does not know is the SKU when it matches that identity."""

from __future__ import annotations

from harness import catalogue
from harness.judge.acceptance.criteria import Judging
from harness.judge.acceptance.profile import Profile
from harness.judge.engine import Criterion, Result, Value
from harness.judge.facts import BundleFacts


def sku_matches_profile(facts: BundleFacts, profile: Profile) -> list[Result]:
    name, title = "sku_matches_profile", f"The GPUs are the SKU being bought: {profile.name} ({profile.form_factor})"
    threshold = Value(profile.sku_id, "SKU id", f"every GPU identified as {profile.sku_id}")
    health = facts.figures("health")
    if health.values is not None:
        devices = health.values.get("devices") or []
        evidence = (
            f"{facts.output('health')} devices[].pci_device_id, memory_total_mib, "
            "power.default_limit_w (re-identified with the catalogue)"
        )
        found = [(f"GPU{d.get('index')} {d.get('name')}", d.get("sku_id")) for d in devices]
    else:
        bandwidth = facts.figures("bandwidth")
        if bandwidth.values is None:
            return [
                Judging(name, title, "raw/health.json devices[]").incomplete(
                    f"{health.why}; {bandwidth.why}", threshold=threshold
                )
            ]
        evidence = f"{facts.output('bandwidth')} reference.sku_id (health did not complete: {health.why})"
        found = [(f"the {bandwidth.values.get('device')} device", bandwidth.values.get("sku_id"))]
    if not found:
        return [
            Judging(name, title, evidence).failed(
                "the bundle lists no GPU: it was not measured on the hardware being bought",
                Value(None, "SKU id", "no GPU"),
                threshold,
            )
        ]
    measured = Value(
        ", ".join(sorted({str(s) for _, s in found})),
        "SKU id",
        "; ".join(f"{label}: {sku or 'not identified'}" for label, sku in found),
    )
    matched = _matches_identity(facts, profile) if health.present else set()
    wrong = [(label, sku) for label, sku in found if sku != profile.sku_id and label not in matched]
    if not wrong:
        how = (
            f" ({', '.join(sorted(matched))} by the profile's identity: {identity_text(profile.identity)})"
            if matched
            else ""
        )
        return [
            Judging(name, title, evidence).passed(
                f"{len(found)} GPU(s), all {profile.sku_id}{how}", measured, threshold
            )
        ]
    reasons = []
    for label, sku in wrong:
        _, why = catalogue.comparable(sku, profile.sku_id)
        reasons.append(f"{label}: {why}" if sku else f"{label}: not identified as any catalogue SKU")
    return [Judging(name, title, evidence).failed("; ".join(reasons), measured, threshold)]


SKU_MATCHES_PROFILE = Criterion(
    "sku_matches_profile", "The GPUs are the SKU being bought", ("health", "bandwidth"), sku_matches_profile
)


def identity_text(identity) -> str:
    memory = identity.get("memory_total_mib")
    return f"PCI device id {', '.join(identity.get('pci_device_ids') or [])}" + (
        f", {memory:.0f} MiB" if isinstance(memory, (int, float)) else ""
    )


def _matches_identity(facts: BundleFacts, profile: Profile) -> set[str]:
    """Labels of the GPUs whose PCI device id and memory size match the profile's identity: only for a SKU
    the catalogue lacks (a catalogued SKU is the catalogue's identification, whatever a profile says)."""
    if catalogue.by_id(profile.sku_id) is not None:
        return set()
    identity = profile.identity or {}
    ids = {catalogue.normalise_device_id(i) for i in identity.get("pci_device_ids") or []}
    memory = identity.get("memory_total_mib")
    if not ids or not isinstance(memory, (int, float)):
        return set()
    raw = {d.get("uuid"): d for d in (facts.document("health") or {}).get("devices") or [] if isinstance(d, dict)}
    matched = set()
    for device in (facts.figures("health").values or {}).get("devices") or []:
        record = raw.get(device.get("uuid")) or {}
        pci, mib = record.get("pci_device_id"), record.get("memory_total_mib")
        if not isinstance(pci, (str, int)) or not isinstance(mib, (int, float)):
            continue
        if catalogue.normalise_device_id(pci) in ids and abs(mib - memory) <= catalogue.MEMORY_TOLERANCE * memory:
            matched.add(f"GPU{device.get('index')} {device.get('name')}")
    return matched
