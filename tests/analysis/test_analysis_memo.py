"""Headlines remembered while one bundle is checked (harness/analysis/memo.py): the same answer as
computing them afresh, on the committed full H200 dossier (2026-12-01), and nothing remembered
outside the scope."""

from __future__ import annotations

import copy

from harness import registry
from harness.analysis import stress
from harness.analysis.memo import remembering
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.fleet.node import NodeTask, check_node
from harness.signing.keys import load_public
from harness.verify import verify_bundle
from tests.commands.test_prometheus_exports import FULL, FULL_KEY


def test_inside_the_scope_a_document_is_computed_once_outside_every_time():
    document = BundleView.from_files(read_all(FULL), registry.analysis_module).documents["stress"]
    assert stress.headlines(document) is not stress.headlines(document)
    with remembering():
        first = stress.headlines(document)
        assert stress.headlines(document) is first and first == stress.headlines.__wrapped__(document)
        other = copy.deepcopy(document)
        other["settings"]["seconds"] = 1.0
        assert stress.headlines(other)["seconds"] == 1.0 and first["seconds"] != 1.0  # each document its own
    assert stress.headlines(document) is not first


def test_a_fleet_nodes_check_says_what_verify_says():
    allowed = (4,)  # the committed full dossier is format 4: allowed, as a user would
    node = check_node(NodeTask("h200", str(FULL), str(FULL_KEY), None, allow_formats=allowed))
    plain = verify_bundle(FULL, load_public(FULL_KEY), allow_formats=allowed)
    assert node["status"] == "ok" and node["verify"]["checks_passed"] == len(plain.checks) - len(plain.failures)
    assert node["verify"]["failures"] == [c.line() for c in plain.failures] == []
    assert node["acceptance"]["verdict"] == "pass" and node["metrics"]["stress_steady_tflops"] > 600
