"""What `dossier check`'s checks are made of: a Finding (the verdict, its message and, for a failed
one, the recommended action with the rule that chose it), the node's reading with its expectation,
and the rule for a field that cannot be read.

One verdict vocabulary (harness/analysis/verdict.py): PASS, FAIL, INCOMPLETE (it should be judged and
could not be: a field unreadable for a reason other than "not supported", a kernel log that cannot be
read) or SKIP (nothing to judge here, with why). A field NVML answers NotSupported is SKIP for that
GPU; GpuIsLost is FAIL; any other unreadable field is INCOMPLETE: what could not be read is never
passed. Each failed finding carries a Recommendation (harness/analysis/actions.py); a check judged on
several GPUs recommends the most severe of the failed GPUs'; one that could not be judged DRAIN (a
check that cannot see must not keep a node in service, the drain rule).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from harness.analysis import actions
from harness.analysis.actions import Action, Recommendation
from harness.analysis.units import unavailable_reason
from harness.analysis.verdict import Verdict, overall
from harness.check.expectation import Expectation

JUDGED_ORDER = (Verdict.FAIL, Verdict.INCOMPLETE, Verdict.WARN)
NOT_FAILED = Recommendation(Action.NONE, "none", "this check did not fail")
NOT_JUDGED = Recommendation(
    Action.DRAIN,
    "check.not_judged",
    "the check could not be judged (its message says why): a check that cannot see must not keep a node in "
    "service; drain it until the field can be read",
)
GPU_LOST = Recommendation(
    Action.REBOOT_NODE,
    "gpu.lost",
    "the driver lost the GPU (NVML GpuIsLost, as after XID 79): only a node reboot brings it back "
    "(NVIDIA's Xid catalogue: RESTART_BM); if it is lost again, inspect the hardware",
)


@dataclass(frozen=True)
class Finding:
    name: str
    verdict: Verdict
    message: str
    recommendation: Recommendation | None = None  # set on every FAIL

    @property
    def action(self) -> Recommendation:
        """A FAIL's recommendation, DRAIN for a check that could not be judged, else NONE."""
        if self.verdict == Verdict.FAIL and self.recommendation:
            return self.recommendation
        return NOT_JUDGED if self.verdict == Verdict.INCOMPLETE else NOT_FAILED

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verdict": str(self.verdict),
            "message": self.message,
            "action": self.action.to_json(),
        }


class Part(NamedTuple):
    """One GPU's share of a check: its verdict, its words and, when it failed, what to do."""

    verdict: Verdict
    text: str
    recommendation: Recommendation | None = None


def unreadable(value: Any) -> Part | None:
    """None for a value; for an unavailable field, its verdict and reason (see the module's rule)."""
    reason = unavailable_reason(value)
    if reason is None:
        return None
    if "NotSupported" in reason or "Not Supported" in reason:
        return Part(Verdict.SKIP, f"not supported ({reason})")
    if "GpuIsLost" in reason or "GPU is lost" in reason:
        return Part(Verdict.FAIL, f"the GPU is lost ({reason})", GPU_LOST)
    return Part(Verdict.INCOMPLETE, f"unreadable: {reason}")


def recommend(findings: list[Finding]) -> Recommendation:
    """The node's action: the most severe of its failed and unjudged findings' (the first of equals)."""
    return actions.overall(f.action for f in findings if f.verdict in (Verdict.FAIL, Verdict.INCOMPLETE))


@dataclass(frozen=True)
class Node:
    """A reading with what the node should have, and the few facts every check asks."""

    reading: dict[str, Any]
    expect: Expectation

    @property
    def devices(self) -> list[dict[str, Any]] | None:
        devices = self.reading["devices"]
        return devices if isinstance(devices, list) else None

    @property
    def pci_count(self) -> int | None:
        pci = self.reading["pci_gpus"]
        return len(pci) if isinstance(pci, list) else None

    @property
    def expected_gpus(self) -> int | None:
        """--expect-gpus, else every NVIDIA GPU on the PCI bus, at least one where a GPU SKU is expected
        (None when neither is known)."""
        if self.expect.gpus is not None or self.pci_count is None:
            return self.expect.gpus
        return max(self.pci_count, 1 if self.expect.sku else 0)

    @property
    def gpu_free(self) -> bool:
        """No GPU expected, none on the PCI bus and none in NVML: a node whose GPU checks have nothing to judge."""
        return self.expected_gpus == 0 and self.pci_count in (0, None) and not self.devices

    def why_no_devices(self) -> str:
        reason = unavailable_reason(self.reading["devices"])
        return reason or "NVML lists no GPU"


def label(device: dict[str, Any]) -> str:
    return f"GPU{device.get('nvml_index')}"


def per_gpu(node: Node, name: str, judge_one: Callable[[dict[str, Any]], Part]) -> Finding:
    """NAME judged on every GPU: the worst verdict, the messages of the GPUs that have it, and the
    most severe action of the GPUs that failed."""
    if node.gpu_free:
        return Finding(name, Verdict.SKIP, "no GPU on this node, and none expected")
    devices = node.devices
    if not devices:
        return Finding(name, Verdict.INCOMPLETE, f"no GPU readable ({node.why_no_devices()})")
    parts = []
    for device in devices:
        if "unreadable" in device:
            parts.append(Part(Verdict.INCOMPLETE, f"{label(device)}: unreadable: {device['unreadable']}"))
        else:
            part = judge_one(device)
            parts.append(part._replace(text=f"{label(device)}: {part.text}"))
    verdicts = [p.verdict for p in parts]
    verdict = Verdict.SKIP if all(v == Verdict.SKIP for v in verdicts) else overall(verdicts)
    shown = [p.text for p in parts if p.verdict == verdict] if verdict in JUDGED_ORDER else [p.text for p in parts]
    failed = actions.overall(p.recommendation for p in parts if p.verdict == Verdict.FAIL)
    return Finding(name, verdict, "; ".join(shown), failed if verdict == Verdict.FAIL else None)
