"""`dossier check --drain --resume-own` as Slurm's HealthCheckProgram on the real 3-node cluster
(tests/services/slurm.sh): slurmd runs it on every node every HealthCheckInterval.

What each node should have comes from a real configuration, never a faked reading: a file per node
holds its `--expect-gpus` (n1: 1, a GPU these CPU nodes lack; n2, n3: 0, which a CPU node meets).
n1 must be drained with our reason within one interval while n2 and n3 stay in service; an admin
drains n3 by hand; once n1's configuration says 0 GPUs it passes and `--resume-own` puts it back,
while n3, drained by someone else, stays drained although its check passes.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.fleet import slurm
from tests.fleet.test_fleet_slurm import slurm_cluster  # noqa: F401 - the session's cluster

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[2]
INTERVAL_S = 10
RUN_ALLOWANCE_S = 5  # the check itself: Python start and the reading, on this shared 2-core host
WRAPPER = """#!/bin/bash
# Slurm's HealthCheckProgram: slurmd runs it as root with SLURMD_NODENAME set and no PATH or SLURM_CONF.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin SLURM_CONF={conf} PYTHONPATH={root}
exec {python} -m harness check --expect-gpus "$(cat {dir}/expect-$SLURMD_NODENAME)" --drain --resume-own \\
  >> {dir}/check-$SLURMD_NODENAME.log 2>&1
"""


def state(node: str) -> tuple[str, str | None]:
    return slurm.node_state(node)


def wait_for(condition, timeout_s: float, what: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if condition():
            return time.monotonic() - started
        time.sleep(0.5)
    pytest.fail(f"{what}: not within {timeout_s:g} s (n1 {state('n1')}, n2 {state('n2')}, n3 {state('n3')})")


@pytest.fixture
def health_checked(slurm_cluster, tmp_path):  # noqa: F811 - the imported fixture
    """The cluster with our HealthCheckProgram configured; the configuration and nodes restored after."""
    conf = Path(slurm_cluster)
    original = conf.read_text()
    tmp_path.chmod(0o755)
    for node, expect in (("n1", 1), ("n2", 0), ("n3", 0)):
        (tmp_path / f"expect-{node}").write_text(f"{expect}\n")
    program = tmp_path / "dossier-check.sh"
    program.write_text(WRAPPER.format(conf=conf, root=ROOT, python=sys.executable, dir=tmp_path))
    program.chmod(0o755)
    conf.write_text(
        original + f"HealthCheckProgram={program}\nHealthCheckInterval={INTERVAL_S}\nHealthCheckNodeState=ANY\n"
    )
    try:
        subprocess.run(["scontrol", "reconfigure"], check=True, timeout=60)
        yield tmp_path
    finally:
        conf.write_text(original)
        subprocess.run(["scontrol", "reconfigure"], timeout=60)
        for node in ("n1", "n2", "n3"):
            if "DRAIN" in state(node)[0]:
                subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], timeout=60)


def test_a_sick_node_is_drained_within_one_interval_and_only_our_own_drain_is_resumed(health_checked):
    folder = health_checked
    took = wait_for(lambda: "DRAIN" in state("n1")[0], INTERVAL_S + RUN_ALLOWANCE_S, "n1 drained")
    reason = state("n1")[1]
    assert reason.startswith(
        "dossier check: INSPECT_HARDWARE: gpu_count: expected 1 GPU(s) (--expect-gpus), the PCI bus lists 0"
    ), reason  # the recommended action first: no GPU on the bus at all
    log = (folder / "check-n1.log").read_text()
    assert "ERROR: dossier check: Health check failed: gpu_count: expected 1 GPU(s)" in log
    assert (
        "slurm: n1: drained: dossier check: INSPECT_HARDWARE: gpu_count" in log and "n1 | FAIL: sick (gpu_count)" in log
    )
    # the healthy nodes ran the same program and stayed in service
    wait_for(
        lambda: (folder / "check-n2.log").exists() and (folder / "check-n3.log").exists(),
        INTERVAL_S + RUN_ALLOWANCE_S,
        "n2 and n3 checked",
    )
    assert "n2 | PASS: healthy" in (folder / "check-n2.log").read_text()
    assert "DRAIN" not in state("n2")[0] and "DRAIN" not in state("n3")[0]
    print(f"n1 drained {took:.1f} s after the reconfigure (HealthCheckInterval={INTERVAL_S})")

    subprocess.run(["scontrol", "update", "nodename=n3", "state=drain", "reason=admin: replacing a fan"], check=True)
    (folder / "expect-n1").write_text("0\n")  # n1's configuration fixed: its check now passes
    wait_for(lambda: "DRAIN" not in state("n1")[0], INTERVAL_S + RUN_ALLOWANCE_S, "n1 resumed")
    assert "slurm: n1: resumed: healthy again" in (folder / "check-n1.log").read_text()
    n3_runs = (folder / "check-n3.log").read_text().count("n3 | PASS")
    wait_for(
        lambda: (folder / "check-n3.log").read_text().count("n3 | PASS") > n3_runs,
        INTERVAL_S + RUN_ALLOWANCE_S,
        "n3 checked again while drained by the admin",
    )
    assert state("n3") == ("IDLE+DRAIN", "admin: replacing a fan")
    assert (
        "slurm: n3: left drained: drained by someone else (admin: replacing a fan)"
        in (folder / "check-n3.log").read_text()
    )
