"""What every bundle records about where and how it ran, beside what each registry entry declares:
the host (CPU, memory), the run (OS, Python, the harness, the runner, its images, checkpoints, the
steps that completed), and what the GPUs were identified as.

The identity decides what is comparable: figures measured on a GPU compare only between bundles of
the same SKU (and CPU figures only on the same CPU model); a bundle of another SKU leaves them not
comparable, naming both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.analysis import repeatability
from harness.analysis.tool import tool_text
from harness.analysis.verdict import StepStatus
from harness.judge.facts import BundleFacts
from harness.judge.reproduction.declare import EVERYTHING, RATES, RESULTS, DiffField


def _host(facts: BundleFacts) -> dict[str, Any]:
    return (facts.view.environment or {}).get("host") or {}


def _tool(facts: BundleFacts) -> str:
    """The harness: its version, source hash and git commit where recorded (analysis.tool)."""
    return tool_text(facts.view.commands.get("tool"), name=False)


def _runner(facts: BundleFacts) -> Any:
    runner = facts.view.commands.get("runner")
    return runner.get("name") if isinstance(runner, dict) else None


def images(facts: BundleFacts) -> list[str]:
    """The image references (repository@sha256) the bundle's probe steps ran in."""
    return sorted({s["image"] for s in facts.view.steps if isinstance(s.get("image"), str)})


def _checkpoints(facts: BundleFacts) -> list[Any]:
    found = [s.get("checkpoint") for s in facts.view.steps if s.get("checkpoint")]
    return [c.get("file_sha256") or c.get("sha256") or c if isinstance(c, dict) else c for c in found]


def completed_steps(facts: BundleFacts) -> list[str]:
    return [s["step"] for s in facts.view.steps if s.get("status") == StepStatus.COMPLETED]


# The bundle's own facts, after those each registry entry declares (ProbeSpec.diff_fields).
HOST = (
    DiffField("hardware", "cpu_model", lambda f: _host(f).get("cpu_model"), source="facts", explains=RATES),
    DiffField("hardware", "cpu_count", lambda f: _host(f).get("cpu_count"), source="facts", explains=RATES),
    DiffField("hardware", "memory_total_mib", lambda f: _host(f).get("memory_total_mib"), source="facts"),
    DiffField("hardware", "machine", lambda f: _host(f).get("machine"), source="facts", explains=EVERYTHING),
)
RUN = (
    DiffField("software", "os", lambda f: _host(f).get("os"), source="facts"),
    DiffField("software", "host python", lambda f: (_host(f).get("python") or {}).get("version"), source="facts"),
    DiffField("software", "rig-dossier", _tool, source="facts", explains=RESULTS),
    DiffField("software", "runner", _runner, source="facts", explains=RESULTS),
    DiffField("software", "images", images, source="facts", explains=RESULTS),
    DiffField("software", "checkpoints", _checkpoints, source="facts"),
    DiffField("software", "steps completed", completed_steps, source="facts"),
)


@dataclass(frozen=True)
class Identity:
    """What a bundle's figures were measured on: its GPUs' SKUs (or names where the catalogue has
    none), or the CPU where it ran on no GPU; `key` compares, `text` is for people; `units` the GPUs'
    UUIDs as health read them (empty where none was read): two bundles of the same units ran on the
    same GPUs."""

    key: tuple[Any, ...]
    text: str
    sku_id: str | None
    units: tuple[str, ...] = ()
    instance: str | None = None  # the machine start it ran on, where the bundle says (instance_of)

    def to_json(self) -> dict[str, Any]:
        return {
            "measured_on": self.text,
            "sku_id": self.sku_id,
            "gpu_uuids": list(self.units),
            "machine_start": self.instance,
        }

    def same_start(self, other: Identity) -> bool:
        """Both ran on one machine start (the same instance) with the same GPUs: None on either side is never
        the same."""
        return (
            bool(self.units)
            and self.units == other.units
            and self.instance is not None
            and self.instance == other.instance
        )


def _units(facts: BundleFacts) -> tuple[str, ...]:
    """The UUIDs of the GPUs health read, sorted; () when any is unreadable or none was read."""
    health = facts.document("health") or {}
    uuids = [d.get("uuid") for d in health.get("devices") or [] if isinstance(d, dict)]
    named = [u for u in uuids if isinstance(u, str)]
    return tuple(sorted(named)) if uuids and len(named) == len(uuids) else ()


INSTANCE_ID = re.compile(r"[0-9a-f]{16,}")


def instance_of(facts: BundleFacts) -> str | None:
    """Which machine start the bundle ran on, where it says: a container or VM instance id its process cgroup
    names (a path ending in 16 or more hex digits: a lent machine's process_api/<id>, a container's scope),
    else the kernel's boot id (health's host facts, format 6 on); None when neither is recorded. The
    instance comes first because it is the finer: machines lent one after another may share a host
    kernel, and two runs judged as one start are held to the tighter within-start noise."""
    host = (facts.document("health") or {}).get("host") or {}
    container = host.get("container")
    for path in (container.get("cgroup") if isinstance(container, dict) else None) or []:
        last = str(path).rstrip("/").rsplit("/", 1)[-1].removesuffix(".scope").rsplit("-", 1)[-1]
        if INSTANCE_ID.fullmatch(last):
            return f"cgroup {path}"
    boot = host.get("boot_id")
    if isinstance(boot, str) and boot:
        return f"boot {boot}"
    return None


def identity(facts: BundleFacts) -> Identity:
    """What the bundle's completed documents were measured on (harness.analysis.repeatability.bundle_identity)."""
    completed = {step: facts.document(step) for step in facts.view.documents}
    key, text, sku_id = repeatability.bundle_identity(
        {s: d for s, d in completed.items() if d is not None}, _host(facts).get("cpu_model")
    )
    return Identity(key, text, sku_id, _units(facts), instance_of(facts))
