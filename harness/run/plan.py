"""`dossier run`'s plan: every registry entry's steps, in order (harness.registry.lab_plan).

The step types and the run's state live in harness.registry.steps; each entry (harness/registry/
NAME.py) declares its steps, their arguments and their place in the order.
"""

from __future__ import annotations

from harness.registry import lab_plan, step_ids
from harness.registry.steps import HostStep, NotReady, ProbeStep, RunState, Step, StepArgs, StepSetupFailed

__all__ = [
    "LAB_PLAN",
    "HostStep",
    "NotReady",
    "ProbeStep",
    "RunState",
    "Step",
    "StepArgs",
    "StepSetupFailed",
    "lab_plan",
    "step_ids",
]

LAB_PLAN: tuple[Step, ...] = lab_plan()
