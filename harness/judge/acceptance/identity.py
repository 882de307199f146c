"""Acceptance: the GPUs are the SKU being bought (from health's identification, else bandwidth's)."""

from __future__ import annotations

from harness import catalogue
from harness.analysis.verdict import Verdict
from harness.judge.acceptance.profile import Profile
from harness.judge.engine import Criterion, Result, Value
from harness.judge.facts import BundleFacts


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
            return [Result(name, title, Verdict.INCOMPLETE, None, threshold, "raw/health.json devices[]",
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


SKU_MATCHES_PROFILE = Criterion("sku_matches_profile", "The GPUs are the SKU being bought",
                                ("health", "bandwidth"), sku_matches_profile)
