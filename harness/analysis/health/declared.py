"""The health probe's figures, declared once (harness.analysis.figure): the GPUs' identity, each toolchain
contract's verdict, the ECC counters and mode and the PCIe width under load decide; the SM clock under
load informs."""

from __future__ import annotations

from typing import Any

from harness.analysis import verdict
from harness.analysis.figure import DECIDES, Figure, Fleet
from harness.analysis.health import fleet as health_fleet
from harness.analysis.verdict import Verdict


def devices(heads: dict[str, Any]) -> list[str]:
    return [f"{d.get('name')} ({d.get('sku_id')})" for d in heads.get("devices") or [] if isinstance(d, dict)]


def _contracts(heads: dict[str, Any]) -> list[tuple[str, Any]]:
    """(contract, its verdict in the one vocabulary) for every contract the health step judged."""
    contracts = heads.get("contracts")
    contracts = contracts if isinstance(contracts, dict) else {}
    return [(name, _verdict(status)) for name, status in contracts.items()]


def _verdict(status: Any) -> Any:
    """The contract's verdict; None where it did not apply (SKIP): nothing to reproduce."""
    try:
        parsed = verdict.parse(status)
    except ValueError:
        return status
    return None if parsed == Verdict.SKIP else parsed.value


def _ecc(name: str, unit: str, what: str, kind: str = "count") -> Figure:
    read = health_fleet.ecc_figure(name)
    return Figure(
        f"ECC {what}",
        unit,
        read,
        role=DECIDES,
        figure=f"health.ecc.{name}",
        kind="exact" if kind == "state" else "count",
        source="document",
        fleet=Fleet(f"ecc_{name}" if name != "mode" else "ecc_mode", f"{what} (idle)", kind=kind, read=read),
    )


# The GPUs' identity is judged even across SKUs (per_device=False: it is what differs); each contract's verdict.
FIGURES = (
    Figure("devices", "GPUs", devices, role=DECIDES, figure="health.devices", kind="exact", per_device=False),
    Figure(
        "device count",
        "GPUs",
        lambda heads: heads.get("device_count"),
        role=DECIDES,
        figure="health.device_count",
        kind="exact",
        per_device=False,
    ),
    Figure(
        "contract {}",
        "verdict",
        lambda status: status,
        role=DECIDES,
        each=_contracts,
        figure="health.contract.{}",
        kind="exact",
    ),
    _ecc("uncorrectable_errors", "errors", "uncorrectable ECC errors, summed over the GPUs"),
    _ecc("pending_row_remaps", "rows", "pending memory row remaps, summed over the GPUs"),
    _ecc("failed_row_remaps", "rows", "failed memory row remaps, summed over the GPUs"),
    _ecc("mode", "mode", "ECC mode of the GPUs", kind="state"),
    Figure(
        "PCIe link width under load",
        "lanes",
        health_fleet.pcie_width_under_load,
        role=DECIDES,
        step="health-load",
        figure="health.pcie_width_under_load",
        kind="exact",
        source="document",
        fleet=Fleet(
            "pcie_link_width_under_load",
            "narrowest PCIe link width of any GPU under load",
            kind="state",
            read=health_fleet.pcie_width_under_load,
        ),
    ),
    Figure(
        "SM clock under load",
        "MHz",
        health_fleet.sm_clock_under_load_mhz,
        why="the clock the power limiter settles at under the stress step's load: the sustained GEMM rate, "
        "which it sets, decides",
        step="health-load",
        figure="health.sm_clock_under_load_mhz",
        kind="steady",
        source="document",
        fleet=Fleet(
            "sm_clock_under_load_mhz",
            "SM clock under load (lowest per-GPU median of the load window's NVML samples)",
            read=health_fleet.sm_clock_under_load_mhz,
        ),
    ),
)
