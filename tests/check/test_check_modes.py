"""`dossier check --mode prolog|epilog` on CPU: the job's GPUs from the scheduler's environment, the
real H200 reading narrowed to them, the recommended action a drain reason leads with, and the
reading's time limit (a real reader process that hangs, killed).

The two-GPU node is the real H200 reading with its one GPU recorded twice, the second as GPU1 with
its own UUID and PCI address (what changes is named); the Slurm side runs for real in
tests/check/test_check_prolog_slurm.py."""

from __future__ import annotations

import sys

import pytest

from harness.analysis.actions import Action
from harness.analysis.verdict import Verdict
from harness.check import advice, bounded, drain, scope
from harness.check.expectation import Expectation
from harness.check.judge import Finding, judge
from harness.check.result import document
from harness.cli import main
from harness.errors import UsageError
from tests.check_support import changed, reading

H200 = "h200-sxm-141gb"
NODE = Expectation(gpus=2, sku=H200, sku_from="--sku", no_gpu_processes=True)
SECOND_UUID = "GPU-00000000-0000-0000-0000-000000000001"
SECOND_BUS = "00000000:19:00.0"


def two_gpus() -> dict:
    """The idle H200 reading with its GPU recorded again as GPU1 (another UUID and PCI address)."""

    def add(r):
        first = r["devices"][0]
        second = {**first, "nvml_index": 1, "uuid": SECOND_UUID, "pci_bus_id": SECOND_BUS}
        r["devices"].append(second)

    return changed(reading("node-idle.json"), add)


def xid_on(bus: str, number: int = 79):
    def edit(r):
        r["kernel_log"]["lines"].append(
            {"uptime_s": 100.0, "text": f"NVRM: Xid (PCI:{bus[4:]}): {number}, pid=1, GPU has fallen off the bus."}
        )

    return edit


def verdicts(findings) -> dict[str, Verdict]:
    return {f.name: f.verdict for f in findings}


def test_the_jobs_gpus_come_from_slurm_first_then_cuda_visible_devices():
    assert scope.job_gpus("prolog", {"SLURM_JOB_GPUS": "0,1", "CUDA_VISIBLE_DEVICES": "3"}).gpus == ("0", "1")
    taken = scope.job_gpus("epilog", {"CUDA_VISIBLE_DEVICES": SECOND_UUID})
    assert taken.gpus == (SECOND_UUID,) and taken.source == f"CUDA_VISIBLE_DEVICES={SECOND_UUID}"
    whole = scope.job_gpus("prolog", {})
    assert whole.gpus is None and "a job without GPUs" in whole.source
    mig = scope.job_gpus("prolog", {"CUDA_VISIBLE_DEVICES": "MIG-4f1e2b6a-aaaa-bbbb-cccc-0123456789ab"})
    assert mig.gpus is None and "MIG devices" in mig.source
    with pytest.raises(UsageError, match="not a list of GPU indices or UUIDs"):
        scope.job_gpus("prolog", {"SLURM_JOB_GPUS": "gpu0"})


def test_a_prolog_judges_the_jobs_gpu_only_its_xids_and_its_processes():
    node = changed(two_gpus(), xid_on(SECOND_BUS))
    node["devices"][0]["processes"] = [{"pid": 4242, "name": "someone-elses-job"}]  # GPU0 is busy
    # the job holds GPU0: the fatal XID logged for GPU1 is another job's problem
    r, expect, job = scope.narrowed(node, NODE, scope.job_gpus("prolog", {"SLURM_JOB_GPUS": "0"}))
    assert [d["nvml_index"] for d in r["devices"]] == [0] and expect.gpus == 1 and job.gpus == ("0",)
    found = verdicts(judge(r, expect))
    assert found["xid_events"] == Verdict.PASS and found["gpu_processes"] == Verdict.FAIL
    # the job holds GPU1: its XID fails it, GPU0's process does not
    r, expect, _ = scope.narrowed(node, NODE, scope.job_gpus("prolog", {"CUDA_VISIBLE_DEVICES": SECOND_UUID}))
    found = verdicts(judge(r, expect))
    assert found["xid_events"] == Verdict.FAIL and found["gpu_processes"] == Verdict.PASS
    assert found["gpu_count"] == Verdict.PASS


def test_a_gpu_the_job_was_given_that_nvml_does_not_list_fails_the_count():
    r, expect, _ = scope.narrowed(two_gpus(), NODE, scope.job_gpus("prolog", {"SLURM_JOB_GPUS": "1,2"}))
    count = next(f for f in judge(r, expect) if f.name == "gpu_count")
    assert count.verdict == Verdict.FAIL and "expected 2 GPU(s)" in count.message and "NVML lists 1" in count.message


def test_without_nvml_the_whole_node_is_judged_and_says_why():
    def no_nvml(r):
        r["devices"] = {"unavailable": "NVML library not found"}

    node = changed(two_gpus(), no_nvml)
    r, expect, job = scope.narrowed(node, NODE, scope.job_gpus("prolog", {"SLURM_JOB_GPUS": "0"}))
    assert r is node and expect is NODE and job.gpus is None and "NVML lists no GPU" in job.source


def test_the_recommended_action_falls_back_to_the_stated_mapping_and_prefers_the_judgements_own():
    node = changed(reading("node-idle.json"), xid_on("00000000:00:06.0"))
    findings = judge(node, Expectation(gpus=1, sku=H200, sku_from="--sku"))
    result = document("n1", findings, Expectation(gpus=1), node)
    assert result["verdict"] == "fail"
    # the judgement attaches its actions (harness/check/findings.py): the XID's, NVIDIA's RESTART_BM
    assert advice.recommended(result) == (
        Action.REBOOT_NODE,
        "the judgement's own action (the result's `recommendation`)",
    )
    healthy = document("n1", judge(reading("node-idle.json"), Expectation(gpus=1)), Expectation(gpus=1), node)
    assert advice.recommended(healthy)[0] == Action.NONE
    # a result made before the judgement attached actions falls back to the stated mapping
    del result["recommendation"]
    for check in result["checks"]:
        del check["action"]
    assert advice.recommended(result) == (Action.REBOOT_NODE, advice.FALLBACK_RULE)
    for check in result["checks"]:
        if check["verdict"] == "fail":
            check["action"] = "RESET_GPU"
    assert advice.recommended(result)[0] == Action.RESET_GPU
    result["action"] = {"action": "INSPECT_HARDWARE", "rule": "theirs"}
    assert advice.recommended(result)[0] == Action.INSPECT_HARDWARE
    assert set(advice.FALLBACK) == {f.name for f in findings}  # every check has its stated fallback


def test_the_drain_reason_leads_with_the_action_within_slurms_limit():
    sick = Finding("xid_events", Verdict.FAIL, "XID 79 (fallen off the bus) on 0000:00:06 x1 " + "and more " * 40)
    reason = drain.reason_for(sick, Action.REBOOT_NODE)
    assert reason.startswith("dossier check: REBOOT_NODE: xid_events: XID 79") and len(reason) == drain.MAX_REASON
    assert drain.reason_for(sick).startswith("dossier check: xid_events: XID 79")  # no action given, none of its own


def test_a_reader_past_the_time_limit_is_killed_and_nothing_is_passed(monkeypatch):
    monkeypatch.setattr(bounded, "READER", (sys.executable, "-c", "import time; time.sleep(120)"))
    r = bounded.read_within(0.5)
    assert "did not finish within 0.5 s" in r["devices"]["unavailable"]
    findings = judge(r, Expectation(gpus=0))
    assert {f.verdict for f in findings} <= {Verdict.INCOMPLETE, Verdict.SKIP}
    assert verdicts(findings)["gpu_count"] == Verdict.INCOMPLETE


def test_a_reader_that_fails_is_its_reason(monkeypatch):
    monkeypatch.setattr(bounded, "READER", (sys.executable, "-c", "import sys; sys.exit('NVML exploded')"))
    assert "the node reader exited 1: NVML exploded" in bounded.read_within(30)["nvml"]["unavailable"]


def test_the_real_reader_within_a_limit_gives_what_the_in_process_reader_gives():
    from harness.probes.check import read

    bounded_reading, here = bounded.read_within(120), read()
    assert set(bounded_reading) == set(here)
    for field in ("hostname", "kernel_module", "pci_gpus", "nvml", "devices"):
        assert bounded_reading[field] == here[field], field


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--mode", "prolog", "--reading", "x.json"], "--mode prolog judges this node's job now: not with --reading"),
        (["--npd", "--mode", "prolog"], "--npd answers node-problem-detector: not with --mode"),
        (["--timeout", "0"], "--timeout 0: must be above 0"),
        (["--npd", "--npd-max-output", "5000"], "--npd-max-output 5000: must be 1 to 4096 bytes"),
    ],
)
def test_scheduler_options_that_cannot_go_together_are_refused(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.json").write_text("{}")
    code = main(["check", "--expect-gpus", "0", *argv])
    printed = capsys.readouterr()
    assert code == 2 and message in printed.err + printed.out
