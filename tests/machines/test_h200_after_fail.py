"""After a FAIL on the H200 (issue 39), on what the lent GPU wrote (tests/fixtures/h200/after-fail/, made by
`EVIDENCE=1 OUT=$OUT bash bench/gpu_retest.sh` on 2026-12-02 13:57 UTC, GPU-75aa3e01, its
bench/gpu_evidence.sh part: `dossier run --skip precision --stress-seconds 20 --stress-inject-fault gemm`
then `dossier evidence` live on that node): the injected GEMM fault FAILs with an action above RERUN_IDLE,
and its evidence archive verifies with the campaign's key, each piece present or unavailable with its cause."""

from __future__ import annotations

import json
from pathlib import Path

from harness import registry
from harness.analysis.actions import Action
from harness.analysis.verdict import Verdict
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.evidence.check import verify_archive
from harness.present.verdict import run_verdict
from harness.signing.keys import load_public

HERE = Path(__file__).parents[1] / "fixtures" / "h200" / "after-fail"
KEY = Path(__file__).parents[1] / "fixtures" / "h200" / "campaign" / "campaign-2.pub"


def test_the_injected_gemm_fault_fails_with_an_action_above_rerun_idle():
    view = BundleView.from_files(read_all(HERE / "h200-faulty.tar.gz"), registry.analysis_module)
    verdict = run_verdict(view)
    assert verdict.overall == Verdict.FAIL
    stress = next(line for line in verdict.lines if line.name == "stress")
    assert stress.verdict == Verdict.FAIL and "1 of 5826 iterations mismatched" in stress.why
    assert stress.action.action == Action.INSPECT_HARDWARE and stress.action.rule == "results.corrupt"
    assert verdict.recommendation.action.severity > Action.RERUN_IDLE.severity


def test_its_evidence_archive_verifies_and_says_what_it_could_not_take():
    checks, not_done = verify_archive(HERE / "evidence-h200-faulty.tar.gz", load_public(KEY), load_public(KEY))
    assert checks and all(c.ok for c in checks) and not not_done
    files = read_all(HERE / "evidence-h200-faulty.tar.gz")
    pieces = json.loads(files["manifest.json"])["pieces"]
    assert pieces["nvidia_bug_report"] == {"unavailable": pieces["nvidia_bug_report"]["unavailable"]}
    assert "not on PATH" in pieces["nvidia_bug_report"]["unavailable"]
    live = json.loads(files["live/gpu-identity.json"])
    assert live[0]["name"] == "NVIDIA H200" and live[0]["inforom"]["image_version"] == "G520.0282.02.02"
    assert "live/nvidia-smi-q.txt" in files and len(files["live/nvidia-smi-q.txt"]) > 10_000
