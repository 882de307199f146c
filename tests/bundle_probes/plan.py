"""Plans for bundle mechanics tests: a completed step, a failed one, a dependent one, a not-run one."""
from harness.steps import ProbeStep, StepArgs

PACKAGE = "tests.bundle_probes"


def _after_tick(state):
    first = state.document("tick", "the first tick's label")
    return StepArgs(("--label", f"after-{first['label']}"), inputs={"after": first["label"]})


def _after_fails(state):
    state.document("fails", "the failed step's output")
    return StepArgs()


PLAN = (
    ProbeStep("tick", "tick", "Hash timing (test probe)", "test", schema="common",
              analysis="tick", plots="tick", timeout_s=60),
    ProbeStep("fails", "fails", "A failing probe (test)", "test", schema="common",
              analysis=None, plots=None, timeout_s=60),
    ProbeStep("tock", "tick", "Depends on tick (test)", "test", schema="common",
              analysis="tick", plots=None, timeout_s=60, arguments=_after_tick),
    ProbeStep("orphan", "tick", "Depends on the failed step (test)", "test", schema="common",
              analysis=None, plots=None, timeout_s=60, arguments=_after_fails),
    ProbeStep("absent", "no_such_probe", "A probe not in this build (test)", "test", schema="common",
              analysis=None, plots=None, timeout_s=60),
)

SLOW_PLAN = (
    ProbeStep("tick", "tick", "Hash timing (test probe)", "test", schema="common",
              analysis=None, plots=None, timeout_s=60),
    ProbeStep("slow", "slow", "Waits to be interrupted (test)", "test", schema="common",
              analysis=None, plots=None, timeout_s=300),
)

# A plotted step (so the background plot worker is running), then a probe waiting for Ctrl-C.
PLOTTED_SLOW_PLAN = (
    ProbeStep("tick", "tick", "Hash timing (test probe)", "test", schema="common",
              analysis="tick", plots="tick", timeout_s=60),
    ProbeStep("slow", "slow", "Waits to be interrupted (test)", "test", schema="common",
              analysis=None, plots=None, timeout_s=300),
)
