"""The transfer probe's figures, declared once (harness.analysis.figure): each GPU's pinned host copies, one
direction at a time, and its peer copies decide (the links); both directions at once, pageable copies and
the device-local copy inform."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.analysis.figure import DECIDES, INFORMS, Accept, Figure, Fleet, KnownGood
from harness.analysis.transfer.figures import headlines

TRANSFER = KnownGood("transfer_gbps", "transfer", "direction", "GB/s", "{} transfer")
# The pinned copies acceptance holds to a known-good unit: per-GPU key -> (its criterion, its known-good key).
ACCEPTED = {
    "h2d_pinned_gbps": ("transfer_h2d_pinned", "host_to_device"),
    "d2h_pinned_gbps": ("transfer_d2h_pinned", "device_to_host"),
    "bidirectional_total_pinned_gbps": ("transfer_bidirectional_pinned", "bidirectional_total"),
}
CRITERION_OF = {direction: criterion for criterion, direction in ACCEPTED.values()}
WHY = {
    "bidirectional": "both directions at once share the host's memory and its root complex: the halves trade "
    "bandwidth from run to run (their sum moved 93.3-100.9 GB/s over seven runs on one H200, 2026-12-01); "
    "each direction alone decides the link",
    "pageable": "a pageable copy goes through a staging buffer the host's CPU fills: it measures the host",
    "local": "a copy-engine copy within the GPU's memory: the bandwidth plateau decides HBM",
    "host": "a CPU run's host-memory copy: no link was crossed",
}


def _why(key: str, gpu: str) -> str | None:
    """Why a per-GPU rate informs, or None: it decides."""
    if gpu == "host":
        return WHY["host"]
    for word in ("bidirectional", "pageable", "local"):
        if word in key:
            return WHY[word]
    return None


def _rates(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(gpuN.KEY or host.KEY, the rate) for every per-GPU plateau of the document's recomputed headlines: each
    series alone, both directions at once (each half and their sum at the largest size), pageable and pinned,
    the device-local copy; each measured under the run's time per size (the document's timing)."""
    heads = headlines(document)
    budget = (document.get("timing") or {}).get("point_budget_s")
    found = []
    for gpu, figures in (heads.get("per_gpu") or {}).items():
        who = "host" if gpu == "host" else f"gpu{gpu}"
        for key, value in figures.items():
            if key.endswith("_gbps") and key != "pcie_ceiling_gbps":
                at = figures.get(key.removesuffix("_gbps") + "_at_bytes")
                conditions: dict[str, Any] = {"point_budget_s": budget}
                if at is not None:
                    conditions["at_bytes"] = at
                why = _why(key, str(gpu))
                found.append(
                    (
                        f"{who}.{key}",
                        {"key": key, "value": value, "conditions": conditions, "why": why},
                    )
                )
    return found


def _peer(heads: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(peer.MODE.A->B, the cell) for every peer copy measured alone."""
    peer = heads.get("peer") or {}
    return [
        (f"peer.{mode}.{pair}", {"mode": mode, **cell})
        for mode in ("write", "read")
        for pair, cell in (peer.get(mode) or {}).items()
        if isinstance(cell, dict)
    ]


def nvlink_pairs(heads: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(a, b) torch indices of every pair `nvidia-smi topo -m` joins by NV#."""
    pairs = []
    for check in heads["p2p_checks"]:
        if isinstance(check.get("cell"), str) and check["cell"].startswith("NV"):
            a, b = check["pair"].removeprefix("GPU").split("-GPU")
            pairs.append((a, b))
    return pairs


def _nvlink_reads(heads: Mapping[str, Any]) -> dict[str, Any]:
    """{"peer_read": the slowest read over NVLink pairs}, when every such pair was measured."""
    cells = (heads.get("peer") or {}).get("read") or {}
    reads = [
        (cells.get(key) or {}).get("plateau_gbps") for a, b in nvlink_pairs(heads) for key in (f"{a}->{b}", f"{b}->{a}")
    ]
    measured = [r for r in reads if isinstance(r, (int, float))]
    if reads and len(measured) == len(reads):
        return {"peer_read": min(measured)}
    return {}


def _slowest_rate(key: str) -> Any:
    def read(document: dict[str, Any]) -> Any:
        values = [f.get(key) for gpu, f in (headlines(document).get("per_gpu") or {}).items() if gpu != "host"]
        values = [v for v in values if isinstance(v, (int, float))]
        return min(values) if values else None

    return read


FIGURES = (
    Figure(
        "transfer {}",
        "GB/s",
        lambda item: item["value"],
        role=lambda item: INFORMS if item["why"] else DECIDES,
        noise_class=lambda item: (
            "host" if item["why"] in (WHY["pageable"], WHY["host"], WHY["bidirectional"]) else "link"
        ),
        why=lambda item: item["why"] or "",
        each=_rates,
        figure="transfer.{}",
        kind="steady",
        noise=lambda item: f"transfer.{item['key']}",
        conditions=lambda item: item["conditions"],
        source="document",
        fleet=(
            Fleet(
                "transfer_h2d_pinned_slowest_gpu_gbps",
                "the slowest GPU's pinned host-to-device plateau",
                read=_slowest_rate("h2d_pinned_gbps"),
            ),
            Fleet(
                "transfer_d2h_pinned_slowest_gpu_gbps",
                "the slowest GPU's pinned device-to-host plateau",
                read=_slowest_rate("d2h_pinned_gbps"),
            ),
        ),
        accept=Accept(
            TRANSFER,
            CRITERION_OF.__getitem__,
            "transfer_min_share",
            lambda item: ACCEPTED.get(item["key"], (None, None))[1],
            share_per_key=True,
        ),
    ),
    Figure(
        "transfer {} plateau",
        "GB/s",
        lambda cell: cell.get("plateau_gbps"),
        role=DECIDES,
        noise_class="link",
        each=_peer,
        figure="transfer.{}.plateau_gbps",
        kind="steady",
        noise=lambda cell: f"transfer.peer.{cell['mode']}_gbps",
        fleet=Fleet(
            "transfer_peer_slowest_gbps",
            "the slowest peer copy plateau (read or write, any pair)",
            aggregate="min",
        ),
        accept=Accept(
            TRANSFER,
            "transfer_{}",
            "transfer_min_share",
            lambda cell: None,
            share_per_key=True,
            read=_nvlink_reads,
            noise="transfer.peer.read_gbps",
        ),
    ),
)
