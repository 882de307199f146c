"""`dossier check` end to end, in-process: the live reading on this CPU host (NVML absent: said, not a
crash), a real H200 reading judged again with --reading, the JSON and Prometheus outputs, and
refusals of bad input (exit 2, one line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.probes.check.kernel import pci_gpus
from harness.probes.nvml import NvmlSession
from harness.schemas import violations
from tests.check_support import reading
from tests.cli_support import dossier


@pytest.fixture(scope="module")
def gpu_free_host():
    with NvmlSession() as nvml:
        if nvml.ok or pci_gpus():
            pytest.skip("this host has an NVIDIA GPU or driver: the live tests here are for a host without one")
        return nvml.reason


@pytest.fixture
def h200_reading(tmp_path) -> Path:
    path = tmp_path / "h200.reading.json"
    path.write_text(json.dumps(reading("node-idle.json")))
    return path


def test_a_cpu_node_told_to_expect_no_gpu_is_healthy(gpu_free_host):
    code, out, _ = dossier("check", "--expect-gpus", "0", "--node", "cpu1")
    assert code == 0
    answer = "verdict: PASS: cpu1 healthy: 1 passed, 12 skipped (exit 0)"  # the answer, first and last
    assert out.splitlines() == [answer, "cpu1 | PASS: healthy [1 pass, 12 skip]", answer]


def test_a_cpu_node_expected_to_have_a_gpu_is_sick_and_says_nvml_is_absent(gpu_free_host):
    code, out, _ = dossier("check", "--expect-gpus", "1", "--node", "cpu1")
    assert code == 1
    answer, *lines, last = out.splitlines()
    assert (
        answer == last
        and answer.startswith("verdict: FAIL: cpu1 sick (gpu_count): 1 failed, ")
        and answer.endswith("(exit 1)")
    )
    assert lines[0].startswith("ERROR: dossier check: Health check failed: gpu_count: expected 1 GPU(s)")
    assert any(
        line.startswith("ERROR: dossier check: Cannot judge: driver: NVML: ") and gpu_free_host in line
        for line in lines
    )
    assert lines[-1].startswith("cpu1 | FAIL: sick (gpu_count)")


def test_json_follows_its_schema_and_a_saved_reading_is_judged_the_same(gpu_free_host, tmp_path):
    saved = tmp_path / "reading.json"
    code, out, _ = dossier("check", "--expect-gpus", "0", "--node", "cpu1", "--json", "--save-reading", str(saved))
    live = json.loads(out)
    assert code == 0 and violations("check", live) == [] and live["verdict"] == "pass"
    code, out, _ = dossier("check", "--expect-gpus", "0", "--node", "cpu1", "--json", "--reading", str(saved))
    assert json.loads(out) == live  # the replay judges the very document the live run judged


def test_a_real_h200_reading_replayed(h200_reading):
    code, out, _ = dossier("check", "--reading", str(h200_reading), "--expect-gpus", "1", "--sku", "h200-sxm-141gb")
    answer = "verdict: PASS: vm healthy: 10 passed, 3 skipped (exit 0)"
    assert code == 0 and out == f"{answer}\nvm | PASS: healthy [10 pass, 3 skip]\n{answer}\n"
    code, out, _ = dossier("check", "--reading", str(h200_reading), "--profile", "h100-sxm5-80gb")
    assert (
        code == 1
        and "gpu_sku: GPU0: is h200-sxm-141gb" in out
        and "expected h100-sxm5-80gb (--profile h100-sxm5-80gb)" in out
    )


def test_prometheus_textfile_parses_with_verdicts_as_0_1_gauges(h200_reading, tmp_path):
    prom = tmp_path / "node.prom"
    code, _, err = dossier("check", "--reading", str(h200_reading), "--expect-gpus", "1", "--prometheus", str(prom))
    assert code == 0 and f"wrote {prom}" in err
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(prom.read_text())
        for s in family.samples
    }
    verdict = {
        dict(labels)["verdict"]: v for (name, labels), v in samples.items() if name == "rig_dossier_check_verdict"
    }
    assert verdict == {"pass": 1.0, "warn": 0.0, "fail": 0.0, "incomplete": 0.0}
    gpu = (("gpu", "0"), ("node", "vm"), ("sku", "h200-sxm-141gb"))
    assert samples[("rig_dossier_gpu_pcie_link_width_lanes", gpu)] == 16.0
    assert samples[("rig_dossier_gpu_pcie_link_max_generation", gpu)] == 5.0
    assert (
        samples[("rig_dossier_check_result", (("check", "retired_pages"), ("node", "vm"), ("verdict", "skip")))] == 1.0
    )
    assert samples[("rig_dossier_check_gpus", (("node", "vm"),))] == 1.0
    assert not list(tmp_path.glob("node.prom.*"))  # written beside, then renamed: no temporary left


@pytest.mark.parametrize(
    "argv, words",
    [
        (["check"], "say what this node should have"),
        (["check", "--expect-gpus", "-1"], "argument --expect-gpus: -1 is not from 0 to 64"),
        (["check", "--expect-gpus", "1000000000"], "argument --expect-gpus: 1000000000 is not from 0 to 64"),
        (["check", "--expect-gpus", "abc"], "argument --expect-gpus: 'abc' is not a whole number"),
        (["check", "--expect-gpus", "1", "--since", "nan"], "argument --since: 'nan' is not a finite number"),
        (["check", "--sku", "h999"], "--sku 'h999' is not a catalogue SKU"),
        (["check", "--sku", "h200-sxm-141gb", "--profile", "h100-sxm5-80gb"], "disagree"),
        (["check", "--profile-file", "p.json", "--expect-gpus", "1"], "--profile-file needs --profile"),
        (["check", "--expect-gpus", "0", "--sku", "h200-sxm-141gb"], "a SKU is expected only where GPUs are"),
        (["check", "--expect-gpus", "1", "--min-driver", "new"], "is not a driver version"),
        (["check", "--expect-gpus", "1", "--since", "0"], "--since must be a positive number"),
        (["check", "--expect-gpus", "1", "--prometheus", "node.txt"], "must end in .prom"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(argv, words):
    code, out, err = dossier(*argv)
    assert code == 2 and words in err and "Traceback" not in err and out == ""
    assert len([line for line in err.splitlines() if not line.startswith("hint: ")]) == 1, err


def test_a_reading_that_is_not_one_is_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"kind": "rig-dossier node reading", "format_version": 1}))
    code, _, err = dossier("check", "--expect-gpus", "1", "--reading", str(bad))
    assert code == 2 and "not a node reading" in err
    bad.write_text("{not json")
    assert dossier("check", "--expect-gpus", "1", "--reading", str(bad))[0] == 2
    assert "no such file" in dossier("check", "--expect-gpus", "1", "--reading", str(tmp_path / "none.json"))[2]


def test_drain_needs_the_slurm_client_and_this_node(monkeypatch, h200_reading):
    code, _, err = dossier("check", "--expect-gpus", "1", "--reading", str(h200_reading), "--drain")
    assert code == 2 and "not with --reading" in err
    monkeypatch.setenv("PATH", "/nonexistent")
    code, _, err = dossier("check", "--expect-gpus", "1", "--drain")
    assert code == 4 and "scontrol is not on PATH" in err
