"""`dossier health`, `dossier check` and `dossier accept` apply one rule set to a GPU's NVML facts
(harness.analysis.device_rules, issue 36): on the committed H200 captures they agree, and each fact
changed alone fails all three the same way, with the same recommended action (issue 39).

The captures: the lent H200's `dossier health` idle and under load (tests/fixtures/h200/health.idle.json,
health.load.json), the two-H200 machine's (tests/fixtures/h200x2/health.json, 18 NVLink links per GPU)
and `dossier check`'s node readings of the H200 (tests/fixtures/h200/check/, through tests/check_support).
A check reading holds a health.json device as it is (the same NVML reads, harness/probes/devices.py), so
check is judged here on the health captures' devices in a reading of the H200 node. Each fail path
changes one recorded fact (EDITED, named in the parameter) in every document, nothing else."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from harness import registry
from harness.analysis.health import device_contracts
from harness.analysis.verdict import Verdict, parse
from harness.check.expectation import Expectation
from harness.check.judge import judge
from harness.judge.acceptance.criteria import evaluate
from harness.judge.facts import BundleFacts
from tests.accept_support import apply_file, resolve, view_of
from tests.check_support import reading

FIXTURES = Path(__file__).parents[1] / "fixtures"
SXM = "h200-sxm-141gb"
CRITERIA = registry.acceptance_criteria()

# rule -> (health contract, check finding or None, acceptance criterion)
SHARED = {
    "ecc": ("ecc_enabled_no_uncorrectable", "ecc", "ecc_uncorrectable_zero"),
    "row_remaps": ("no_pending_or_failed_row_remaps", "row_remaps", "row_remaps_clean"),
    "persistence": ("persistence_mode_on", "persistence_mode", "config_persistence"),
    "pcie": ("pcie_link_at_max", "pcie_width", "pcie_link_at_max_under_load"),
    "clocks": ("clocks_not_locked_below_max", None, "config_application_clocks"),
    "power": ("power_limit_at_default", None, "config_power_limit"),
    "nvlink": ("nvlink_links_up", "nvlink", "config_nvlink"),
}
CONTRACTS = {
    "ecc_enabled_no_uncorrectable": device_contracts.ecc_enabled_no_uncorrectable,
    "no_pending_or_failed_row_remaps": device_contracts.no_pending_or_failed_row_remaps,
    "persistence_mode_on": device_contracts.persistence_mode_on,
    "pcie_link_at_max": device_contracts.pcie_link_at_max,
    "clocks_not_locked_below_max": device_contracts.clocks_not_locked_below_max,
    "power_limit_at_default": device_contracts.power_limit_at_default,
    "nvlink_links_up": device_contracts.nvlink_links_up,
}


def captured(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def pair(machine: str) -> tuple[dict, dict]:
    """(idle, under load) health documents of one machine (the two-H200 one has an idle capture only:
    it stands for both, marked as taken under load for the link rule)."""
    if machine == "h200":
        return captured("h200/health.idle.json"), captured("h200/health.load.json")
    idle = captured("h200x2/health.json")
    return idle, {**copy.deepcopy(idle), "mode": "under_load"}


def check_findings(document: dict) -> dict:
    node = reading()
    node["devices"] = copy.deepcopy(document["devices"])
    node["pci_gpus"] = [dict(node["pci_gpus"][0], address=f"0000:00:0{6 + i}.0") for i in range(len(node["devices"]))]
    return {f.name: f for f in judge(node, Expectation(gpus=len(node["devices"]), sku=SXM, sku_from="--sku"))}


def accepted(idle: dict, load: dict) -> dict:
    profile = apply_file(resolve(SXM), {"sku_id": SXM, "required": ["config_nvlink"]}, "test profile")
    results = evaluate(BundleFacts(view_of({"health": idle, "health-load": load})), profile, CRITERIA)
    return {r.name: r for r in results}


def judged(machine: str, edit=None) -> dict[str, tuple]:
    """rule -> (health's verdict, check's, accept's, the actions check and accept name)."""
    idle, load = pair(machine)
    if edit:
        for document in (idle, load):
            for device in document["devices"]:
                edit(device)
    checks, accepts = check_findings(load), accepted(idle, load)
    out = {}
    for rule, (contract, finding, criterion) in SHARED.items():
        health = parse(CONTRACTS[contract](load)["status"])
        check = checks[finding] if finding else None
        accept = accepts[criterion]
        actions = {check.action.rule if check else None, accept.recommendation.rule} - {None, "none"}
        out[rule] = (health, check.verdict if check else None, accept.status, actions)
    return out


@pytest.mark.parametrize("machine", ["h200", "h200x2"])
def test_the_committed_h200_captures_pass_every_shared_rule_in_all_three(machine):
    for rule, (health, check, accept, actions) in judged(machine).items():
        if rule == "nvlink" and machine == "h200":  # one GPU in a VM: NVLink NotSupported, nothing to judge
            assert health == Verdict.SKIP and check == Verdict.SKIP and accept == Verdict.INCOMPLETE, rule
            continue
        assert health == Verdict.PASS and accept == Verdict.PASS and check in (Verdict.PASS, None), (rule, health)
        assert actions == set()


def _set(path, value):
    def edit(device):
        target = device
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def _link_down(device):  # EDITED: link 5 of every GPU inactive
    device["nvlink"][5]["active"] = False


FAILS = {  # rule -> (machine, the one fact changed, the action rule all of them name)
    "ecc": ("h200", _set(("ecc", "volatile_uncorrected_errors"), 2), "ecc.uncorrectable"),
    "row_remaps": ("h200", _set(("ecc", "remapped_rows_pending"), True), "row_remaps.pending"),
    "persistence": ("h200", _set(("modes", "persistence"), "disabled"), "mode.persistence"),
    "pcie": ("h200", _set(("pcie", "current_width"), 8), "pcie.narrower"),
    "clocks": ("h200", _set(("clocks", "applications_graphics_mhz"), 1755), "clocks.application"),
    "power": ("h200", _set(("power", "enforced_limit_w"), 600.0), "power.limit"),
    "nvlink": ("h200x2", _link_down, "nvlink.inactive"),
}


@pytest.mark.parametrize("rule", sorted(FAILS))
def test_one_changed_fact_fails_health_check_and_accept_alike_with_one_action(rule):
    machine, edit, action = FAILS[rule]
    health, check, accept, actions = judged(machine, edit)[rule]
    assert health == Verdict.FAIL and accept == Verdict.FAIL and check in (Verdict.FAIL, None), (health, check, accept)
    assert actions == {action}
    others = {r: v for r, v in judged(machine, edit).items() if r != rule}
    assert all(v[0] != Verdict.FAIL for v in others.values()), others  # the change fails its rule only
