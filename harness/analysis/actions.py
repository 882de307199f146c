"""What to do after a finding: one fixed vocabulary of recommended actions, mildest first.

Standard library only, so the probes, `dossier check`, acceptance, the lab verdict and the fleet all
say it the same way. Every failing finding carries a Recommendation: one Action, the rule that chose
it and why; a set of findings recommends the most severe of theirs (`most_severe`, `overall`). The
words are those of the field's node-health tools (gpud and NVSentinel attach a recommended action to
each finding), in the order an operator escalates:

    NONE              nothing to do: the finding passed, or needs no action
    RECONFIGURE       a setting is not what it should be (persistence, ECC mode, a clock or power
                      limit someone set, a driver below the minimum): put it back; the finding
                      names the command
    RERUN_IDLE        the measurement was disturbed (a co-tenant, a busy host): run it again on an
                      idle node before judging the hardware
    RESET_GPU         a GPU reset clears it (a pending row remap, an uncorrectable ECC error, a
                      recoverable XID)
    REBOOT_NODE       a node reboot clears it (a driver or kernel state a GPU reset cannot, a link
                      that trained low)
    DRAIN             take the node out of service until it is looked at (scheduler drain)
    INSPECT_HARDWARE  a hardware fault: drain and open a vendor ticket with the evidence (RMA)

RECONFIGURE is this project's word beyond gpud's and NVSentinel's: a lowered power limit or a
disabled persistence mode is neither a reset nor an RMA, and draining for it overstates it.

The driver publishes its own recommendation through NVML (field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION,
nvidia-ml-py's NVML_GPU_RECOVERY_ACTION_*): `from_driver` maps its words to this vocabulary so that
both can be shown side by side; the driver's own word is always kept beside the mapped one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Action(StrEnum):
    NONE = "NONE"
    RECONFIGURE = "RECONFIGURE"
    RERUN_IDLE = "RERUN_IDLE"
    RESET_GPU = "RESET_GPU"
    REBOOT_NODE = "REBOOT_NODE"
    DRAIN = "DRAIN"
    INSPECT_HARDWARE = "INSPECT_HARDWARE"

    @property
    def severity(self) -> int:
        """Its place in ORDER: 0 for NONE, higher is more severe."""
        return ORDER.index(self)

    @property
    def what(self) -> str:
        """The action in a sentence, for people."""
        return MEANING[self]


ORDER = (
    Action.NONE,
    Action.RECONFIGURE,
    Action.RERUN_IDLE,
    Action.RESET_GPU,
    Action.REBOOT_NODE,
    Action.DRAIN,
    Action.INSPECT_HARDWARE,
)

MEANING = {
    Action.NONE: "nothing to do",
    Action.RECONFIGURE: "put the setting back as the finding says, then check again",
    Action.RERUN_IDLE: "run it again on an idle node before judging the hardware",
    Action.RESET_GPU: "reset the GPU, then check again",
    Action.REBOOT_NODE: "reboot the node, then check again",
    Action.DRAIN: "take the node out of service until it is looked at",
    Action.INSPECT_HARDWARE: "drain the node and open a vendor ticket with the evidence (dossier evidence)",
}

# The driver's recovery actions (nvml.h's nvmlDeviceGpuRecoveryAction_t, read with nvmlDeviceGetFieldValues
# and NVML_FI_DEV_GET_GPU_RECOVERY_ACTION), as nvidia-ml-py 13.615's pynvml names them
# (NVML_GPU_RECOVERY_ACTION_NONE = 0 ... _SYSTEM_REBOOT = 7), in ours. The probe records the name
# the installed pynvml gives a code (harness/probes/devices.py), so a newer driver's word is kept.
DRIVER_WORDS = {
    0: "NONE",
    1: "GPU_RESET",
    2: "NODE_REBOOT",
    3: "DRAIN_P2P",
    4: "DRAIN_AND_RESET",
    5: "RECOVER_IMEX_DOMAIN",
    6: "BUS_RESET",
    7: "SYSTEM_REBOOT",
}
FROM_DRIVER = {
    "NONE": Action.NONE,
    "GPU_RESET": Action.RESET_GPU,
    "NODE_REBOOT": Action.REBOOT_NODE,
    "DRAIN_P2P": Action.DRAIN,
    "DRAIN_AND_RESET": Action.DRAIN,
    "RECOVER_IMEX_DOMAIN": Action.DRAIN,
    "BUS_RESET": Action.RESET_GPU,
    "SYSTEM_REBOOT": Action.REBOOT_NODE,
}


def parse(value: object) -> Action:
    """An action as a document records it; ValueError for a word that is not one."""
    try:
        return Action(str(value).strip().upper())
    except ValueError:
        raise ValueError(f"{value!r} is not a recommended action ({', '.join(ORDER)})") from None


def from_driver(word: str) -> Action:
    """The driver's recovery action (its word, DRIVER_WORDS) in this vocabulary; ValueError for another."""
    try:
        return FROM_DRIVER[word]
    except KeyError:
        raise ValueError(f"{word!r} is not a driver recovery action ({', '.join(FROM_DRIVER)})") from None


def most_severe(actions: Iterable[object]) -> Action:
    """The most severe of ACTIONS (an iterable of Action or their words); NONE when there are none."""
    found = [parse(a) for a in actions]
    return max(found, key=lambda a: a.severity, default=Action.NONE)


def escalate(action: Action) -> Action:
    """The next action up (what a repair that did not resolve a finding twice calls for); the most
    severe stays itself."""
    return ORDER[min(action.severity + 1, len(ORDER) - 1)]


@dataclass(frozen=True)
class Recommendation:
    """One finding's action, the rule that chose it (a dotted id: `ecc.volatile_uncorrectable`) and why,
    with the rule's source where it has one."""

    action: Action
    rule: str
    why: str

    def to_json(self) -> dict[str, str]:
        return {"action": str(self.action), "rule": self.rule, "why": self.why}

    @classmethod
    def from_json(cls, record: Any) -> Recommendation:
        """A recorded recommendation; ValueError for one that is not."""
        if not isinstance(record, dict) or not {"action", "rule", "why"} <= set(record):
            raise ValueError(f"{record!r} is not a recommendation (action, rule, why)")
        return cls(parse(record["action"]), str(record["rule"]), str(record["why"]))

    def shown(self) -> str:
        """'RESET_GPU (ecc.volatile_uncorrectable)': the action beside a finding."""
        return f"{self.action} ({self.rule})"


NOTHING = Recommendation(Action.NONE, "none", "no finding failed")


def overall(recommendations: Iterable[Recommendation | None]) -> Recommendation:
    """The most severe of RECOMMENDATIONS (the first of equals, so the order of the findings decides a
    tie); NOTHING when none is given."""
    found = [r for r in recommendations if r is not None]
    return max(found, key=lambda r: r.action.severity, default=NOTHING)
