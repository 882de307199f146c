"""Host contention recomputed from raw /proc readings (harness.analysis.contention), and the readings
themselves taken from this machine's /proc (harness.run.host_load) beside a busy process this test
starts, detached, so that it is not the harness's descendant."""

import copy
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.analysis import contention as rules
from harness.run import host_load
from tests import cotenant
from tests.contention_support import CPUS, FACTS, window

ROOT = Path(__file__).resolve().parents[2]


def test_figures_come_from_the_readings():
    entry = window("bandwidth", 10.0, {(41, "spin"): 0.9, (42, "spin"): 0.8, (7, "kworker/0:1"): 0.001}, steal=0.02)
    figures = rules.summary(entry, FACTS)
    assert figures["window_s"] == 10.0 and figures["cpu_count"] == CPUS
    assert figures["others_cores"] == pytest.approx(1.701) and figures["others_share"] == pytest.approx(0.8505)
    assert [p["pid"] for p in figures["top"]] == [41, 42, 7] and figures["top"][0]["cpu_s"] == 9.0
    assert figures["own_cores"] == pytest.approx(1.0) and figures["steal_share"] == pytest.approx(0.02)
    assert figures["pressure"]["cpu"] == {"some_share": 0.1, "full_share": 0.0}
    assert figures["state"] == rules.BUSY and "other processes used 85% of the CPUs" in figures["why"]
    text = rules.describe(figures)
    assert text.startswith("other processes used 1.70 of 2 CPUs (85%): spin pid 41 0.90, spin pid 42 0.80;")
    assert "kworker" not in text  # 0.001 CPUs: not worth a name in a line (the bundle keeps it)


def test_the_busy_rule_and_its_edges():
    assert rules.summary(window("s", 10.0, {(1, "a"): 0.19}), FACTS)["state"] == rules.IDLE  # 9.5% of 2
    assert rules.summary(window("s", 10.0, {(1, "a"): 0.2}), FACTS)["state"] == rules.BUSY  # 10%
    stolen = rules.summary(window("s", 10.0, steal=0.05), FACTS)
    assert stolen["state"] == rules.BUSY and "stole 5.0%" in stolen["why"]


def test_unreadable_fields_say_why_and_the_state_is_unknown():
    entry = window("s", 10.0)
    for sample in entry["samples"]:
        sample["others"] = sample["own_ticks"] = {"unavailable": "/proc: Permission denied"}
        sample["pressure"]["cpu"] = {"unavailable": "/proc/pressure/cpu: No such file or directory"}
    figures = rules.summary(entry, FACTS)
    assert figures["others_share"] == {"unavailable": "/proc: Permission denied"}
    assert figures["pressure"]["cpu"] == {"unavailable": "/proc/pressure/cpu: No such file or directory"}
    assert figures["state"] == rules.UNKNOWN and "Permission denied" in figures["why"]


def test_a_window_of_one_reading_has_no_rates_and_says_why():
    entry = window("s", 10.0)
    entry["samples"] = entry["samples"][:1]
    figures = rules.summary(entry, FACTS)
    assert figures["others_cores"] == {"unavailable": "a window of 0 s: the step ended as it began"}
    assert figures["steal_share"] == {"unavailable": "one reading: no window"}


def test_an_edited_summary_or_rule_is_named():
    document = host_load.document([window("bandwidth", 10.0, {(41, "spin"): 0.9})], FACTS)
    assert rules.discrepancies(document) == []
    edited = copy.deepcopy(document)
    edited["steps"][0]["summary"]["state"] = rules.IDLE
    assert rules.discrepancies(edited) == ["step bandwidth: summary state not what its samples give"]
    edited = copy.deepcopy(document)
    edited["steps"][0]["samples"][1]["others"][0]["ticks"] = 1  # the raw reading changed, the summary not
    assert "others_cores" in rules.discrepancies(edited)[0]
    edited = copy.deepcopy(document)
    edited["sampler"]["busy_rule"] = "never busy"
    assert rules.discrepancies(edited) == ["sampler.busy_rule: not this build's rule"]


def _detached_spinner(seconds: float) -> int:
    """A cotenant-spin process whose parent is not this one (its shell exits at once): its pid."""
    shell = subprocess.run(
        ["sh", "-c", f"{sys.executable} -m tests.cotenant {seconds} >/dev/null 2>&1 & echo $!"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(shell.stdout.strip())


def test_a_real_window_names_a_busy_process_that_is_not_the_harnesss_and_excludes_its_own():
    other = _detached_spinner(30)
    own = subprocess.Popen([sys.executable, "-m", "tests.cotenant", "30"], cwd=ROOT)  # a child: the harness's
    try:
        time.sleep(0.3)  # both have named themselves
        sampler = host_load.Sampler("probe").start()
        time.sleep(2.5)
        entry = sampler.stop()
    finally:
        own.kill()
        own.wait()
        subprocess.run(["kill", str(other)], check=False)
    pids = {p["pid"]: p["comm"] for s in entry["samples"] for p in s["others"]}
    assert pids.get(other) == cotenant.NAME and own.pid not in pids
    assert sum(s["own_ticks"] for s in entry["samples"]) > 0  # the child's ticks are the harness's own
    figures = rules.summary(entry, host_load.sampler_facts())
    assert rules.discrepancies(host_load.document([entry], host_load.sampler_facts())) == []
    assert figures["samples"] >= 2 and entry["samples"][0]["t_s"] == 0.0
    assert entry["sampler_cpu_s"] < 0.01 * figures["window_s"]  # well under 1% of a core
