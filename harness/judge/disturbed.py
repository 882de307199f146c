"""The lab's bandwidth repeats that disagree, diagnosed before they are judged (issue 35; lab M1: "if
variance exceeds 5%, diagnose before continuing"). The probe has measured them again, longer
(harness/probes/bandwidth/repeats.py); if they still disagree, what the host did while the step ran
(host-contention.json) tells the two apart: on a busy host the measurement was disturbed, which says
nothing of the hardware (INCOMPLETE, naming the load and RERUN_IDLE, never a hardware FAIL); on an idle
host the hardware's rate varies (FAIL), unless what was timed is a virtual machine's host memory: its
memory bus is shared with the host's other guests, which /proc inside it cannot see, so an idle guest's
spread is not the hardware's either (INCOMPLETE, said so). A GPU's memory is not shared with other guests:
an idle host's spread there stays a FAIL. A bundle without host readings is judged as before."""

from __future__ import annotations

from typing import Any

from harness.analysis import contention as host
from harness.analysis.bandwidth import figures as bandwidth_rules
from harness.analysis.verdict import Verdict
from harness.judge import contention
from harness.judge.facts import BundleFacts


def _seconds(value: Any) -> str:
    return f"{value:g} s" if isinstance(value, (int, float)) else "?"


def again_evidence(b: dict[str, Any]) -> list[str]:
    """The evidence line of repeats measured again (the first round's spread and both rounds' lengths)."""
    first = b.get("repeat_first_spread")
    if not isinstance(first, (int, float)):
        return []
    spread = b.get("repeat_spread")
    now = f"{spread:.1%}" if isinstance(spread, (int, float)) else "not measured"
    return [
        f"the first repeats ({_seconds(b.get('repeat_first_budget_s'))} each) varied by {first:.1%}: measured again "
        f"with repeats of {_seconds(b.get('repeat_budget_s'))}, which vary by {now} ({bandwidth_rules.AGAIN_RULE})"
    ]


def repeats_disagree(facts: BundleFacts, b: dict[str, Any], spread_text: str) -> tuple[Verdict, str, list[str]]:
    """The verdict, the sentence and the evidence lines for bandwidth repeats that vary by the limit or more
    (B: the step's recomputed figures)."""
    over = f"the three repeats vary by {spread_text}, over {bandwidth_rules.REPEAT_SPREAD_MAX:.0%}"
    first = b.get("repeat_first_spread")
    if isinstance(first, (int, float)):
        over += f" (measured again with {_seconds(b.get('repeat_budget_s'))} repeats; the first varied by {first:.1%})"
    window = contention.window_of(facts, "bandwidth")
    if window is None:
        return Verdict.FAIL, over, []
    said = host.describe(window)
    evidence = [f"host during the bandwidth step: {said} ({window['why']})"]
    if window["state"] == host.BUSY:
        why = (
            f"the measurement was disturbed, not the hardware judged: {over}, while {contention.short(window)}; "
            f"{contention.ACTION}"
        )
        return Verdict.INCOMPLETE, why, evidence
    if window["state"] == host.IDLE and _virtual_host_memory(facts, b):
        why = (
            f"not judged: {over} with this virtual machine idle ({said}); its host memory is shared with the "
            "other guests of its host, whose load no reading inside it can see, so the spread says nothing of "
            "this hardware: judge host memory on a bare-metal host, or run where a GPU is measured"
        )
        return Verdict.INCOMPLETE, why, evidence
    if window["state"] == host.IDLE:
        return Verdict.FAIL, f"the hardware's rate varies: {over}, on an idle host ({said})", evidence
    return Verdict.FAIL, f"{over}; whether the host was busy is not known ({window['why']})", evidence


def _virtual_host_memory(facts: BundleFacts, b: dict[str, Any]) -> bool:
    """Whether the repeats timed host memory (a CPU run) inside a virtual machine (health's CPU hypervisor flag)."""
    if b.get("device") != "cpu":
        return False
    host_facts = (facts.document("health") or {}).get("host")
    virtualization = host_facts.get("virtualization") if isinstance(host_facts, dict) else None
    return isinstance(virtualization, dict) and virtualization.get("hypervisor_cpu_flag") is True
