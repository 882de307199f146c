"""Probe contract 5 on the lent H200 SXM (tests/fixtures/h200/final/h200-contract5.tar.gz): made by
`OUT=$OUT bash bench/gpu_contract5.sh` on 2026-12-01 at 18:51 UTC, the steps the roofline criterion reads
(health, bandwidth, roofline; the others skipped), signed with the key of the other final bundles
(h200-final.pub). Under contract 4 every healthy H200 dossier failed the roofline criterion on square-512
bf16 (tests/present/test_verdict_block.py); this one, measured by contract 5's probe, states it
under-filled, verifies (the stated explanations are the recomputed ones) and passes."""

from __future__ import annotations

import json
from pathlib import Path

from harness import registry
from harness.analysis.roofline import unexplained
from harness.analysis.verdict import Verdict
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.cli import main
from harness.judge import lab
from harness.judge.facts import BundleFacts

FINAL = Path(__file__).parents[1] / "fixtures" / "h200" / "final"
BUNDLE, PUB = FINAL / "h200-contract5.tar.gz", FINAL / "h200-final.pub"


def test_the_contract_5_h200_run_verifies_and_its_report_says_pass(capsys):
    # format 5: this build renders format 6, so the bundle's own report is not re-rendered (NOT DONE)
    assert main(["verify", str(BUNDLE), "--key", str(PUB), "--allow-format", "5"]) == 0
    assert "verified" in capsys.readouterr().out
    report = read_all(BUNDLE)["report.md"].decode()
    assert "## Verdict: PASS" in report and "- SKIP stress: the stress step was left out" in report


def test_square_512_is_stated_under_filled_and_every_gemm_is_explained():
    files = read_all(BUNDLE)
    document = json.loads(files["raw/roofline.json"])
    assert document["contract_version"] == 5 and document["summary"]["all_explained"] is True
    shape = next(s for s in document["measurements"]["shapes"] if s["label"] == "square-512")
    assert [c["cause"] for c in shape["explanation"]["causes"]] == ["under_filled"]
    assert unexplained.unexplained(document) == []
    result = lab.judge_roofline(BundleFacts(BundleView.from_files(files, registry.analysis_module)))[0]
    assert result.status == Verdict.PASS, result.why
