"""The one recommended action of a `dossier check` result: what a prolog's drain reason and the
node-problem-detector message lead with (harness/analysis/actions.py's vocabulary).

`recommended(document)` reads it from the result document: the action the judgement attached, when
the document carries one (the overall `recommendation` harness/check/findings.py gives, or an `action`
on each check that did not pass: the most severe of theirs), else, for a document made before the
judgement attached them, the fallback below, stated here so that it can be read and
argued with. The fallback is deliberately coarse, one action per check name, the mildest that
the check's usual cause needs:

    gpu_count         REBOOT_NODE       a GPU the bus or NVML lost (XID 79 "fallen off the bus") comes
                                        back, if at all, with a reboot
    driver            REBOOT_NODE       the kernel module and the user-space driver differ, or NVML
                                        cannot start: reload the module, i.e. reboot
    gpu_sku           DRAIN             the wrong part is fitted or configured: a person must look
    xid_events        REBOOT_NODE       a fatal XID: most need at least a GPU reset; a reboot covers
                                        the ones a reset does not (79, 119, 120)
    row_remaps        RESET_GPU         a pending remap takes effect at the next GPU reset
    ecc               RESET_GPU         volatile uncorrectable counts clear with a reset
    retired_pages     INSPECT_HARDWARE  a full retirement table is Azure's RMA rule
    pcie_width        INSPECT_HARDWARE  a link trained narrow: reseat or replace
    pcie_generation   INSPECT_HARDWARE  likewise, a link capped below its generation
    nvlink            RESET_GPU         a link down may train again after a reset
    clock_events      INSPECT_HARDWARE  a hardware, thermal or power-brake slowdown: cooling or power
    persistence_mode  DRAIN             configuration: someone must turn it on
    gpu_processes     DRAIN             a stray process holds a job's GPU: someone must clean it up

A check that could not be judged (INCOMPLETE) recommends DRAIN: a check that cannot see must not
keep a node in service (the drain rule of harness/check/drain.py). A healthy node's action is NONE.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.analysis.actions import Action, most_severe, parse

FALLBACK = {
    "gpu_count": Action.REBOOT_NODE,
    "driver": Action.REBOOT_NODE,
    "gpu_sku": Action.DRAIN,
    "xid_events": Action.REBOOT_NODE,
    "row_remaps": Action.RESET_GPU,
    "ecc": Action.RESET_GPU,
    "retired_pages": Action.INSPECT_HARDWARE,
    "pcie_width": Action.INSPECT_HARDWARE,
    "pcie_generation": Action.INSPECT_HARDWARE,
    "nvlink": Action.RESET_GPU,
    "clock_events": Action.INSPECT_HARDWARE,
    "persistence_mode": Action.DRAIN,
    "gpu_processes": Action.DRAIN,
}
NOT_JUDGED = Action.DRAIN
PROBLEMS = ("fail", "incomplete")
FALLBACK_RULE = "harness/check/advice.py's fallback: one action per check name (FALLBACK), DRAIN for one not judged"


def _stated(value: Any) -> Action | None:
    """An action as the judgement may record it: its word, or an object with an `action` word."""
    word = value.get("action") if isinstance(value, Mapping) else value
    if word is None:
        return None
    try:
        return parse(word)
    except ValueError:
        return None


def recommended(document: Mapping[str, Any]) -> tuple[Action, str]:
    """The result's recommended action and the rule that chose it."""
    problems = [c for c in document.get("checks", []) if c.get("verdict") in PROBLEMS]
    if not problems:
        return Action.NONE, "every check passed or had nothing to judge"
    overall = _stated(document.get("recommendation") or document.get("action"))
    if overall is not None:
        return overall, "the judgement's own action (the result's `recommendation`)"
    attached = [_stated(c.get("action")) for c in problems]
    if all(a is not None for a in attached):
        return most_severe(attached), "the most severe of the actions the judgement attached to each problem"
    fallback = [NOT_JUDGED if c["verdict"] == "incomplete" else FALLBACK.get(c["name"], NOT_JUDGED) for c in problems]
    return most_severe(fallback), FALLBACK_RULE
