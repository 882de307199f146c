"""`dossier check`'s recommended actions (issue 39) on the real H200 readings (tests/check_support.py),
each fail path changing one recorded fact: the action of every failed check with the rule that chose
it, the fatal XIDs' from NVIDIA's Xid catalogue through the catalogue's node_check, the node's (the most
severe), and where they show: the NHC lines, the JSON document, the drain reason, the Prometheus
textfile. The driver's own recovery action is not in the captures: the document says so beside ours."""

from __future__ import annotations

import json

import pytest

from harness import catalogue
from harness.analysis import actions
from harness.analysis.actions import Action
from harness.analysis.verdict import Verdict
from harness.check import drain, result, xid
from harness.check.expectation import Expectation
from harness.check.findings import recommend
from harness.check.judge import judge
from harness.export import gauges
from harness.schemas import violations
from tests.check.test_check_xid import APP_ERROR, FALLEN_OFF, OLD_FORM, ROW_REMAP_XID, with_lines
from tests.check_support import changed, reading

EXPECT = Expectation(gpus=1, sku="h200-sxm-141gb", sku_from="--sku")


def _set(path, value):
    def edit(r):
        target = r["devices"][0]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


FAILS = {  # check -> (the one fact changed, the action, the rule)
    "row_remaps": (_set(("ecc", "remapped_rows_pending"), True), Action.RESET_GPU, "row_remaps.pending"),
    "ecc": (_set(("ecc", "volatile_uncorrected_errors"), 2), Action.RESET_GPU, "ecc.uncorrectable"),
    "pcie_width": (_set(("pcie", "current_width"), 8), Action.INSPECT_HARDWARE, "pcie.narrower"),
    "clock_events": (
        _set(("clock_event_reasons",), {"mask": 0x41, "names": ["gpu_idle", "hw_thermal_slowdown"]}),
        Action.INSPECT_HARDWARE,
        "clocks.slowdown",
    ),
    "persistence_mode": (_set(("modes", "persistence"), "disabled"), Action.RECONFIGURE, "mode.persistence"),
    "gpu_sku": (_set(("pci_device_id",), "0x233010de"), Action.INSPECT_HARDWARE, "gpu_sku.wrong"),
}


@pytest.mark.parametrize("check", sorted(FAILS))
def test_each_failed_check_names_its_action_and_the_rule_that_chose_it(check):
    edit, action, rule = FAILS[check]
    findings = judge(changed(reading(), edit), EXPECT)
    failed = next(f for f in findings if f.verdict == Verdict.FAIL)
    assert (failed.name, failed.action.action, failed.action.rule) == (check, action, rule)
    assert all(f.action.action == Action.NONE for f in findings if f.verdict != Verdict.FAIL)
    assert recommend(findings).action == action
    shown = result.lines("n1", findings)
    assert shown[0].endswith(f" -> {action} ({rule})") and shown[-1].endswith(f"-> {action}")


def test_a_healthy_node_recommends_nothing_and_a_check_that_cannot_judge_drains():
    healthy = judge(reading(), EXPECT)
    assert recommend(healthy).action == Action.NONE
    odd = {"unavailable": "NVMLError_Unknown: Unknown Error"}
    blind = judge(changed(reading(), _set(("modes", "persistence"), odd)), EXPECT)
    assert (recommend(blind).action, recommend(blind).rule) == (Action.DRAIN, "check.not_judged")
    reason = drain.reason_for(result.first_problem(blind))
    assert reason.startswith("dossier check: DRAIN: persistence_mode: GPU0: unreadable")


def test_fatal_xids_take_nvidias_immediate_action_and_the_node_the_most_severe():
    fallen = next(f for f in judge(with_lines((10.0, FALLEN_OFF)), EXPECT) if f.name == "xid_events")
    assert fallen.action.action == Action.REBOOT_NODE and fallen.action.rule == "xid.79"
    assert "RESTART_BM" in fallen.action.why and "azure, dcgm" in fallen.action.why
    dbe = next(f for f in judge(with_lines((10.0, OLD_FORM)), EXPECT) if f.name == "xid_events")
    assert (dbe.action.action, dbe.action.rule) == (Action.RESET_GPU, "xid.48")
    remap = next(f for f in judge(with_lines((10.0, ROW_REMAP_XID)), EXPECT) if f.name == "xid_events")
    assert remap.action.action == Action.DRAIN and "IGNORE" in remap.action.why  # NVIDIA: ignore; Azure: drain
    both = next(f for f in judge(with_lines((9.0, OLD_FORM), (10.0, FALLEN_OFF)), EXPECT) if f.name == "xid_events")
    assert both.action.rule == "xid.79"
    app = next(f for f in judge(with_lines((10.0, APP_ERROR)), EXPECT) if f.name == "xid_events")
    assert app.verdict == Verdict.PASS and app.action.action == Action.NONE


def test_every_fatal_xid_of_the_catalogue_has_nvidias_action_in_our_words():
    rules = catalogue.node_check_rules()
    for entry in rules["fatal_xids"]:
        assert entry["nvidia_immediate_action"] in rules["actions"], entry
        assert xid.recommendation(entry["xid"]).action in actions.ORDER
    assert "gpud" in rules["sources"]["nvidia"] and "analyzing-xid-catalog" in rules["sources"]["nvidia"]


def test_a_lost_gpu_and_a_link_below_its_generation_at_work_say_reboot():
    lost = {"unavailable": "NVMLError_GpuIsLost: GPU is lost"}
    found = next(f for f in judge(changed(reading(), _set(("ecc", "mode_current"), lost)), EXPECT) if f.name == "ecc")
    assert (found.action.action, found.action.rule) == (Action.REBOOT_NODE, "gpu.lost")
    low = changed(reading("node-after.json"), _set(("pcie", "current_gen"), 4))
    found = next(f for f in judge(low, EXPECT) if f.name == "pcie_generation")
    assert (found.action.action, found.action.rule) == (Action.REBOOT_NODE, "pcie.generation_low")


def test_the_document_the_drain_reason_and_prometheus_carry_the_action_and_the_drivers_beside_it():
    r = changed(reading(), _set(("ecc", "remapped_rows_pending"), True))
    findings = judge(r, EXPECT)
    document = result.document("n1", findings, EXPECT, r)
    assert violations("check", json.loads(json.dumps(document))) == []
    assert document["recommendation"]["action"] == "RESET_GPU"
    assert [c["action"]["action"] for c in document["checks"] if c["name"] == "row_remaps"] == ["RESET_GPU"]
    driver = document["driver_recovery_actions"]
    assert driver[0]["gpu"] == 0 and "NotCaptured: nvmlDeviceGetFieldValues" in driver[0]["unavailable"]
    assert "(driver: GPU0 unavailable (NotCaptured" in document["summary"]
    problem = result.first_problem(findings)
    assert drain.reason_for(problem).startswith("dossier check: RESET_GPU: row_remaps: GPU0: remap pending: True")
    text = gauges.check(document).registry
    samples = {(m.name, tuple(sorted(s.labels.items()))): s.value for m in text.collect() for s in m.samples}
    key = (
        "rig_dossier_check_recommended_action",
        (("action", "RESET_GPU"), ("node", "n1"), ("rule", "row_remaps.pending")),
    )
    assert samples[key] == 1.0
