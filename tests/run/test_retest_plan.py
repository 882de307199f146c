"""`dossier retest`'s plan (harness/run/retest.py): the steps to run again and every step they read, found
by asking each step's own arguments what they read (the registry's plan, nothing restated here)."""

from __future__ import annotations

from harness.run.plan import LAB_PLAN
from harness.run.retest import closure, reads


def steps(name):
    return next(s for s in LAB_PLAN if s.step == name)


def test_a_step_brings_the_steps_its_derived_options_and_inputs_come_from():
    assert "bandwidth" in reads(steps("roofline"))  # its memory roof, --bandwidth-gbps
    assert reads(steps("health-diff")) == {"health", "health-load"}
    assert reads(steps("bandwidth")) == set()  # no derived option: its own argv
    assert closure(LAB_PLAN, ["roofline"]) == ("bandwidth", "roofline")
    assert closure(LAB_PLAN, ["health-diff", "bandwidth"]) == ("health", "bandwidth", "health-load", "health-diff")


def test_health_under_load_does_not_bring_the_stress_step_it_is_taken_during():
    assert closure(LAB_PLAN, ["health-load"]) == ("health-load",)
    assert "stress" not in closure(LAB_PLAN, ["health", "health-load", "health-diff"])
