"""`dossier check --mode prolog|epilog`: the GPUs a Slurm job holds, and the reading narrowed to them.

Slurm hands its Prolog and Epilog the job's GPUs in SLURM_JOB_GPUS (comma-separated GPU indices),
and a job's tasks CUDA_VISIBLE_DEVICES (indices, or GPU-UUIDs). They are taken in that order; an
index is NVML's (the order nvidia-smi and Slurm's AutoDetect=nvml list the GPUs in: PCI bus order),
a GPU-UUID is matched to the GPU's UUID. With neither set (a job that asked for no GPU), or ids
that name no GPU this way (MIG UUIDs), the whole node is judged, and the result says why.

Narrowing keeps the judgement a pure function of a reading (harness/check/judge.py is untouched):
the reading keeps only the job's GPUs and the XID lines logged for them (or for no GPU that can be
told apart), and the count expected is the job's. Where NVML lists no GPU the job's cannot be told
apart from the others: the whole node is judged, as it should be, since a node whose NVML is down
is sick for every job.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.check import xid
from harness.errors import UsageError

if TYPE_CHECKING:  # the expectation module brings the registry: not at `dossier --help`'s start
    from harness.check.expectation import Expectation

MODES = ("prolog", "epilog")
SOURCES = ("SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES")
GPU_UUID = re.compile(r"GPU-[0-9A-Fa-f-]{8,}")


@dataclass(frozen=True)
class Scope:
    mode: str  # prolog, epilog
    gpus: tuple[str, ...] | None  # the job's GPU ids as the scheduler wrote them; None: the whole node
    source: str  # the variable they came from (NAME=VALUE), or why the whole node is judged

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "gpus": list(self.gpus) if self.gpus is not None else None, "source": self.source}


def job_gpus(mode: str, environ: Mapping[str, str]) -> Scope:
    """The job's GPUs from the scheduler's environment; UsageError for a list that is not GPU ids."""
    for name in SOURCES:
        text = environ.get(name, "").strip()
        if not text:
            continue
        ids = tuple(part.strip() for part in text.split(","))
        if not all(part.isdigit() or part.startswith(("GPU-", "MIG-")) for part in ids):
            raise UsageError(f"{name}={text!r}: not a list of GPU indices or UUIDs")
        if not all(part.isdigit() or GPU_UUID.fullmatch(part) for part in ids):
            return Scope(mode, None, f"{name}={text}: MIG devices are not told apart here, the whole node is judged")
        return Scope(mode, ids, f"{name}={text}")
    return Scope(mode, None, f"neither {' nor '.join(SOURCES)} is set (a job without GPUs): the whole node is judged")


def _matches(device: dict[str, Any], gpu: str) -> bool:
    return device.get("nvml_index") == int(gpu) if gpu.isdigit() else device.get("uuid") == gpu


def narrowed(reading: dict[str, Any], expect: Expectation, scope: Scope) -> tuple[dict[str, Any], Expectation, Scope]:
    """The reading and expectation of the job's GPUs only (the scope says so, or why not)."""
    devices = reading.get("devices")
    if scope.gpus is None:
        return reading, expect, scope
    if not isinstance(devices, list) or not devices:
        why = f"{scope.source}: NVML lists no GPU, so the job's cannot be told apart: the whole node is judged"
        return reading, expect, Scope(scope.mode, None, why)
    mine = [d for d in devices if any(_matches(d, gpu) for gpu in scope.gpus)]
    narrowed_reading = {**reading, "devices": mine, "kernel_log": _their_xids(reading["kernel_log"], mine)}
    return narrowed_reading, dataclasses.replace(expect, gpus=len(scope.gpus)), scope


def _their_xids(log: Any, mine: list[dict[str, Any]]) -> Any:
    """The kernel log without the XID lines of GPUs other than MINE (lines naming no GPU stay); the
    whole log when a GPU of MINE has no readable PCI address to tell its lines by."""
    if not isinstance(log, dict) or "lines" not in log:
        return log
    keys = {xid.pci_key(d["pci_bus_id"]) if isinstance(d.get("pci_bus_id"), str) else None for d in mine}
    if None in keys:
        return log

    def kept(line: dict[str, Any]) -> bool:
        events = xid.parse([line])
        return not events or xid.pci_key(events[0].address) in keys

    return {**log, "lines": [line for line in log["lines"] if kept(line)]}
