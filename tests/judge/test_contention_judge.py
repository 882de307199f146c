"""A busy host named, not blamed (issue 35), judged on the real recorded CPU sweep
(tests/fixtures/bandwidth-cpu-sweep.json, its middle repeat made 30% slower so that the repeats disagree)
beside host readings of a busy or an idle window (tests/contention_support.py): the lab's bandwidth
criterion tells a disturbed measurement from a varying rate, a bundle without readings is judged as
before, a failure elsewhere names the load first, and the comparison and the fleet say it in one value."""

import copy

from harness.analysis.verdict import Verdict
from harness.judge import contention, lab
from harness.judge.engine import Result
from harness.judge.facts import BundleFacts
from tests.bandwidth_fixtures import cpu_sweep
from tests.contention_support import bandwidth_view, disagreeing_sweep, window

SPINNERS = {(4242, "cotenant-spin"): 0.95, (4243, "cotenant-spin"): 0.9}


def _bandwidth(view):
    [result] = lab.judge_bandwidth(BundleFacts(view))
    return result


def test_disagreeing_repeats_on_a_busy_host_are_a_disturbed_measurement_not_a_hardware_fail():
    result = _bandwidth(bandwidth_view(disagreeing_sweep(), [window("bandwidth", 10.0, SPINNERS)]))
    assert result.status == Verdict.INCOMPLETE
    assert result.why.startswith("the measurement was disturbed, not the hardware judged: the three repeats vary by")
    assert "other processes used 1.85 of 2 CPUs (92%): cotenant-spin pid 4242 0.95, cotenant-spin pid 4243 0.90" in (
        result.why
    )
    assert result.why.endswith("RERUN_IDLE: run it again on an idle node before judging the hardware")
    assert any(line.startswith("host during the bandwidth step: other processes used") for line in result.findings)


def test_disagreeing_repeats_on_an_idle_host_are_the_hardwares_rate_varying():
    result = _bandwidth(bandwidth_view(disagreeing_sweep(), [window("bandwidth", 10.0, {(7, "sshd"): 0.02})]))
    assert result.status == Verdict.FAIL
    assert result.why.startswith("the hardware's rate varies: the three repeats vary by")
    assert "on an idle host (other processes used 0.02 of 2 CPUs (1%)" in result.why


def test_disagreeing_repeats_of_a_virtual_machines_idle_host_memory_are_not_the_hardwares():
    """This 2-core VM, idle (2026-12-02 06:30 UTC, `make dossier`): the 128 MiB copy's repeats 10.6% apart
    (first 24.7%) with other processes at 0.01 of 2 CPUs: its memory bus is shared with guests /proc cannot
    see, so the spread is not judged; a GPU's memory is not shared so, and stays a FAIL."""
    health = {"host": {"virtualization": {"hypervisor_cpu_flag": True}}}
    idle = [window("bandwidth", 10.0, {(7, "sshd"): 0.02})]
    result = _bandwidth(bandwidth_view(disagreeing_sweep(), idle, health))
    assert result.status == Verdict.INCOMPLETE and result.why.startswith("not judged: the three repeats vary by")
    assert "with this virtual machine idle (other processes used 0.02 of 2 CPUs (1%)" in result.why
    bare = {"host": {"virtualization": {"hypervisor_cpu_flag": False}}}
    assert _bandwidth(bandwidth_view(disagreeing_sweep(), idle, bare)).status == Verdict.FAIL
    on_gpu = {**disagreeing_sweep(), "device": "cuda:0"}
    assert _bandwidth(bandwidth_view(on_gpu, idle, health)).why.startswith("the hardware's rate varies")


def test_without_host_readings_the_verdict_is_what_it_was():
    result = _bandwidth(bandwidth_view(disagreeing_sweep()))
    spread = disagreeing_sweep()["repeats"]["spread"]
    assert result.status == Verdict.FAIL and result.why == f"the three repeats vary by {spread:.1%}, over 5%"


def test_on_an_idle_host_agreeing_repeats_judge_as_before_and_a_busy_one_changes_nothing_that_passed():
    before = _bandwidth(bandwidth_view(cpu_sweep()))
    idle = _bandwidth(bandwidth_view(cpu_sweep(), [window("bandwidth", 10.0)]))
    busy = _bandwidth(bandwidth_view(cpu_sweep(), [window("bandwidth", 10.0, SPINNERS)]))
    assert before.status == idle.status == busy.status == Verdict.SKIP  # a CPU: no known-good to compare
    assert before.why == idle.why == busy.why and before.findings == idle.findings


def test_a_failure_on_a_busy_step_says_the_load_first_and_one_on_an_idle_step_is_left_alone():
    failed = Result("x", "X", Verdict.FAIL, why="2 GEMMs below their roof", steps=("bandwidth",))
    passed = Result("y", "Y", Verdict.PASS, why="fine", steps=("bandwidth",))
    busy = BundleFacts(bandwidth_view(cpu_sweep(), [window("bandwidth", 10.0, SPINNERS)]))
    named, same = contention.beside([failed, passed], busy)
    assert named.why.startswith("measured while the host was busy (bandwidth: other processes used 1.85 of 2 CPUs")
    assert named.why.endswith(": 2 GEMMs below their roof") and "RERUN_IDLE" in named.why
    assert same == passed
    idle = BundleFacts(bandwidth_view(cpu_sweep(), [window("bandwidth", 10.0)]))
    assert contention.beside([failed], idle) == [failed]


def test_a_step_taken_during_another_has_that_steps_window():
    view = bandwidth_view(cpu_sweep(), [window("bandwidth", 10.0, SPINNERS)])
    view.commands["steps"].append(
        {"step": "health-load", "kind": "probe", "status": "completed", "started_at": "2026-12-02T01:00:04.000000Z"}
    )
    assert contention.window_of(BundleFacts(view), "health-load")["state"] == "busy"


def test_a_step_with_no_process_has_no_window_and_its_failure_is_judged():
    """The H200, 2026-12-02 13:55 UTC (bench/gpu_retest.sh, beside a heavy GPU co-tenant): the idle-load
    criterion failed, its host step health-diff (no process: started_at null) was looked up for a window,
    and `dossier run` ended in an internal error instead of writing its bundle."""
    view = bandwidth_view(cpu_sweep(), [window("bandwidth", 10.0, SPINNERS)])
    view.commands["steps"].append({"step": "health-diff", "kind": "host", "status": "completed", "started_at": None})
    assert contention.window_of(BundleFacts(view), "health-diff") is None
    failed = Result("idle-load", "t", Verdict.FAIL, why="an unexpected process", steps=("health-diff",))
    assert contention.beside([failed], BundleFacts(view)) == [failed]


def test_the_compared_value_is_the_same_for_every_idle_run_and_names_a_busy_one():
    quiet = [window("bandwidth", 10.0, {(7, "sshd"): 0.02})]
    quieter = [window("bandwidth", 12.0, {(9, "cron"): 0.01})]
    one, other = (contention.host_state(BundleFacts(bandwidth_view(cpu_sweep(), w))) for w in (quiet, quieter))
    assert one == other == contention.IDLE_TEXT
    busy = contention.host_state(BundleFacts(bandwidth_view(cpu_sweep(), [window("bandwidth", 10.0, SPINNERS)])))
    assert busy.startswith("busy during bandwidth (other processes used 1.85 of 2 CPUs")
    figures = contention.host_figures(BundleFacts(bandwidth_view(cpu_sweep(), quiet)))
    assert figures == {
        "bandwidth": "other processes used 0.02 of 2 CPUs (1%); steal 0.0%; load up to 0.50; CPU pressure 10%"
    }
    assert contention.host_state(BundleFacts(bandwidth_view(cpu_sweep()))) is None  # no readings: nothing to compare


def test_a_document_verify_would_fail_is_no_evidence():
    view = bandwidth_view(cpu_sweep(), [window("bandwidth", 10.0, SPINNERS)])
    broken = copy.deepcopy(view.contention)
    del broken["steps"][0]["samples"]
    view.__dict__["contention"] = broken
    assert contention.windows(BundleFacts(view)) is None
