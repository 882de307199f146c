"""The verdict block: one vocabulary, what passed, failed and could not be judged, and why; the
exit code follows it; "cannot judge here" is never FAIL; every GEMM left unexplained is named with its
figures, and the bandwidth sweep's measured curve explains the H200's decode GEMMs by their size.

Real data: the full H200 bundle (tests/fixtures/h200/dossier-h200-full.tar.gz, its bandwidth sweep),
the lead's three windowed roofline captures re-stated under probe contract 4 (tests/roofline_remade.py),
and a CPU bundle's documents made here by the probes (tests/accept_support.cpu_dossier).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import registry
from harness.analysis.actions import Action
from harness.analysis.bandwidth import figures as bandwidth
from harness.analysis.roofline import reading, timings, unexplained
from harness.analysis.roofline.explanation import context_of, explain
from harness.analysis.verdict import Verdict
from harness.bundle.read import read_all
from harness.bundle.view import BundleView, Figures
from harness.judge import lab
from harness.judge.facts import BundleFacts
from harness.present.report import render_report
from harness.present.verdict import run_verdict
from tests.roofline_remade import capture, contract4

FULL = Path(__file__).parents[1] / "fixtures" / "h200" / "dossier-h200-full.tar.gz"
FLOOR_S = 2.0e-6  # the empty kernel replayed from a CUDA graph: a value for the rule (the captures have none)


@pytest.fixture(scope="module")
def full_files():
    return read_all(FULL)


def view_of(files: dict[str, bytes], edit=None) -> BundleView:
    files = dict(files)
    if edit:
        edit(files)
    return BundleView.from_files(files, registry.analysis_module)


def with_roofline(document):
    def edit(files):
        files["raw/roofline.json"] = json.dumps(document).encode()

    return edit


def roofline_result(view: BundleView):
    """The roofline criterion, the roof check set aside: the captures were fed 4232 GB/s (that machine's
    sustained median), the full bundle's own median is 4245.5, so its figures say the captures' roof."""
    figures = view.figures

    def fed(step):
        found = figures(step)
        if step == "bandwidth" and found.values:
            return Figures({**found.values, "repeat_median_gbps": 4232.0}, found.error)
        return found

    object.__setattr__(view, "figures", fed)
    return lab.judge_roofline(BundleFacts(view))[0]


def test_the_full_h200_dossier_passes_and_says_so_in_one_short_block(full_files):
    verdict = run_verdict(view_of(full_files))
    assert verdict.overall == Verdict.PASS and verdict.exit_code == 0
    assert [line.name for line in verdict.lines] == [
        "health",
        "bandwidth",
        "roofline",
        "precision",
        "allreduce",
        "transfer",
        "stress",
        "known-good",
        "idle-load",
    ]
    assert verdict.block() == ["PASS " + ", ".join(line.label for line in verdict.lines)] and verdict.block()[
        0
    ].startswith("PASS Health and toolchain, HBM bandwidth, GEMM roofline")
    report = full_files and render_report(view_of(full_files))
    head = report.split("## Criteria", 1)[0]
    assert "## Verdict: PASS" in head and "This run PASSED: every one of the 9 criteria judged passed" in head
    assert "**Passed:** Health and toolchain, HBM bandwidth" in head
    assert "| bf16 GEMM sustained (stress) | 677.5 TFLOPS | 676.9 TFLOPS | 100.1% | at least 90% | PASS |" in head


@pytest.mark.parametrize("run", [1, 2, 3])
def test_the_h200_decode_gemms_are_explained_by_their_transfer_size_from_the_measured_sweep(full_files, run):
    document = contract4(capture(run), kernel_floor_s=FLOOR_S)
    left = unexplained.unexplained(document)
    # the model alone finds no cause for some decode GEMMs (every run: which ones varies with the clocks it read)
    assert {e["label"] for e in left} <= {"qkv-decode-64", "o-decode-64", "o-decode-1"}
    assert run != 1 or {e["label"] for e in left} == {"qkv-decode-64", "o-decode-64", "o-decode-1"}
    cost = bandwidth.kernel_fixed_cost(json.loads(full_files["raw/bandwidth.json"]))
    # the sweep's line through 128 MiB (35.5 us) and 512 MiB (130.5 us): 3.87 us + bytes / 4241 GB/s
    assert cost["fixed_s"] == pytest.approx(3.872e-6, rel=1e-3) and cost["rate_gbps"] == pytest.approx(4241, rel=1e-3)
    for entry in left:
        found = unexplained.at_transfer_size(entry, cost)
        assert found is not None and 0.90 <= found["share"] <= 1.05, (entry["label"], found)  # 93-100%
    result = roofline_result(view_of(full_files, with_roofline(document)))
    assert result.status == Verdict.PASS and ("by their transfer size" in result.why) == bool(left)
    assert (
        any(
            f.startswith("qkv-decode-64 (bf16): explained by its transfer size") and "3218 GB/s" in f
            for f in result.findings
        )
        or run != 1
    )


def test_without_the_sweep_an_unexplained_gemm_fails_and_is_named_with_its_figures(full_files):
    document = contract4(capture(1), kernel_floor_s=FLOOR_S)

    def edit(files):
        with_roofline(document)(files)
        sweepless = json.loads(files["raw/bandwidth.json"])
        sweepless["sweep"] = sweepless["sweep"][:1]  # only a cache-resident point: no line can be drawn
        files["raw/bandwidth.json"] = json.dumps(sweepless).encode()

    result = roofline_result(view_of(full_files, edit))
    assert result.status == Verdict.FAIL
    assert "qkv-decode-64 (74% of its roof)" in result.why and "o-decode-64 (68% of its roof)" in result.why
    named = [f for f in result.findings if f.startswith("Not explained: qkv-decode-64")]
    assert named == [
        "Not explained: qkv-decode-64 (bf16, memory-bound): 3150 GB/s over its 49.2 MiB, 74% of the "
        "4232 GB/s roof (kernel-only, 16.4 us a call)."
    ]
    assert any(f.startswith("Ruled out for qkv-decode-64") and "SM clock median 1980 MHz" in f for f in result.findings)


def test_a_gemm_far_smaller_than_the_sweep_is_not_explained_by_the_line(full_files):
    cost = bandwidth.kernel_fixed_cost(json.loads(full_files["raw/bandwidth.json"]))
    tiny = {
        "label": "square-256",
        "dtype": "bf16",
        "bound": "memory",
        "min_bytes": 393216,
        "effective_gbps": 151.0,
        "fraction": 0.04,
        "roof_gbps": 4232.0,
    }
    assert unexplained.at_transfer_size(tiny, cost) is None  # 0.4 MiB: mostly the fixed cost, unresolved


def _killed(files):
    commands = json.loads(files["commands.json"])
    for step in commands["steps"]:
        if step["step"] == "bandwidth":
            step.update(status="failed", why="exited with code -9 (SIGKILL)", exit_code=-9, output=None)
    files.pop("raw/bandwidth.json")
    files["commands.json"] = json.dumps(commands).encode()


def test_a_killed_step_fails_the_run_and_says_why(full_files):
    verdict = run_verdict(view_of(full_files, _killed))
    assert verdict.overall == Verdict.FAIL and verdict.exit_code == 1
    assert verdict.block()[0] == (
        "FAIL HBM bandwidth: the bandwidth step failed: exited with code -9 (SIGKILL) -> RERUN_IDLE (step.failed)"
    )
    assert verdict.recommendation.action == Action.RERUN_IDLE and verdict.block()[-2].startswith("action: RERUN_IDLE")
    assert verdict.block()[-1].startswith("the driver's own recovery action: GPU0 unavailable (not recorded")


def test_a_step_left_out_is_skip_and_one_not_run_is_incomplete(full_files):
    def skipped(files, why):
        commands = json.loads(files["commands.json"])
        for step in commands["steps"]:
            if step["step"] == "precision":
                step.update(status="not_run", why=why, output=None)
        files.pop("raw/precision.json")
        files["commands.json"] = json.dumps(commands).encode()

    left_out = run_verdict(view_of(full_files, lambda f: skipped(f, "skipped with --skip precision")))
    assert left_out.overall == Verdict.PASS
    assert "SKIP Precision of checkpoint tensors: the precision step was left out" in left_out.block()[0]
    missing = run_verdict(view_of(full_files, lambda f: skipped(f, "the docker runner has no probe precision")))
    assert missing.overall == Verdict.INCOMPLETE and missing.exit_code == 5


def test_a_one_gpu_allreduce_recorded_without_a_probe_passes_as_the_lab_asks(full_files):
    def not_run(files):
        commands = json.loads(files["commands.json"])
        for step in commands["steps"]:
            if step["step"] == "allreduce":
                step.update(
                    status="not_run",
                    output=None,
                    why="1 GPU (the health step found 1 device): all-reduce needs at least 2; recorded, not simulated",
                )
        files.pop("raw/allreduce.json")
        files["commands.json"] = json.dumps(commands).encode()

    result = lab.judge_allreduce(BundleFacts(view_of(full_files, not_run)))[0]
    assert result.status == Verdict.PASS and result.why == "one GPU: the limitation is recorded, not simulated"


FINAL = Path(__file__).parents[1] / "fixtures" / "h200" / "final"


@pytest.mark.parametrize("run", ["a1", "b1", "b2"])
def test_the_h200_square_512_unexplained_under_contract_4_is_under_filled_from_contract_5(run):
    """The closing H200 runs (bench/gpu_final.sh, 2026-12-01, probe contract 4) each failed the criterion on
    square-512 (and a1 on o-decode-64 too: its sweep's median line cost 6.0 us a kernel); the same
    measurements under contract 5's rules (square-512 under-filled, the sweep's line through its fastest
    iterations) pass. The restated documents change only their contract version: the criterion recomputes
    every explanation and the line from the raw times."""
    files = read_all(FINAL / f"h200-{run}.tar.gz")
    document, sweep = json.loads(files["raw/roofline.json"]), json.loads(files["raw/bandwidth.json"])
    assert document["contract_version"] == sweep["contract_version"] == 4
    before = lab.judge_roofline(BundleFacts(view_of(files)))[0]
    assert before.status == Verdict.FAIL and "square-512 (9% of its roof)" in before.why, before.why
    assert ("o-decode-64" in before.why) == (run == "a1")
    restated = {**document, "contract_version": 5}

    def contract5(files):
        with_roofline(restated)(files)
        files["raw/bandwidth.json"] = json.dumps({**sweep, "contract_version": 5}).encode()

    after = lab.judge_roofline(BundleFacts(view_of(files, contract5)))[0]
    assert after.status == Verdict.PASS and "by their transfer size" in after.why, after.why
    cost = bandwidth.kernel_fixed_cost({**sweep, "contract_version": 5})
    assert cost["statistic"] == "fastest" and 2.9e-6 < cost["fixed_s"] < 3.3e-6  # 3.0, 3.1, 3.2 us
    view = reading.dtype_documents(restated)["bf16"]
    shape = next(s for s in reading.measured(view) if s["label"] == "square-512")
    explanation = explain(reading.prediction(view, "square-512"), timings.as_timed(view, shape), context_of(view))
    assert [c["cause"] for c in explanation["causes"]] == ["under_filled"]
    assert "8 output tiles of 128x256 (assumed) keep 8 of 132 SMs busy (6%)" in explanation["causes"][0]["detail"]

    def causes(document, label):
        view = reading.dtype_documents(document)["bf16"]
        shape = next(s for s in reading.measured(view) if s["label"] == label)
        found = explain(reading.prediction(view, label), timings.as_timed(view, shape), context_of(view))
        return [c["cause"] for c in found["causes"]]

    assert causes(document, "square-512") == []  # contract 4's model: no cause, as the bundle states
    # 24 assumed tiles (18% of the SMs) drew 74-75% of the roof: more SMs than the tile gives, not under-filled
    assert "under_filled" not in causes(restated, "qkv-decode-64")
