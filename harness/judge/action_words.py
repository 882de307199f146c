"""What each rule of harness.judge.recommend recommends after a failed criterion, in words: the fixed
Recommendations (harness.analysis.actions), each with its rule id and why. The rate rule, whose words
depend on what the bundle records, is recommend.rate."""

from __future__ import annotations

from harness.analysis.actions import Action, Recommendation

UNSTEADY = Recommendation(
    Action.RERUN_IDLE,
    "rate.unsteady",
    "the repeats disagree: a measurement that varies is disturbed until shown otherwise (the lab: diagnose "
    "before continuing); run it again on an idle node",
)

STEP_FAILED = Recommendation(
    Action.RERUN_IDLE,
    "step.failed",
    "the step crashed, timed out or gave invalid output (its raw output is in the bundle): run it again; a "
    "second failure escalates (dossier retest)",
)

NOT_JUDGED = Recommendation(
    Action.RERUN_IDLE,
    "criterion.could_not_judge",
    "the criterion could not be judged from this bundle's data (its why names the error): make the dossier "
    "again, and report the error if it repeats",
)

RETEST_REFUSED = Recommendation(
    Action.RERUN_IDLE,
    "retest.refused",
    "the step passed only on a retest and the profile refuses that: a step that fails and then passes is not "
    "steady; run it again on an idle node",
)

CLOCKS_STUCK = Recommendation(
    Action.RESET_GPU,
    "clocks.stuck",
    "the clocks did not rise under load with nothing else on the GPU: a GPU stuck in a low clock state is "
    "cleared by a reset (nvidia-smi -r)",
)

WRONG_SKU = Recommendation(
    Action.INSPECT_HARDWARE, "identity.wrong_sku", "the GPUs are not the SKU being bought: a matter for the vendor"
)

SOFTWARE = Recommendation(
    Action.RECONFIGURE,
    "config.software",
    "the driver, CUDA, torch or NCCL is not what the node should run: install the expected versions",
)

STRESS_ERRORS = Recommendation(
    Action.RESET_GPU,
    "stress.errors",
    "an XID, ECC event or row remap during the load: reset the GPU and check again (dossier check); if they "
    "recur, inspect the hardware",
)

CORRUPTION = Recommendation(
    Action.INSPECT_HARDWARE,
    "results.corrupt",
    "a result differs from the reference bit for bit, or the memory test read back a wrong word: silent data "
    "corruption is a hardware fault",
)

SHORT_STRESS = Recommendation(
    Action.RERUN_IDLE,
    "stress.short",
    "the stress run was shorter than the profile asks: run it again as long as the profile asks",
)

LINK_INCONSISTENT = Recommendation(
    Action.DRAIN,
    "transfer.inconsistent",
    "a copy ran faster than the link NVML reports allows: the node's topology is not what NVML says; take it "
    "out of service until it is looked at",
)

REMEASURE = Recommendation(
    Action.RERUN_IDLE,
    "measurement.incomplete",
    "the step's figures do not meet what the lab asks of them (not a device fault): run it again on an idle node",
)

ROOFLINE_UNEXPLAINED = Recommendation(
    Action.RERUN_IDLE,
    "roofline.unexplained",
    "a GEMM the roofline cannot explain, or a roof it cannot show, with nothing recorded beside it: measure it again "
    "on an idle node; one still unexplained on a retest escalates (dossier retest)",
)

SETTING = Recommendation(
    Action.RECONFIGURE,
    "config.setting",
    "a GPU setting is not what the profile expects (or could not be shown to be): set it as the profile says, "
    "then check again",
)

MEMORY = Recommendation(
    Action.RESET_GPU,
    "memory.errors",
    "uncorrectable ECC errors or a row remap waiting (or their counters could not be read): reset the GPU and "
    "check again (dossier check); if they recur, inspect the hardware",
)

LINK_UNREAD = Recommendation(
    Action.RERUN_IDLE,
    "pcie.unread",
    "the host link could not be shown at its generation and width under load: measure it again (dossier check, "
    "dossier health --under-load 5)",
)

UNRULED = Recommendation(
    Action.DRAIN,
    "criterion.no_rule",
    "no rule of this build names an action for this criterion: take the node out of service until it is looked at",
)
