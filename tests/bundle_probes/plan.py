"""Plans for bundle mechanics tests: a completed step, a failed one, a dependent one, a not-run one,
and the tick probe's registry entry (its analysis and plots stand in as harness.analysis.tick and
harness.present.plots.tick: `install`)."""

import sys

from harness import registry
from harness.registry.spec import CommandSpec, ProbeSpec
from harness.registry.steps import ProbeStep, StepArgs
from tests.bundle_probes import tick_analysis, tick_plots

PACKAGE = "tests.bundle_probes"

TICK = ProbeSpec(
    name="tick",
    title="sha256 timing (test probe)",
    lab="test",
    options=(),
    command=CommandSpec(help="a test probe", description="a test probe", output="tick.json", timeout_s=60),
    schema="common",
    analysis="tick",
    plots="tick",
)


# The flaky probe (tests/bundle_probes/flaky.py) as a registry entry: verify checks a completed step by
# its probe's entry, so a bundle of it verifies only while it is registered (`install_flaky`).
FLAKY = ProbeSpec(
    name="flaky",
    title="fails first (test probe)",
    lab="test",
    options=(),
    command=CommandSpec(help="a test probe", description="a test probe", output="flaky.json", timeout_s=60),
    schema="common",
)


def install_flaky(patch) -> None:
    """Register the flaky probe for the test's duration (PATCH: a pytest MonkeyPatch)."""
    patch.setattr(registry, "PROBES", (*registry.PROBES, FLAKY))


def install(patch=None) -> None:
    """Register the tick probe and stand in its analysis and plot modules: with PATCH (a pytest
    MonkeyPatch) for the test's duration, else for the process (a script, a worker)."""
    if patch is None:
        sys.modules["harness.analysis.tick"] = tick_analysis
        sys.modules["harness.present.plots.tick"] = tick_plots
        registry.PROBES = (*registry.PROBES, TICK)
        return
    patch.setitem(sys.modules, "harness.analysis.tick", tick_analysis)
    patch.setitem(sys.modules, "harness.present.plots.tick", tick_plots)
    patch.setattr(registry, "PROBES", (*registry.PROBES, TICK))


def _after_tick(state):
    first = state.document("tick", "the first tick's label")
    return StepArgs(("--label", f"after-{first['label']}"), inputs={"after": first["label"]})


def _after_fails(state):
    state.document("fails", "the failed step's output")
    return StepArgs()


PLAN = (
    ProbeStep(
        "tick", "tick", "Hash timing (test probe)", "test", schema="common", analysis="tick", plots="tick", timeout_s=60
    ),
    ProbeStep(
        "fails", "fails", "A failing probe (test)", "test", schema="common", analysis=None, plots=None, timeout_s=60
    ),
    ProbeStep(
        "tock",
        "tick",
        "Depends on tick (test)",
        "test",
        schema="common",
        analysis="tick",
        plots=None,
        timeout_s=60,
        arguments=_after_tick,
    ),
    ProbeStep(
        "orphan",
        "tick",
        "Depends on the failed step (test)",
        "test",
        schema="common",
        analysis=None,
        plots=None,
        timeout_s=60,
        arguments=_after_fails,
    ),
    ProbeStep(
        "absent",
        "no_such_probe",
        "A probe not in this build (test)",
        "test",
        schema="common",
        analysis=None,
        plots=None,
        timeout_s=60,
    ),
)

SLOW_PLAN = (
    ProbeStep(
        "tick", "tick", "Hash timing (test probe)", "test", schema="common", analysis=None, plots=None, timeout_s=60
    ),
    ProbeStep(
        "slow",
        "slow",
        "Waits to be interrupted (test)",
        "test",
        schema="common",
        analysis=None,
        plots=None,
        timeout_s=300,
    ),
)

# A plotted step (so the background plot worker is running), then a probe waiting for Ctrl-C.
PLOTTED_SLOW_PLAN = (
    ProbeStep(
        "tick", "tick", "Hash timing (test probe)", "test", schema="common", analysis="tick", plots="tick", timeout_s=60
    ),
    ProbeStep(
        "slow",
        "slow",
        "Waits to be interrupted (test)",
        "test",
        schema="common",
        analysis=None,
        plots=None,
        timeout_s=300,
    ),
)


def _observe(state):
    load = state.loads.get("loads")
    return StepArgs(("--during", *map(str, load["pids"])) if load else ("--during",))


# A step taken during another's load (ProbeStep.during): the observer starts when `loads` says its load is on.
DURING_PLAN = (
    ProbeStep("loads", "loads", "A load (test)", "test", schema="common", analysis=None, plots=None, timeout_s=120),
    ProbeStep(
        "observer",
        "observer",
        "Taken during the load (test)",
        "test",
        schema="common",
        analysis=None,
        plots=None,
        timeout_s=60,
        arguments=_observe,
        during="loads",
    ),
)


def beside_plan(when=lambda state: None):
    """A step placed before the one it runs beside (ProbeStep.beside), whose `beside_when` is WHEN."""
    return (
        ProbeStep(
            "cpu-work",
            "cpu_work",
            "Host work beside a measurement (test)",
            "test",
            schema="common",
            analysis=None,
            plots=None,
            timeout_s=60,
            beside="measures",
            beside_when=when,
        ),
        ProbeStep(
            "measures",
            "measures",
            "A measurement (test)",
            "test",
            schema="common",
            analysis=None,
            plots=None,
            timeout_s=120,
        ),
    )
