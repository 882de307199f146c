"""The links a transfer crosses: theoretical rates, the ratio explained, degraded links, broken P2P.

Standard library only: the transfer probe states these figures and `dossier verify` recomputes
them from the document's own NVML facts and topology.

PCIe per-lane rates after line encoding are harness.analysis.allreduce.gap.PCIE_LANE_GBPS (PCI-SIG
base specifications). NVLink per-link rates per NVML version code are in NVLINK_PER_LINK_GBPS
with their source. Every threshold is a named constant with the reason for its value.
"""

from __future__ import annotations

from typing import Any

from harness.analysis.allreduce.gap import PCIE_LANE_GBPS, pcie_ceiling_gbps
from harness.analysis.topology import link_kind

# PCIe raw signalling per lane, GT/s (PCI-SIG base specifications 1.0 .. 6.0).
PCIE_GT_PER_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
PCIE_ENCODING = {1: "8b/10b", 2: "8b/10b", 3: "128b/130b", 4: "128b/130b", 5: "128b/130b", 6: "PAM4 FLIT (242/256)"}
# What TLP framing costs at a 256-byte max payload (assumed: GPUs and root ports commonly
# negotiate 256 B; this build does not read the negotiated value). Gen3+ TLP: 4 B framing token
# (STP, with the sequence number) + 16 B header (4DW, 64-bit addresses) + 4 B LCRC = 24 B.
PCIE_ASSUMED_MAX_PAYLOAD_BYTES = 256
PCIE_TLP_OVERHEAD_BYTES = 24
PCIE_TLP_EFFICIENCY = PCIE_ASSUMED_MAX_PAYLOAD_BYTES / (PCIE_ASSUMED_MAX_PAYLOAD_BYTES + PCIE_TLP_OVERHEAD_BYTES)
PCIE_SOURCE = (
    "PCI-SIG base specifications: GT/s per lane and line encoding per generation "
    "(harness.analysis.allreduce.PCIE_LANE_GBPS); TLP overhead 24 B per 256 B payload assumed"
)

# NVML version code (nvmlDeviceGetNvLinkVersion, nvml.h NVML_NVLINK_VERSION_*) -> (name, GB/s per
# link per direction). From NVIDIA's per-GPU NVLink totals (both directions) and link counts:
# P100 160 GB/s over 4 links, V100 300 over 6, A100 600 over 12, H100/H200 900 over 18,
# Blackwell 1800 over 18 (NVIDIA NVLink and NVSwitch page; DGX-1 V100 whitepaper).
NVLINK_PER_LINK_GBPS: dict[int, tuple[str, float]] = {
    1: ("1.0", 20.0),
    2: ("2.0", 25.0),
    4: ("3.0", 25.0),
    6: ("4.0", 25.0),
    7: ("5.0", 50.0),
}
NVLINK_VERSION_NAMES = {1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0", 8: "6.0"}
NVLINK_SOURCE = (
    "NVIDIA NVLink/NVSwitch page: per-GPU NVLink bandwidth (both directions) over its link "
    "count (P100 160/4, V100 300/6, A100 600/12, H100 900/18, Blackwell 1800/18), halved per "
    "direction. GA102 boards (3rd-generation NVLink bridge) run 14.0625 GB/s per link instead."
)

# A measured rate under this share of what the reported link allows is a degraded link. Source:
# healthy pinned copies on the lent H200's Gen5 x16 measure 0.878 of the encoded rate (nvbandwidth
# v0.8 host_to_device_memcpy_ce 55.26 GB/s of 63.0, 2026-11-29); a link running one generation
# lower or at half its lanes while still reporting the full link delivers at most half, ~0.44.
DEGRADED_LINK_FRACTION = 0.6
DEGRADED_LINK_SOURCE = (
    "healthy H200 Gen5 x16: 0.878 of the encoded rate (nvbandwidth v0.8, 2026-11-29); "
    "half the lanes or one generation lower: <= 0.5 x that, ~0.44"
)
# A measured rate above the reported link's encoded ceiling by more than this cannot have crossed
# that link: the reading is wrong or another path carries the copy.
EXCEEDS_TOLERANCE = 0.05


def pcie_link(facts: Any) -> dict[str, Any] | None:
    """{generation, width, max_generation, max_width} from health-style pcie facts, or None."""
    if not isinstance(facts, dict):
        return None
    gen, width = facts.get("current_gen"), facts.get("current_width")
    if not (isinstance(gen, int) and isinstance(width, int) and gen in PCIE_LANE_GBPS):
        return None
    max_gen, max_width = facts.get("max_gen"), facts.get("max_width")
    return {
        "generation": gen,
        "width": width,
        "max_generation": max_gen if isinstance(max_gen, int) else None,
        "max_width": max_width if isinstance(max_width, int) else None,
    }


def pcie_rates(generation: int, width: int) -> dict[str, float]:
    """Raw, encoded and after-TLP per-direction rates of a PCIe link, GB/s."""
    raw = PCIE_GT_PER_S[generation] * width / 8
    encoded = pcie_ceiling_gbps(generation, width)
    assert encoded is not None  # a generation PCIE_GT_PER_S knows (raw, above) has its lane rate
    return {"raw_gbps": raw, "encoded_gbps": encoded, "after_tlp_gbps": encoded * PCIE_TLP_EFFICIENCY}


def pcie_explanation(generation: int, width: int) -> str:
    rates = pcie_rates(generation, width)
    return (
        f"PCIe Gen{generation} x{width}: {PCIE_GT_PER_S[generation]:g} GT/s x {width} lanes = "
        f"{rates['raw_gbps']:.1f} GB/s raw per direction; {PCIE_ENCODING[generation]} line encoding leaves "
        f"{rates['encoded_gbps']:.1f} GB/s (the ceiling used for the ratio); TLP framing, headers and CRC "
        f"({PCIE_TLP_OVERHEAD_BYTES} B per {PCIE_ASSUMED_MAX_PAYLOAD_BYTES} B payload, assumed) leave about "
        f"{rates['after_tlp_gbps']:.1f}, and flow-control/ACK packets and read-completion splitting a few "
        f"percent more, so a healthy link measures about 85-90% of the ceiling."
    )


def nvlink_ceiling(links: Any, version_code: Any) -> tuple[float | None, str]:
    """(per-direction GB/s, why) for `links` bonded NVLinks of NVML version `version_code`."""
    if not isinstance(links, int) or links <= 0:
        return None, f"NVLink count unknown ({links})"
    if not isinstance(version_code, int):
        return None, f"NVLink version unreadable ({version_code})"
    if version_code not in NVLINK_PER_LINK_GBPS:
        name = NVLINK_VERSION_NAMES.get(version_code, f"code {version_code}")
        return None, f"no published per-link rate known to this build for NVLink {name}"
    name, per_link = NVLINK_PER_LINK_GBPS[version_code]
    total = per_link * links
    return total, (
        f"{links} NVLink {name} links x {per_link:g} GB/s per link per direction = {total:g} GB/s "
        f"per direction; flit headers and CRC leave about 85-90% for data"
    )


def ratio_sentence(rate: float | None, ceiling: float | None, what: str, basis: str) -> str:
    if rate is None:
        return f"{what}: no rate to compare ({basis})"
    if ceiling is None:
        return f"{what}: {rate:.4g} GB/s ({basis}); no theoretical rate to compare"
    return f"{what}: {rate:.4g} GB/s ({basis}) is {rate / ceiling:.3f} of the {ceiling:.4g} GB/s ceiling"


# --- the degraded-link rule ---------------------------------------------------------------------


def check_link(gpu: dict[str, Any], rates: dict[str, float | None]) -> dict[str, Any]:
    """Degraded / inconsistent / ok / unknown for one GPU's PCIe link.

    gpu: a document's gpus[] entry (pcie.under_copy, else pcie.idle); rates: the pinned alone
    host-to-device and device-to-host figures {"host_to_device": GB/s or None, ...}.
    """
    facts = gpu["pcie"].get("under_copy")
    link = pcie_link(facts) or pcie_link(gpu["pcie"].get("idle"))
    read = "while copies ran" if pcie_link(facts) else "at idle"
    if link is None:
        return {
            "gpu": gpu["torch_index"],
            "status": "unknown",
            "ceiling_gbps": None,
            "reasons": ["NVML gave no PCIe generation and width for this GPU"],
        }
    ceiling = pcie_ceiling_gbps(link["generation"], link["width"])
    assert ceiling is not None  # pcie_link gives only a generation with a known lane rate
    degraded, inconsistent = [], []
    if link["max_width"] and link["width"] < link["max_width"]:
        degraded.append(
            f"NVML reports the link at x{link['width']} of its x{link['max_width']} ({read}): trained below its width"
        )
    if link["max_generation"] and link["generation"] < link["max_generation"]:
        degraded.append(
            f"NVML reports Gen{link['generation']} of its Gen{link['max_generation']} ({read}): "
            "trained below its generation"
        )
    named = f"Gen{link['generation']} x{link['width']}"
    for direction, rate in sorted(rates.items()):
        if rate is None:
            continue
        share = rate / ceiling
        if share < DEGRADED_LINK_FRACTION:
            degraded.append(
                f"{direction} pinned {rate:.4g} GB/s is {share:.3f} of the {ceiling:.4g} GB/s "
                f"{named} allows (< {DEGRADED_LINK_FRACTION:g}): slower than the reported link"
            )
        elif share > 1 + EXCEEDS_TOLERANCE:
            inconsistent.append(
                f"{direction} pinned {rate:.4g} GB/s exceeds the {ceiling:.4g} GB/s {named} "
                "allows: NVML's link reading is not the path this copy crossed"
            )
    compared = any(rate is not None for rate in rates.values())
    status = "degraded" if degraded else "inconsistent" if inconsistent else "ok" if compared else "unknown"
    reasons = degraded + inconsistent or (
        [
            f"{named}, every pinned rate within "
            f"[{DEGRADED_LINK_FRACTION:g}, {1 + EXCEEDS_TOLERANCE:g}] x "
            f"{ceiling:.4g} GB/s"
        ]
        if compared
        else ["no pinned host copies measured on this GPU"]
    )
    return {"gpu": gpu["torch_index"], "status": status, "ceiling_gbps": ceiling, "reasons": reasons}


# --- the broken-P2P rule ------------------------------------------------------------------------


def check_pair(
    a: int, b: int, cell: Any, access: dict[str, Any], nvml_p2p: Any, peer_rate: float | None, nvlink_gbps: float | None
) -> dict[str, Any]:
    """ok / broken_p2p / degraded / no_p2p / unknown for one GPU pair (torch indices a < b).

    cell: the nvidia-smi topo -m cell between them ('NV18', 'PHB', ...) or None; access:
    {"a->b": bool or unavailable, "b->a": ...}; nvml_p2p: NVML's {"nvlink": "ok", ...} or None;
    peer_rate: the slowest measured one-direction peer plateau (GB/s) or None.
    """
    kind = link_kind(cell) if isinstance(cell, str) else {"kind": "unknown", "cell": cell}
    refused = [key for key, value in sorted(access.items()) if value is False]
    label = f"GPU{a}-GPU{b}"
    if kind["kind"] == "nvlink":
        reasons = [
            f"cudaDeviceCanAccessPeer says no for {key.replace('->', ' to ')}, although nvidia-smi topo -m "
            f"reports {cell} between them: peer copies would be staged through host memory"
            for key in refused
        ]
        status_nvlink = nvml_p2p.get("nvlink") if isinstance(nvml_p2p, dict) else None
        if isinstance(status_nvlink, str) and status_nvlink != "ok":
            reasons.append(f"NVML's NVLink P2P status is {status_nvlink} on a {cell} topology")
        if reasons:
            return {"pair": label, "cell": cell, "status": "broken_p2p", "reasons": reasons}
        if peer_rate is not None and nvlink_gbps and peer_rate < DEGRADED_LINK_FRACTION * nvlink_gbps:
            return {
                "pair": label,
                "cell": cell,
                "status": "degraded",
                "reasons": [
                    f"peer copies reach {peer_rate:.4g} GB/s, {peer_rate / nvlink_gbps:.3f} of the "
                    f"{nvlink_gbps:.4g} GB/s {cell} allows (< {DEGRADED_LINK_FRACTION:g})"
                ],
            }
        return {"pair": label, "cell": cell, "status": "ok", "reasons": [f"{cell}; peer access granted both ways"]}
    if kind["kind"] == "pcie":
        if refused:
            return {
                "pair": label,
                "cell": cell,
                "status": "no_p2p",
                "reasons": [
                    f"no peer access over PCIe ({cell}): copies go through host memory; not a fault "
                    "by itself (many PCIe platforms and consumer GPUs refuse P2P)"
                ],
            }
        return {"pair": label, "cell": cell, "status": "ok", "reasons": [f"PCIe ({cell}); peer access granted"]}
    return {
        "pair": label,
        "cell": cell,
        "status": "unknown",
        "reasons": [f"no nvidia-smi topo -m link between them to judge peer access by ({cell})"],
    }
