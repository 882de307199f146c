"""Registry entry: the M1T5 health and toolchain probe (idle and under load) and the idle/load diff."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.analysis.health import comparison, declared
from harness.analysis.health import figures as health_figures
from harness.analysis.verdict import Verdict, counted, parse
from harness.errors import CheckFailed
from harness.judge import lab
from harness.judge.acceptance import config, identity, load, memory_health
from harness.judge.reproduction import host
from harness.judge.reproduction.declare import EVERYTHING, RATES, RESULTS
from harness.probes import health as probe
from harness.registry.spec import CommandSpec, DiffField, ProbeSpec
from harness.registry.steps import HostStep, ProbeStep, RunState, StepArgs

TIMEOUT_S = 120.0


def prepare(args: argparse.Namespace, argv: list[str]) -> StepArgs:
    """The timeout grows with the load so it cannot cut it short."""
    if args.under_load is not None:
        args.timeout = max(args.timeout, TIMEOUT_S + args.under_load)
    return StepArgs(tuple(argv))


def summary(document: dict[str, Any]) -> list[str]:
    """What health found, in a few lines: the devices, the driver and toolchain, the contracts."""
    heads = health_figures.headlines(document)
    devices = heads.get("devices") or []
    named = "; ".join(
        f"GPU {d.get('index')} {d.get('name')} ({d.get('sku_id') or 'no catalogue SKU'})" for d in devices
    )
    lines = [f"devices: {len(devices)} GPU(s)" + (f": {named}" if named else " (none visible)")]
    software = [
        f"{words} {heads[key]}"
        for key, words in (
            ("driver_version", "NVIDIA driver"),
            ("cuda_driver_version", "CUDA driver"),
            ("torch_version", "torch"),
            ("torch_cuda_build", "built for CUDA"),
        )
        if heads.get(key) is not None
    ]
    lines.append("software: " + (", ".join(software) or "no driver or CUDA build read (raw JSON says why)"))
    contracts = [parse(c.get("status")) for c in document.get("contracts", [])]
    lines.append(f"toolchain contracts: {counted(contracts)}")
    return lines


def finish(args: argparse.Namespace, document: dict[str, Any]) -> str:
    """The summary; exit 1 when a toolchain contract that should pass here fails, naming each with its remedy."""
    for line in summary(document):
        print(line, file=sys.stderr)
    failed = [c for c in document.get("contracts", []) if c.get("status") == Verdict.FAIL]
    for contract in failed:
        print(
            f"contract failed: {contract['name']}: {contract.get('evidence', '')}\n"
            f"  remedy: {contract.get('remedy', '')}",
            file=sys.stderr,
        )
    if failed:
        raise CheckFailed(
            f"{len(failed)} toolchain contract(s) failed: " + ", ".join(c["name"] for c in failed),
            hint=f"each is listed above with its remedy; the full evidence is in {args.output}",
        )
    devices = len(health_figures.headlines(document).get("devices") or [])
    return f"{devices} GPU(s), {len(document.get('contracts', []))} toolchain contracts, none failed"


COMMAND = CommandSpec(
    help="host, driver, devices, topology and toolchain contracts (health.json)",
    description="Write health.json (lab step M1T5): host, software and per-device facts, each a value or "
    '{"unavailable": reason}, and the toolchain contracts. Exits 1 when a contract that should '
    "pass on this host fails, naming each one. With --under-load, the reading is taken halfway "
    "through a known load (bf16 GEMM and a device copy on every visible device) and the load's "
    "NVML samples are kept; compare it with an idle health.json using `dossier health-diff`.",
    output="health.json",
    timeout_s=TIMEOUT_S,
    prepare=prepare,
    finish=finish,
)

OWN_LOAD_S = "8"  # health's own load when no other step's load can be read under (the docker runner)
WINDOW_S = 2.0  # NVML sampled this long under the stress step's load (20 samples at 0.1 s)


def load_arguments(state: RunState) -> StepArgs:
    """Lab step 7, "run M1T5 again under load": under the stress step's load, halfway through its GEMM
    phase, with the torch-free probe (no load of its own, no torch import: ~2 s instead of ~13 s on the
    H200); where that load could not be read under, health's own 8 s bf16 GEMM + copy load."""
    load = state.loads.get("stress")
    if load:
        window = min(WINDOW_S, load["remaining_s"] / 2)
        if window >= 0.4:  # at least 4 samples at 0.1 s
            return StepArgs(
                ("--during-load", *map(str, load["pids"]), "--load-window", f"{window:g}", "--load-what", load["what"]),
                inputs={"load_from": "the stress step, while it ran"},
            )
    return StepArgs(
        ("--under-load", OWN_LOAD_S), inputs={"load_from": "health's own load (no other step's to read under)"}
    )


def replay_load(entry: Any, given: Any) -> tuple[Any, list[str]]:
    """`dossier reproduce`: their health under load taken here as this build takes it, under this run's own
    load (the pids their argv names were processes of their machine; an older bundle's own-load step, placed
    before the stress step, runs in its place with health's own load). Nothing to say beforehand: no figure
    of it is judged run against run (the idle health step's are)."""
    return load_arguments, []


# Under load after the stress step's place: taken during it, recorded after it (the plan is the order
# a bundle lists its steps), so the diff comes last.
STEPS = (
    ProbeStep(
        "health",
        "health",
        "Health and toolchain at idle",
        "1 (M1T5 at idle)",
        schema="health",
        analysis="health",
        plots=None,
        timeout_s=300,
        order=10,
    ),
    ProbeStep(
        "health-load",
        "health",
        "Health under load",
        "7 (M1T5 under load)",
        schema="health",
        analysis="health",
        plots=None,
        timeout_s=300,
        arguments=load_arguments,
        order=92,
        during="stress",
        replay=replay_load,
    ),
    HostStep(
        "health-diff",
        "Idle against load",
        "7 (diff)",
        schema="health-diff",
        needs=("health", "health-load"),
        function="harness.analysis.health.diff:diff",
        order=94,
    ),
)

DIFF_FIELDS = (
    DiffField("hardware", "devices", declared.devices, explains=EVERYTHING),
    DiffField("hardware", "device_count", lambda heads: heads.get("device_count"), explains=EVERYTHING),
    DiffField(
        "hardware", "PCIe link (max)", comparison.per_gpu(comparison.pcie_max), source="document", explains=RATES
    ),
    *(
        DiffField("software", key, (lambda k: lambda heads: heads.get(k))(key), explains=RESULTS)
        for key in ("driver_version", "cuda_driver_version", "torch_version", "torch_cuda_build")
    ),
    DiffField("software", "libraries", comparison.libraries, source="document", explains=RESULTS),
    DiffField(
        "configuration", "power limit", comparison.per_gpu(comparison.power_limit), source="document", explains=RATES
    ),
    DiffField(
        "configuration",
        "application clocks",
        comparison.per_gpu(comparison.application_clocks),
        source="document",
        explains=RATES,
    ),
    DiffField(
        "configuration", "max clocks", comparison.per_gpu(comparison.max_clocks), source="document", explains=RATES
    ),
    DiffField("configuration", "ECC", comparison.per_gpu(comparison.ecc), source="document", explains=RATES),
    DiffField("configuration", "MIG", comparison.per_gpu(comparison.mig), source="document", explains=RATES),
    DiffField(
        "configuration",
        "persistence",
        comparison.per_gpu(comparison.mode("persistence")),
        source="document",
        explains=RATES,
    ),
    DiffField(
        "configuration",
        "compute mode",
        comparison.per_gpu(comparison.mode("compute")),
        source="document",
        explains=RATES,
    ),
    DiffField(
        "activity", "foreign processes (idle or under load)", load.foreign_processes, source="facts", explains=RATES
    ),
    *host.DIFF_FIELDS,  # the host's other work while each step ran (host-contention.json), beside the GPUs'
)

SPEC = ProbeSpec(
    name="health",
    title="health and toolchain diagnostics",
    lab="M1T5",
    options=probe.OPTIONS,
    command=COMMAND,
    analysis="health",
    steps=STEPS,
    lab_criteria=(lab.HEALTH, lab.IDLE_LOAD),
    acceptance_criteria=(
        identity.SKU_MATCHES_PROFILE,
        memory_health.ECC_UNCORRECTABLE_ZERO,
        memory_health.ROW_REMAPS_CLEAN,
        memory_health.PCIE_LINK_AT_MAX_UNDER_LOAD,
        load.CLOCKS_RISE_UNDER_LOAD,
        load.NO_UNEXPECTED_PROCESS,
        *config.CRITERIA,
    ),
    diff_fields=DIFF_FIELDS,
    figures=declared.FIGURES,
)
