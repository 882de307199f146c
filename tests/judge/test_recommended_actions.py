"""The recommended action of every failed criterion, acceptance's and the lab's (harness.judge.recommend,
issue 39), on the real H200 dossiers: tests/fixtures/h200/final/h200-contended.tar.gz, run beside a
co-tenant process doing bf16 matmuls (pid 1698, python3; see tests/fixtures/README.md), and its clean
neighbour h200-b1 on the same machine start. A co-tenant's slowdown says RERUN_IDLE, not an RMA; the
same slow figures with nothing recorded beside them (the co-tenant's process removed from the health
documents: EDITED; derived/health-diff.json, which names it too, is left as it is) say INSPECT_HARDWARE,
and with a lowered power limit (EDITED) RECONFIGURE."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness import registry
from harness.analysis.actions import Action
from harness.analysis.verdict import Verdict
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.judge import action_words, recommend
from harness.judge.acceptance.outcome import BundleRef, judge
from harness.judge.acceptance.predicate import VERDICT_NAME, acceptance_statement
from harness.judge.facts import BundleFacts
from harness.present.verdict import judged, run_verdict
from tests.accept_support import resolve

FINAL = Path(__file__).parents[1] / "fixtures" / "h200" / "final"
FULL = Path(__file__).parents[1] / "fixtures" / "h200" / "dossier-h200-full.tar.gz"
SXM = "h200-sxm-141gb"
REF = BundleRef("h200-contended.tar.gz", "0" * 64, "keyid", 1)


@pytest.fixture(scope="module")
def contended() -> dict[str, bytes]:
    return read_all(FINAL / "h200-contended.tar.gz")


def view(files: dict[str, bytes], edit=None) -> BundleView:
    files = dict(files)
    if edit:
        for member in ("raw/health.json", "raw/health-load.json"):
            document = json.loads(files[member])
            edit(document)
            files[member] = json.dumps(document).encode()
    return BundleView.from_files(files, registry.analysis_module)


def _alone(document):  # EDITED: the co-tenant's process taken out of every listing
    for device in document["devices"]:
        device["processes"] = [p for p in device["processes"] if p.get("pid") in document.get("harness_pids", [])]
    for record in (document.get("load") or {}).get("devices") or []:
        for sample in record.get("samples") or []:
            sample["processes"] = [p for p in sample.get("processes") or [] if p.get("pid") != 1698]


def _capped(document):  # EDITED: the co-tenant taken out, and the power limit lowered to 600 W
    _alone(document)
    for device in document["devices"]:
        device["power"]["enforced_limit_w"] = 600.0


def accepted(v: BundleView):
    return judge(v, resolve(SXM), REF, registry.acceptance_criteria())


def test_beside_a_co_tenant_every_failed_criterion_says_rerun_idle(contended):
    acceptance = accepted(view(contended))
    failed = [r for r in acceptance.results if r.status == Verdict.FAIL]
    assert "no_unexpected_process" in [r.name for r in failed]
    assert {r.action.action for r in failed} == {Action.RERUN_IDLE}, [(r.name, r.action) for r in failed]
    rates = [r for r in failed if r.action.rule == "rate.disturbed"]
    assert rates and all("pid 1698 (python3)" in r.action.why for r in rates)
    assert acceptance.recommendation.action == Action.RERUN_IDLE
    document = acceptance.to_json()
    assert document["format_version"] == 3 and document["recommendation"]["action"] == "RERUN_IDLE"
    assert all(
        c["action"]["action"] == ("RERUN_IDLE" if c["status"] == "fail" else "NONE") for c in document["criteria"]
    )


def test_the_same_slow_figures_with_nothing_beside_them_say_inspect_and_with_a_cap_reconfigure(contended):
    alone = [r for r in accepted(view(contended, _alone)).results if r.status == Verdict.FAIL]
    rates = {r.name: r.action for r in alone if r.action.rule.startswith("rate.")}
    assert rates and {a.action for a in rates.values()} == {Action.INSPECT_HARDWARE}, rates
    capped = [r for r in accepted(view(contended, _capped)).results if r.status == Verdict.FAIL]
    actions = {r.name: r.action for r in capped}
    assert actions["config_power_limit"].action == Action.RECONFIGURE
    assert {a.action for n, a in actions.items() if a.rule.startswith("rate.")} == {Action.RECONFIGURE}


def test_the_attestation_carries_each_failed_criterions_action_and_the_acceptances(contended):
    acceptance = accepted(view(contended))
    stmt = acceptance_statement(acceptance, {"name": "rig-dossier", "version": "test"}, None)
    descriptor = next(d for d in stmt["predicate"]["configuration"] if d["name"] == VERDICT_NAME)

    content = json.loads(base64.b64decode(descriptor["content"]))  # inline, as verify-acceptance reads it
    assert content["recommendation"]["action"] == "RERUN_IDLE" and descriptor["annotations"]["action"] == "RERUN_IDLE"
    assert set(content["actions"]) == set(acceptance.named(Verdict.FAIL))


def test_the_lab_verdict_beside_a_co_tenant_says_rerun_idle_and_a_clean_run_nothing(contended):
    verdict = run_verdict(view(contended))
    assert verdict.overall == Verdict.FAIL and verdict.recommendation.action == Action.RERUN_IDLE
    block = verdict.block()
    assert any(
        line.startswith("FAIL HBM bandwidth:") and line.endswith("-> RERUN_IDLE (rate.disturbed)") for line in block
    )
    # its clean neighbour fails contract 4's square-512 only (tests/machines/test_h200_contract5.py): a rerun
    neighbour = run_verdict(view(read_all(FINAL / "h200-b1.tar.gz")))
    assert [(line.name, line.action.rule) for line in neighbour.lines if line.action] == [
        ("roofline", "roofline.unexplained")
    ]
    clean = run_verdict(view(read_all(FINAL / "h200-contract5.tar.gz")))
    assert clean.overall == Verdict.PASS and clean.recommendation.action == Action.NONE
    assert not any(line.startswith("action:") for line in clean.block())


@pytest.mark.parametrize("bundle", [FULL, FINAL / "h200-contended.tar.gz"])
def test_every_criterion_a_real_dossier_gives_has_a_rule_of_its_own(bundle):
    """Each result forced to FAIL without an action gets one from the table, never the catch-all."""
    v = view(read_all(bundle))
    facts = BundleFacts(v)
    results = [*accepted(v).results, *judged(v)]
    forced = [replace(r, status=Verdict.FAIL, action=None) for r in results]
    unruled = [r.name for r in recommend.attach(forced, facts) if r.action.rule == action_words.UNRULED.rule]
    assert unruled == []
