"""Host readings for the contention tests: a window's two readings, made with the numbers the test
states (what /proc would show over SECONDS on CPUS CPUs with these other processes busy), and the view of
a bundle holding the real recorded CPU bandwidth sweep (tests/fixtures/bandwidth-cpu-sweep.json) with
such a window beside it."""

from __future__ import annotations

import copy
import json

from harness.analysis import contention as rules
from harness.analysis.bandwidth import figures as bw
from harness.bundle import layout
from harness.bundle.view import BundleView
from harness.probes.bandwidth.points import point_record
from harness.registry import analysis_module
from harness.run import host_load
from tests.bandwidth_fixtures import cpu_sweep

TICK, CPUS = 100, 2
FACTS = {
    "clock_ticks_per_s": TICK,
    "cpu_count": CPUS,
    "interval_s": host_load.INTERVAL_S,
    "max_cost_share": host_load.MAX_COST_SHARE,
    "own": rules.OWN_RULE,
    "busy_rule": rules.BUSY_RULE,
}
STARTED = "2026-12-02T01:00:00.000000Z"


def reading(t_s, jiffies, others, own=0, load=0.5):
    return {
        "t_s": t_s,
        "loadavg": [load, load, load],
        "cpu_jiffies": jiffies,
        "pressure": {r: {"some_us": int(t_s * 1e5), "full_us": 0} for r in ("cpu", "memory", "io")},
        "memory": {"available_kib": 20 * 2**20, "free_kib": 16 * 2**20},
        "own_ticks": own,
        "others": others,
    }


def window(step, seconds=10.0, others=None, own_cores=1.0, steal=0.0, started_at=STARTED):
    """STEP's window: OTHERS {(pid, comm): CPUs} busy over SECONDS, the harness using OWN_CORES, STEAL
    of the CPU time stolen; the readings /proc would give at its two ends."""
    others = others or {}
    total = int(seconds * TICK * CPUS)
    busy = int((sum(others.values()) + own_cores) * seconds * TICK)
    stolen = int(steal * total)
    start = dict.fromkeys(host_load.CPU_FIELDS, 1000)
    end = {**start, "user": 1000 + busy, "steal": 1000 + stolen, "idle": 1000 + total - busy - stolen}
    procs = [{"pid": pid, "comm": comm, "ticks": int(c * seconds * TICK)} for (pid, comm), c in others.items()]
    samples = [reading(0.0, start, []), reading(seconds, end, procs, own=int(own_cores * seconds * TICK))]
    return {"step": step, "started_at": started_at, "sampler_cpu_s": 0.01, "samples": samples}


def contention_document(windows):
    return host_load.document(windows, FACTS)


def disagreeing_sweep():
    """The real CPU sweep with its middle repeat 30% slower: its repeats vary by over 5%."""
    document = copy.deepcopy(cpu_sweep())
    repeats = document["repeats"]
    run = repeats["runs"][1]
    times = [t * 1.3 for t in run["iteration_times_s"]]
    cache = document["cache"]["size_bytes"] if isinstance(document["cache"]["size_bytes"], int) else None
    repeats["runs"][1] = point_record(
        run["size_mib"], run["elements"], document["kernel"], times, cache, document["launch"]["empty_launch_s"]
    )
    repeats["medians_gbps"] = [r["median_gbps"] for r in repeats["runs"]]
    repeats["spread"] = bw.spread(repeats["medians_gbps"])
    repeats["verdict"], repeats["trusted"] = "fail", False
    return document


def bandwidth_view(document, windows=None, health=None):
    """A bundle's view: the bandwidth step with DOCUMENT, and WINDOWS as its host readings (None: none);
    HEALTH, a health document, as the health step's before it (None: no health step)."""
    step = {
        "step": "bandwidth",
        "kind": "probe",
        "status": "completed",
        "output": layout.raw_name("bandwidth"),
        "analysis": "bandwidth",
        "argv": ["python", "-m", "harness.probes.bandwidth"],
        "started_at": STARTED,
    }
    steps, files = [step], {layout.raw_name("bandwidth"): json.dumps(document).encode()}
    if health is not None:
        steps.insert(0, {**step, "step": "health", "output": layout.raw_name("health"), "analysis": "health"})
        files[layout.raw_name("health")] = json.dumps(health).encode()
    files[layout.COMMANDS] = json.dumps({"format_version": layout.FORMAT_VERSION, "steps": steps}).encode()
    files[layout.ENVIRONMENT] = b"{}"
    if windows is not None:
        files[layout.CONTENTION] = json.dumps(contention_document(windows)).encode()
    return BundleView.from_files(files, analysis_module)
