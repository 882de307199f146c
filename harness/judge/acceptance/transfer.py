"""Acceptance: the links measured by the transfer probe (issue 17).

Rates: the slowest GPU's pinned host-to-device and device-to-host plateaus, both directions at
once summed at the largest size (nvbandwidth's convention; harness.analysis.transfer), and
the slowest peer read over an NVLink pair (judged only where `nvidia-smi topo -m` reports NV#
between GPUs), each against the stated share of the SKU's known-good nvbandwidth figure. Faults:
a degraded link (NVML reports its width or generation below its maximum while copies run, or a
pinned copy far under what the reported link allows) and broken P2P (peer access refused where
the topology reports NVLink) fail, with the analysis' reasons. Every figure comes from
harness.analysis.transfer.headlines, recomputed from the raw per-copy times.
"""

from __future__ import annotations

from typing import Any

from harness.analysis.transfer import links as link_rules
from harness.analysis.transfer.declared import TRANSFER, nvlink_pairs
from harness.analysis.units import number_or_none
from harness.judge.acceptance.criteria import Judging, at_least, fmt, share_threshold
from harness.judge.acceptance.profile import Profile
from harness.judge.engine import Criterion, Result, Value
from harness.judge.facts import BundleFacts

STEP = "transfer"
SHARE_KEY = "transfer_min_share"
# The known-good figures the transfer rates are shares of (the registry's transfer entry brings them).
# criterion name -> (per-GPU headline key, known-good direction, what it is, nvbandwidth's test)
HOST_RATES = {
    "transfer_h2d_pinned": (
        "h2d_pinned_gbps",
        "host_to_device",
        "host-to-device copies from pinned memory",
        "host_to_device_memcpy_ce",
    ),
    "transfer_d2h_pinned": (
        "d2h_pinned_gbps",
        "device_to_host",
        "device-to-host copies to pinned memory",
        "device_to_host_memcpy_ce",
    ),
    "transfer_bidirectional_pinned": (
        "bidirectional_total_pinned_gbps",
        "bidirectional_total",
        "both directions at once (pinned), summed at the largest size measured",
        "the two *_bidirectional_memcpy_ce tests summed",
    ),
}
LABELS = {  # each rate in a few words, as report.md names it beside its known-good
    "transfer_h2d_pinned": "host-to-device copy, pinned",
    "transfer_d2h_pinned": "device-to-host copy, pinned",
    "transfer_bidirectional_pinned": "both directions at once, pinned",
}
BAD_LINK = ("degraded", "inconsistent")
BAD_PAIR = ("broken_p2p", "degraded")


def _gpu_figures(facts: BundleFacts) -> tuple[dict[str, Any] | None, str]:
    """(the transfer headlines, '') or (None, why no GPU figure exists)."""
    t = facts.figures(STEP)
    if t.values is None:
        return None, t.why or "no transfer figures"
    if t.values.get("device") != "cuda":
        return None, ("the transfer step copied host memory on the CPU (no GPU): no PCIe or NVLink was measured")
    return t.values, ""


def _host_rate(name: str, facts: BundleFacts, profile: Profile) -> Result:
    key, direction, what, tool_test = HOST_RATES[name]
    title = f"Transfers: {what} reach the stated share of a known-good unit (slowest GPU)"
    evidence = f"{facts.output(STEP)} series[].points[].copy_times_s (plateaus recomputed by harness.analysis.transfer)"
    judging = Judging(name, title, evidence)
    heads, why = _gpu_figures(facts)
    share, reference = profile.share(SHARE_KEY, direction), profile.known(TRANSFER).get(direction)
    threshold = (
        share_threshold(share, reference, "GB/s", f"nvbandwidth {tool_test}", LABELS[name])
        if share and reference
        else None
    )
    if heads is None:
        return judging.incomplete(why, threshold=threshold)
    if threshold is None or reference is None:  # (no threshold without a reference)
        missing = f"no {SHARE_KEY}" if not share else f"no known-good transfer figure for {direction}"
        return judging.incomplete(f"the profile for {profile.sku_id} states {missing}; a profile file can add it")
    per_gpu = {gpu: figures for gpu, figures in sorted(heads["per_gpu"].items()) if gpu != "host"}
    if not any(key in figures for figures in per_gpu.values()):
        return judging.incomplete(
            f"the transfer step did not measure {what} (see its sizing and --skip)", threshold=threshold
        )
    together = key.startswith("bidirectional_total")
    no_plateau = [gpu for gpu, figures in per_gpu.items() if key in figures and number_or_none(figures[key]) is None]
    if no_plateau and together:
        return judging.failed(
            f"GPU {', '.join(no_plateau)}: no size has both directions' rates",
            Value(None, "GB/s", "never measured together"),
            threshold,
        )
    if no_plateau:
        return judging.failed(
            f"GPU {', '.join(no_plateau)}: the sweep reached no plateau, so no sustained rate to judge",
            Value(None, "GB/s", "no plateau reached"),
            threshold,
        )
    rates = {gpu: figures[key] for gpu, figures in per_gpu.items() if key in figures}
    slowest = min(rates, key=rates.__getitem__)
    rate = rates[slowest]
    every = ", ".join(f"GPU {gpu} {fmt(value)}" for gpu, value in rates.items())
    basis = (
        f"summed at {per_gpu[slowest].get(key.removesuffix('_gbps') + '_at_bytes', 0) / 2**20:g} MiB"
        if together
        else "plateau"
    )
    measured = Value(
        rate, "GB/s", f"{fmt(rate)} GB/s (GPU {slowest}, {basis}; {every}), {rate / reference.value:.1%} of known-good"
    )
    return at_least(name, title, measured, threshold, evidence)


def host_rates(facts: BundleFacts, profile: Profile) -> list[Result]:
    return [_host_rate(name, facts, profile) for name in HOST_RATES]


def peer_read(facts: BundleFacts, profile: Profile) -> list[Result]:
    """One result where the topology reports NVLink between measured GPUs; none otherwise."""
    name = "transfer_peer_read"
    title = "Transfers: peer reads over NVLink reach the stated share of a known-good system"
    evidence = (
        f"{facts.output(STEP)} series[] with direction device_to_device_peer, peer_mode read "
        "(plateaus recomputed by harness.analysis.transfer); topology.gpu_pairs"
    )
    judging = Judging(name, title, evidence)
    heads, _ = _gpu_figures(facts)
    if heads is None or not nvlink_pairs(heads):
        return []  # no NVLink between measured GPUs: nothing to hold to an NVLink figure
    share, reference = profile.share(SHARE_KEY, "peer_read"), profile.known(TRANSFER).get("peer_read")
    if not share or reference is None:
        return [
            judging.incomplete(f"the profile for {profile.sku_id} states no {SHARE_KEY} or known-good peer_read figure")
        ]
    threshold = share_threshold(
        share, reference, "GB/s", "nvbandwidth device_to_device_memcpy_read_ce", "peer read over NVLink, slowest pair"
    )
    cells = heads["peer"]["read"]
    rates, missing = {}, []
    for a, b in nvlink_pairs(heads):
        for key in (f"{a}->{b}", f"{b}->{a}"):
            plateau = number_or_none((cells.get(key) or {}).get("plateau_gbps"))
            if plateau is None:
                missing.append(key)
            else:
                rates[key] = plateau
    if missing:
        return [
            judging.failed(
                f"no peer read plateau for {', '.join(missing)} although the topology "
                f"reports NVLink ({heads['peer'].get('why')})",
                Value(None, "GB/s", "not measured for every NVLink pair"),
                threshold,
            )
        ]
    slowest = min(rates, key=rates.__getitem__)
    rate = rates[slowest]
    measured = Value(
        rate,
        "GB/s",
        f"{fmt(rate)} GB/s (GPU {slowest.replace('->', ' to ')}, plateau; "
        f"{len(rates)} NVLink direction(s)), {rate / reference.value:.1%} of known-good",
    )
    return [at_least(name, title, measured, threshold, evidence)]


def links(facts: BundleFacts, profile: Profile) -> list[Result]:
    """Every GPU's PCIe link: trained to its maximum, and carrying what it reports."""
    name, title = "transfer_links", "Transfers: every GPU's host link is neither degraded nor inconsistent with NVML"
    evidence = (
        f"{facts.output(STEP)} gpus[].pcie.under_copy (NVML, read while copies ran) and the pinned "
        "copies' plateaus (rule: harness.analysis.transfer.links.check_link)"
    )
    judging = Judging(name, title, evidence)
    heads, why = _gpu_figures(facts)
    if heads is None:
        return [judging.incomplete(why)]
    checks = heads["link_checks"]
    threshold = Value(
        link_rules.DEGRADED_LINK_FRACTION,
        "fraction",
        f"width and generation at their maximum; pinned copies at least "
        f"{link_rules.DEGRADED_LINK_FRACTION:g} and at most {1 + link_rules.EXCEEDS_TOLERANCE:g} of the "
        f"reported link's ceiling ({link_rules.DEGRADED_LINK_SOURCE})",
    )
    summary = "; ".join(f"GPU {c['gpu']} {c['status']}: {' '.join(c['reasons'])}" for c in checks)
    measured = Value(", ".join(f"GPU {c['gpu']} {c['status']}" for c in checks), "status", summary)
    bad = [c for c in checks if c["status"] in BAD_LINK]
    if bad:
        return [
            judging.failed(
                "; ".join(f"GPU {c['gpu']} {c['status']}: {' '.join(c['reasons'])}" for c in bad), measured, threshold
            )
        ]
    if not checks or all(c["status"] == "unknown" for c in checks):
        return [judging.incomplete(summary or "no GPU link checked", measured, threshold)]
    return [judging.passed(summary, measured, threshold)]


def p2p(facts: BundleFacts, profile: Profile) -> list[Result]:
    """Every GPU pair (two or more GPUs measured): peer access where the topology reports NVLink."""
    name, title = "transfer_p2p", "Transfers: peer access works wherever the topology reports NVLink (no broken P2P)"
    evidence = (
        f"{facts.output(STEP)} peer.access (cudaDeviceCanAccessPeer), topology.gpu_pairs (nvidia-smi topo "
        "-m), topology.nvml_p2p (rule: harness.analysis.transfer.links.check_pair)"
    )
    judging = Judging(name, title, evidence)
    heads, _ = _gpu_figures(facts)
    if heads is None or not heads["p2p_checks"]:
        return []  # fewer than two GPUs measured: no pair to judge
    checks = heads["p2p_checks"]
    summary = "; ".join(f"{c['pair']} ({c['cell']}) {c['status']}: {' '.join(c['reasons'])}" for c in checks)
    measured = Value(", ".join(f"{c['pair']} {c['status']}" for c in checks), "status", summary)
    threshold = Value(
        "ok",
        "status",
        "peer access granted both ways on every NV# pair, peer copies at least "
        f"{link_rules.DEGRADED_LINK_FRACTION:g} of the NVLink ceiling",
    )
    bad = [c for c in checks if c["status"] in BAD_PAIR]
    if bad:
        return [
            judging.failed(
                "; ".join(f"{c['pair']} {c['status']}: {' '.join(c['reasons'])}" for c in bad), measured, threshold
            )
        ]
    if all(c["status"] == "unknown" for c in checks):
        return [judging.incomplete(summary, measured, threshold)]
    return [judging.passed(summary, measured, threshold)]


HOST_RATES_CRITERION = Criterion(
    "transfer_host_rates", "Host transfers reach the stated share of a known-good unit", (STEP,), host_rates
)
PEER_READ = Criterion(
    "transfer_peer_read", "Peer reads over NVLink reach the stated share of a known-good system", (STEP,), peer_read
)
LINKS = Criterion("transfer_links", "No degraded host link", (STEP,), links)
P2P = Criterion("transfer_p2p", "No broken P2P", (STEP,), p2p)
CRITERIA = (LINKS, P2P, HOST_RATES_CRITERION, PEER_READ)
