"""Why an all-reduce's normal curve and its NCCL_P2P_DISABLE=1 control differ (harness.analysis.allreduce.figures
p2p_gap measures the gap): the links nvidia-smi reports, the transports NCCL's log names and the PCIe
link's ceiling, each claim with its source."""

from __future__ import annotations

from typing import Any

from harness.analysis.allreduce.figures import CURVES

# PCIe per-lane data rate per direction after line encoding, GB/s (PCI-SIG base specs:
# Gen1/2 8b/10b at 2.5/5 GT/s; Gen3-5 128b/130b at 8/16/32 GT/s; Gen6 64 GT/s PAM4 FLIT ~242/256).
PCIE_LANE_GBPS = {
    1: 0.25,
    2: 0.5,
    3: 8 * 128 / 130 / 8,
    4: 16 * 128 / 130 / 8,
    5: 32 * 128 / 130 / 8,
    6: 64 * 242 / 256 / 8,
}


def pcie_ceiling_gbps(generation: Any, width: Any) -> float | None:
    """Theoretical per-direction PCIe bandwidth for a link, or None when unknown."""
    if isinstance(generation, int) and isinstance(width, int) and generation in PCIE_LANE_GBPS:
        return PCIE_LANE_GBPS[generation] * width
    return None


def explain_gap(
    gap: dict[str, Any], links: dict[str, Any], transports: dict[str, Any], pcie: dict[str, Any]
) -> dict[str, Any]:
    """Sentences tying the measured gap to the topology evidence; every claim names its source.

    links: {"kinds": ["NV18", ...] or [], "reason"?}; transports: {"normal": [...], "p2p_disabled": [...]}
    (from NCCL's INIT log); pcie: {"generation", "width"} of the GPUs' links.
    """
    if not gap.get("compared"):
        return {"explained": False, "reason": gap.get("reason", "no comparison")}
    sentences = [
        f"At {gap['at_bytes']} bytes and world size {gap['world_size']}, busbw is "
        f"{gap['normal_busbw_gbps']:.3g} GB/s normally and {gap['p2p_disabled_busbw_gbps']:.3g} GB/s "
        f"with NCCL_P2P_DISABLE=1 (ratio {gap['busbw_ratio']:.3g}x)."
    ]
    kinds = links.get("kinds") or []
    nvlink = [k for k in kinds if k.startswith("NV")]
    if nvlink:
        sentences.append(
            f"nvidia-smi topo -m links the ranks' GPUs by {', '.join(sorted(set(nvlink)))} "
            "(bonded NVLinks), which NCCL uses for peer-to-peer copies in the normal curve."
        )
    elif kinds:
        sentences.append(
            f"nvidia-smi topo -m links the ranks' GPUs through PCIe ({', '.join(sorted(set(kinds)))}), "
            "no NVLink between them."
        )
    else:
        sentences.append(f"GPU-to-GPU links unknown: {links.get('reason', 'no topology matrix')}.")
    for curve in CURVES:
        found = transports.get(curve) or []
        if found:
            sentences.append(f"NCCL's log shows {curve} channels via {', '.join(sorted(set(found)))}.")
    if any(t.startswith("SHM") for t in transports.get("p2p_disabled") or []):
        sentences.append(
            "With P2P disabled NCCL stages every chunk through shared host memory: each byte "
            "crosses PCIe twice (GPU to host, host to GPU) and host memory bandwidth is shared."
        )
    ceiling = pcie_ceiling_gbps(pcie.get("generation"), pcie.get("width"))
    if ceiling is not None:
        sentences.append(
            f"PCIe Gen{pcie['generation']} x{pcie['width']} carries at most ~{ceiling:.0f} GB/s per "
            "direction (PCI-SIG line rate after encoding)."
        )
        if gap["normal_busbw_gbps"] > ceiling:
            sentences.append(
                f"The normal busbw ({gap['normal_busbw_gbps']:.3g} GB/s) exceeds that ceiling, so the "
                "normal traffic cannot be going over PCIe alone."
            )
        if gap["p2p_disabled_busbw_gbps"] <= ceiling:
            sentences.append(
                f"The control's busbw ({gap['p2p_disabled_busbw_gbps']:.3g} GB/s) is within it, "
                "consistent with traffic forced through host memory over PCIe."
            )
    return {"explained": True, "pcie_ceiling_gbps": ceiling, "text": " ".join(sentences)}
