"""`dossier check --mode prolog|epilog` as Slurm's Prolog and Epilog on the real 3-node cluster
(tests/services/slurm.sh, each node with two gres GPUs backed by character devices, not real GPUs).

What each node should have comes from a real configuration file per node and mode, never a faked
reading: n1's prolog expects a GPU these CPU nodes lack, n3's epilog likewise; every other expects
none, which a CPU node meets. Slurm's prolog time limit is set (PrologEpilogTimeout) and the check
must answer within it: a prolog Slurm kills is drained as "Prolog error", never with our reason.

Facts measured with Slurm 22.05.8 here (2026-12-02) that the test relies on: slurmd gives the
Prolog and Epilog SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES of the job, SLURMD_NODENAME, no PATH;
a Prolog exiting non-zero drains the node ("Prolog error" unless it was drained already: then the
reason it was drained with stays) and requeues a batch job held (launch_failed_requeued_held); a
prolog past PrologEpilogTimeout is killed (SIGTERM) and handled the same; an Epilog exiting
non-zero drains the node and the job stays completed.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.fleet import slurm
from tests.fleet.test_fleet_slurm import slurm_cluster  # noqa: F401 - the session's cluster

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[2]
PROLOG_LIMIT_S = 40  # PrologEpilogTimeout: the check answers well inside it even on this busy 2-core host
WAIT_S = 90
WRAPPER = """#!/bin/bash
# Slurm's {mode}: slurmd runs it as root with the job's variables, SLURMD_NODENAME and no PATH or SLURM_CONF.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin SLURM_CONF={conf} PYTHONPATH={root}
echo "start $(date +%s.%N) SLURM_JOB_GPUS=$SLURM_JOB_GPUS" >> {dir}/{mode}-$SLURMD_NODENAME.log
{python} -m harness check --mode {mode} --timeout 10 --expect-gpus "$(cat {dir}/expect-{mode}-$SLURMD_NODENAME)" \\
  >> {dir}/{mode}-$SLURMD_NODENAME.log 2>&1
code=$?
echo "end $(date +%s.%N) exit $code" >> {dir}/{mode}-$SLURMD_NODENAME.log
exit $code
"""
SICK = {("prolog", "n1"), ("epilog", "n3")}


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=60).stdout


def job(job_id: str) -> dict[str, str]:
    shown = sh("scontrol", "show", "job", job_id)
    return dict(re.findall(r"(\w+)=(\S*)", shown))


def wait_for(condition, what: str) -> None:
    started = time.monotonic()
    while time.monotonic() - started < WAIT_S:
        if condition():
            return
        time.sleep(0.5)
    pytest.fail(f"{what}: not within {WAIT_S} s ({[slurm.node_state(n) for n in ('n1', 'n2', 'n3')]})")


def submit(node: str, gpus: int, folder: Path) -> str:
    argv = ["sbatch", "--parsable", "-w", node, f"--gpus={gpus}", "-o", f"{folder}/job-%j.out", "--wrap", "true"]
    return sh(*argv).strip()


@pytest.fixture
def scheduled(slurm_cluster, tmp_path):  # noqa: F811 - the imported fixture
    """The cluster with our Prolog and Epilog; the configuration, jobs and nodes restored after."""
    conf = Path(slurm_cluster)
    original = conf.read_text()
    if "Gres=gpu:" not in original:
        pytest.fail("the test cluster declares no GPUs (tests/services/slurm.sh: SLURM_GPUS_PER_NODE)")
    tmp_path.chmod(0o755)
    lines = []
    for mode in ("prolog", "epilog"):
        for node in ("n1", "n2", "n3"):
            (tmp_path / f"expect-{mode}-{node}").write_text("1\n" if (mode, node) in SICK else "0\n")
        program = tmp_path / f"dossier-{mode}.sh"
        program.write_text(WRAPPER.format(mode=mode, conf=conf, root=ROOT, python=sys.executable, dir=tmp_path))
        program.chmod(0o755)
        lines.append(f"{mode.capitalize()}={program}")
    conf.write_text(original + "\n".join(lines) + f"\nPrologEpilogTimeout={PROLOG_LIMIT_S}\n")
    submitted: list[str] = []
    try:
        subprocess.run(["scontrol", "reconfigure"], check=True, timeout=60)
        yield tmp_path, submitted
    finally:
        for job_id in submitted:
            subprocess.run(["scancel", job_id], timeout=60)
        conf.write_text(original)
        subprocess.run(["scontrol", "reconfigure"], timeout=60)
        for node in ("n1", "n2", "n3"):
            if "DRAIN" in slurm.node_state(node)[0]:
                subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], timeout=60)


def took_s(log: str) -> float:
    start = float(re.search(r"^start (\S+)", log, re.M).group(1))
    end = float(re.search(r"^end (\S+)", log, re.M).group(1))
    return end - start


def test_a_failing_prolog_drains_with_the_action_and_requeues_while_a_healthy_one_runs_the_job(scheduled):
    folder, submitted = scheduled
    healthy = submit("n2", 2, folder)
    sick = submit("n1", 1, folder)
    submitted += [healthy, sick]
    wait_for(lambda: job(healthy)["JobState"] == "COMPLETED", "the job on n2 completed")
    n2 = (folder / "prolog-n2.log").read_text()
    assert "start" in n2 and "SLURM_JOB_GPUS=0,1" in n2 and "exit 0" in n2
    assert "scope: prolog: GPUs None (SLURM_JOB_GPUS=0,1: NVML lists no GPU" in n2  # read, and said why unused
    assert "n2 | PASS: healthy" in n2

    wait_for(lambda: job(sick)["Reason"] == "launch_failed_requeued_held", "the job on n1 requeued")
    assert job(sick)["JobState"] == "PENDING" and job(sick)["Restarts"] == "1"
    state, reason = slurm.node_state("n1")
    assert "DRAIN" in state
    # no GPU on the bus at all: INSPECT_HARDWARE (harness/check/judge.py GPU_MISSING)
    assert reason.startswith(
        "dossier check: INSPECT_HARDWARE: gpu_count: expected 1 GPU(s) (--expect-gpus), the PCI bus lists 0"
    )
    n1 = (folder / "prolog-n1.log").read_text()
    assert (
        "n1 | FAIL: sick (gpu_count)" in n1 and "slurm: n1: drained: dossier check: INSPECT_HARDWARE: gpu_count" in n1
    )
    assert "exit 1" in n1 and took_s(n1) < PROLOG_LIMIT_S
    assert "DRAIN" not in slurm.node_state("n3")[0]
    print(f"prolog on n1: {took_s(n1):.1f} s (PrologEpilogTimeout={PROLOG_LIMIT_S}), on n2: {took_s(n2):.1f} s")


def test_a_failing_epilog_drains_the_node_and_the_job_stays_completed(scheduled):
    folder, submitted = scheduled
    ran = submit("n3", 1, folder)
    submitted.append(ran)
    wait_for(lambda: "DRAIN" in slurm.node_state("n3")[0], "n3 drained by its epilog")
    assert slurm.node_state("n3")[1].startswith("dossier check: INSPECT_HARDWARE: gpu_count: expected 1 GPU(s)")
    wait_for(lambda: job(ran)["JobState"] != "COMPLETING", "the job on n3 done with its epilog")
    assert job(ran)["JobState"] == "COMPLETED" and job(ran)["Restarts"] == "0"  # ran, and was not requeued
    n3 = (folder / "epilog-n3.log").read_text()
    assert "SLURM_JOB_GPUS=" in n3 and "n3 | FAIL: sick (gpu_count)" in n3 and took_s(n3) < PROLOG_LIMIT_S
    assert "n3 | PASS: healthy" in (folder / "prolog-n3.log").read_text()  # its prolog passed: the job ran
