"""Registry entry: transfers (beyond lab M1): host-to-device, device-to-host and peer copies, the links measured."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.analysis.transfer import declared
from harness.analysis.transfer import figures as analysis
from harness.errors import CheckFailed
from harness.judge import transfer as report_criterion
from harness.judge.acceptance import transfer as acceptance
from harness.probes import transfer as probe
from harness.registry.allreduce import gpu_count
from harness.registry.spec import CommandSpec, ProbeSpec
from harness.registry.steps import ProbeStep, RunState, StepArgs

BAD_LINK = ("degraded", "inconsistent")
BAD_PAIR = ("broken_p2p",)

# `dossier run`'s transfer step on GPUs: the probe's own 0.1 s per size (issue 34: at 0.03 s a 512 MiB
# pinned copy, about 10 ms on an H200, was timed 5 times, and the pinned host-to-device plateau, which
# decides a reproduction, moved 3.6-3.8% between dossiers of one day), sizes up to 512 MiB (every
# pinned series reached its plateau by 16-64 MiB on one H200, 2026-12-01; 1 GiB added 5 s and nothing
# the plateau used).
RUN_POINT_BUDGET_S = "0.1"
RUN_GPU_SIZES = ("4K", "64K", "1M", "4M", "16M", "64M", "256M", "512M")
# Its timeout grows with the GPUs: the host copies per GPU, the peer matrix per pair (six series of
# the largest three sizes each). Generous: a hung copy is what it guards against, not a slow one.
TIMEOUT_BASE_S, TIMEOUT_PER_GPU_S, TIMEOUT_PER_PAIR_S = 120, 30, 15


def finish(args: argparse.Namespace, document: dict[str, Any]) -> None:
    """The summary; exit 1 when a link is degraded or inconsistent or a pair is broken P2P (from
    the recomputed checks, never the document's own)."""
    heads = analysis.headlines(document)
    for line in summary_lines(heads):
        print(line, file=sys.stderr)
    bad = [
        f"GPU {c['gpu']} link {c['status']}: {' '.join(c['reasons'])}"
        for c in heads["link_checks"]
        if c["status"] in BAD_LINK
    ]
    bad += [
        f"{c['pair']} {c['status']}: {' '.join(c['reasons'])}" for c in heads["p2p_checks"] if c["status"] in BAD_PAIR
    ]
    if bad:
        raise CheckFailed("; ".join(bad), hint=f"every copy's time is kept in {args.output}")


def _basis(key: str, figures: dict[str, Any]) -> str:
    """' (at N MiB)' for a both-directions total (summed at its largest size, not a plateau)."""
    at = figures.get(key.removesuffix("_gbps") + "_at_bytes")
    return f" (summed at {at / 2**20:g} MiB)" if isinstance(at, int) else ""


def summary_lines(heads: dict[str, Any]) -> list[str]:
    lines = []
    for gpu, figures in sorted(heads["per_gpu"].items()):
        shown = ", ".join(
            f"{key.removesuffix('_gbps')}{_basis(key, figures)} "
            + ("no plateau" if value is None else f"{value:.4g} GB/s")
            for key, value in figures.items()
            if key.endswith("_gbps") and key != "pcie_ceiling_gbps"
        )
        if figures.get("pcie_ceiling_gbps"):
            shown += f" (PCIe ceiling {figures['pcie_ceiling_gbps']:.4g} GB/s per direction)"
        lines.append(f"{'host memory (CPU, not PCIe)' if gpu == 'host' else f'GPU {gpu}'} plateaus: {shown}")
    lines += [f"GPU {c['gpu']} link {c['status']}: {' '.join(c['reasons'])}" for c in heads["link_checks"]]
    lines += [f"{c['pair']} ({c['cell']}) {c['status']}: {' '.join(c['reasons'])}" for c in heads["p2p_checks"]]
    lines += [f"limitation: {what}" for what in heads["limitations"]]
    return lines


COMMAND = CommandSpec(
    help="host-to-device, device-to-host and peer copies, the links measured (transfer.json)",
    description="Write transfer.json (what nvbandwidth's copy engine tests and DCGM's PCIe test "
    "measure): per GPU, host-to-device and device-to-host with pinned and pageable memory, alone and "
    "both at once, a size sweep with its plateau (not the maximum) and small-copy latency, the "
    "device-local copy, near and far NUMA node where the host has two; with two or more GPUs peer "
    "access, the peer matrix (read and write, one direction and both) and all GPUs at once. Each "
    "figure stands beside the theoretical rate of the link it crossed (NVML). On a CPU: host memory "
    "copies, recorded as such. Exits 1 when a GPU's link is degraded or inconsistent with NVML, or a "
    "pair joined by NVLink refuses peer access (broken P2P).",
    output="transfer.json",
    timeout_s=900,
    finish=finish,
)


def timeout_s(gpus: int) -> float:
    return TIMEOUT_BASE_S + TIMEOUT_PER_GPU_S * gpus + TIMEOUT_PER_PAIR_S * gpus * (gpus - 1) // 2


def transfer_arguments(state: RunState) -> StepArgs:
    """Every GPU health found, sized short for the run; on the CPU the probe's own CI sizes."""
    count, evidence = gpu_count(state)
    if count >= 1:
        return StepArgs(
            ("--point-budget-s", RUN_POINT_BUDGET_S, "--sizes", *RUN_GPU_SIZES),
            inputs={"gpus_from": evidence},
            timeout_s=timeout_s(count),
        )
    return StepArgs(
        ("--device", "cpu"), inputs={"gpus_from": f"{evidence}: host memory copies on the CPU"}, timeout_s=timeout_s(0)
    )


SPEC = ProbeSpec(
    name="transfer",
    title="host and peer transfers, the links measured",
    lab="beyond lab M1",
    options=probe.OPTIONS,
    command=COMMAND,
    analysis="transfer",
    plots="transfer",
    table="transfer",
    steps=(
        ProbeStep(
            "transfer",
            "transfer",
            "Host and peer transfers",
            "beyond lab M1",
            schema="transfer",
            analysis="transfer",
            plots="transfer",
            timeout_s=timeout_s(8),
            arguments=transfer_arguments,
            order=65,
            warm_imports=("torch",),  # imported by a process started ahead (harness.run.prestart)
        ),
    ),
    lab_criteria=(report_criterion.TRANSFER,),
    acceptance_criteria=acceptance.CRITERIA,
    figures=declared.FIGURES,
)
