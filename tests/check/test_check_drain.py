"""--drain and --resume-own decide from the node's state as `scontrol show node` prints it (real output of
Slurm 22.05.8 on the project's 3-node test cluster, tests/fixtures/slurm/). The Slurm calls themselves
run for real in tests/check/test_check_slurm.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.analysis.verdict import Verdict
from harness.check import drain
from harness.check.judge import GPU_MISSING, Finding
from harness.fleet import slurm

SHOWN = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
SICK = Finding("gpu_count", Verdict.FAIL, "expected 1 GPU(s) (--expect-gpus), the PCI bus lists 0", GPU_MISSING)


def shown(name: str) -> tuple[str, str | None]:
    return slurm.parse_node((SHOWN / f"scontrol-show-node.{name}.txt").read_text())


@pytest.fixture
def cluster(monkeypatch):
    """The node's state from a real `scontrol show node` output; every update recorded, none sent."""
    calls: list[tuple] = []
    state = {"now": "idle"}
    monkeypatch.setattr(
        slurm, "node_state", lambda node: state["now"] if isinstance(state["now"], tuple) else shown(state["now"])
    )
    monkeypatch.setattr(slurm, "update_node", lambda node, what, reason=None: calls.append((node, what, reason)))
    return state, calls


def test_the_reason_slurm_shows_is_read_without_its_stamp():
    assert shown("drained") == (
        "IDLE+DRAIN",
        "dossier check: gpu_count: expected 1 GPU(s) (--expect-gpus), the PCI bus lists 0",
    )
    assert shown("idle") == ("IDLE", None)
    assert shown("admin-drained") == ("IDLE+DRAIN", "admin: replacing a fan")


def test_a_sick_node_in_service_is_drained_with_the_first_failure(cluster):
    state, calls = cluster
    action = drain.apply("n2", Verdict.FAIL, SICK, drain=True, resume_own=True)
    assert action.did == "drained" and calls == [("n2", "drain", drain.reason_for(SICK))]
    assert drain.reason_for(SICK).startswith("dossier check: INSPECT_HARDWARE: gpu_count: expected 1 GPU")


def test_an_admins_drain_is_never_replaced_nor_resumed(cluster):
    state, calls = cluster
    state["now"] = "admin-drained"
    assert drain.apply("n3", Verdict.FAIL, SICK, drain=True, resume_own=True).did == "left drained"
    assert drain.apply("n3", Verdict.PASS, None, drain=True, resume_own=True).did == "left drained"
    assert calls == []


def test_our_own_drain_is_resumed_when_healthy_and_kept_when_still_sick(cluster):
    state, calls = cluster
    state["now"] = "drained"  # drained by a build before actions: our prefix, no action in the reason
    assert drain.apply("n2", Verdict.FAIL, SICK, drain=True, resume_own=True).did == "reason updated"
    assert calls == [("n2", "drain", drain.reason_for(SICK))]
    calls.clear()
    state["now"] = ("IDLE+DRAIN", drain.reason_for(SICK))
    assert drain.apply("n2", Verdict.FAIL, SICK, drain=True, resume_own=True).did == "left drained"
    assert calls == []  # the same reason: nothing to update
    state["now"] = "drained"
    assert drain.apply("n2", Verdict.PASS, None, drain=True, resume_own=False).did == "nothing"
    assert drain.apply("n2", Verdict.PASS, None, drain=True, resume_own=True).did == "resumed"
    assert calls == [("n2", "resume", None)]


def test_a_long_reason_is_cut_for_slurm():
    long = Finding("xid_events", Verdict.FAIL, "XID 79 " * 100, GPU_MISSING)
    assert len(drain.reason_for(long)) == drain.MAX_REASON and drain.reason_for(long).endswith("...")


def test_a_node_slurm_does_not_know_still_gets_its_findings_printed(monkeypatch, capsys, tmp_path):
    """The findings first, then the error: a HealthCheckProgram's log must keep what was judged."""
    from harness.cli import main
    from harness.errors import UsageError

    def unknown(node):
        raise UsageError(f"Slurm knows no node {node!r}: Node {node} not found")

    monkeypatch.setattr(slurm, "node_state", unknown)
    monkeypatch.setattr(slurm, "available", lambda: True)
    code = main(["check", "--expect-gpus", "1", "--node", "n9", "--drain"])
    printed = capsys.readouterr()
    assert code == 2 and "Slurm knows no node 'n9'" in printed.err
    assert printed.out.splitlines()[-1].startswith("n9 | ") and "slurm: n9" not in printed.out


def test_a_scheduler_check_drains_with_the_reason_it_was_given(cluster):
    state, calls = cluster
    led = drain.reason_for(SICK, "DRAIN")
    assert drain.apply("n2", Verdict.FAIL, SICK, drain=True, resume_own=False, drain_reason=led).did == "drained"
    assert calls == [
        ("n2", "drain", "dossier check: DRAIN: gpu_count: expected 1 GPU(s) (--expect-gpus), the PCI bus lists 0")
    ]
