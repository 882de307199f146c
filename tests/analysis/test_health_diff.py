"""health-diff on the real recorded idle/load pairs: pass paths as recorded, fail paths named."""

import copy
import json

import pytest

from harness.analysis.health.diff import diff
from harness.cli import main
from harness.schemas import violations
from tests.h200_capture import real_health_fixtures, recorded_pair

PAIRS = ["nvml-fields", "nvidia-smi-q"]


def statuses(result):
    return {c["name"]: c["status"] for c in result["checks"]}


@pytest.mark.parametrize("kind", PAIRS)
def test_recorded_pair_passes_every_check(kind):
    idle, load = recorded_pair(kind)
    result = diff(idle, load)
    assert violations("health-diff", result) == []
    assert result["verdict"] == "pass", result["checks"]
    assert set(statuses(result)) == {
        "load_ran",
        "same_devices",
        "clocks_rose",
        "power_rose",
        "clock_event_reasons_named",
        "no_unexpected_process",
    }


def test_gemm_capture_names_the_power_cap():
    result = diff(*recorded_pair("nvidia-smi-q"))
    reasons = next(c for c in result["checks"] if c["name"] == "clock_event_reasons_named")
    assert "sw_power_cap" in reasons["evidence"] and "(power)" in reasons["evidence"]
    clocks = next(c for c in result["checks"] if c["name"] == "clocks_rose")
    assert "idle 405 MHz -> under load 1365 MHz" in clocks["evidence"]
    fields = {c["field"] for c in result["changes"]}
    assert any(f.endswith(".clocks.sm_current_mhz") for f in fields)
    assert any(f.endswith(".power.draw_w") for f in fields)


def test_process_the_harness_did_not_start_is_named():
    idle, load = recorded_pair("nvidia-smi-q")
    load["load"]["pids"] = [999999]  # the recorded pid 417 is then not the harness's
    load["harness_pids"] = [999999]
    result = diff(idle, load)
    check = next(c for c in result["checks"] if c["name"] == "no_unexpected_process")
    assert check["status"] == "fail" and "pid 417 (name not visible)" in check["evidence"]
    assert "no_unexpected_process" in result["failed"]


def test_idle_reading_used_as_active_fails_clocks_and_power():
    idle, load = recorded_pair("nvml-fields")
    fake_active = copy.deepcopy(idle)  # the idle card, presented as if it were under load
    fake_active["mode"] = "under_load"
    fake_active["load"] = copy.deepcopy(load["load"])
    for record in fake_active["load"]["devices"]:
        for s in record["samples"]:
            s.update(sm_clock_mhz=345, power_w=78.479)
    result = diff(idle, fake_active)
    assert statuses(result)["clocks_rose"] == "fail"
    assert statuses(result)["power_rose"] == "fail"


def test_thermal_slowdown_under_load_fails():
    idle, load = recorded_pair("nvidia-smi-q")
    load["load"]["devices"][0]["samples"][1]["clock_event_reasons"] = ["sw_power_cap", "hw_thermal_slowdown"]
    result = diff(idle, load)
    assert statuses(result)["clock_event_reasons_named"] == "fail"


def test_missing_load_fails_and_other_devices_are_caught():
    idle, load = recorded_pair("nvidia-smi-q")
    load["load"] = {"unavailable": "torch cannot use CUDA here"}
    assert statuses(diff(idle, load))["load_ran"] == "fail"
    idle2, load2 = recorded_pair("nvml-fields")  # a different card (other UUID)
    assert statuses(diff(idle2, recorded_pair("nvidia-smi-q")[1]))["same_devices"] == "fail"


def test_diff_is_deterministic():
    idle, load = recorded_pair("nvidia-smi-q")
    assert json.dumps(diff(idle, load), sort_keys=True) == json.dumps(diff(idle, load), sort_keys=True)


def write(tmp_path, name, document):
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def test_cli_writes_the_diff_and_exits_0(tmp_path, capsys):
    idle, load = recorded_pair("nvidia-smi-q")
    out = tmp_path / "diff.json"
    code = main(
        [
            "health-diff",
            str(write(tmp_path, "i.json", idle)),
            str(write(tmp_path, "l.json", load)),
            "--output",
            str(out),
        ]
    )
    assert code == 0
    assert violations("health-diff", json.loads(out.read_text())) == []
    assert "clocks_rose" in capsys.readouterr().err


def test_cli_exits_1_naming_the_failed_check(tmp_path, capsys):
    idle, load = recorded_pair("nvidia-smi-q")
    load["harness_pids"] = load["load"]["pids"] = [999999]
    code = main(["health-diff", str(write(tmp_path, "i.json", idle)), str(write(tmp_path, "l.json", load))])
    captured = capsys.readouterr()
    assert code == 1
    assert "no_unexpected_process" in captured.err
    assert json.loads(captured.out)["verdict"] == "fail"


def test_cli_refuses_swapped_or_invalid_documents(tmp_path, capsys):
    idle, load = recorded_pair("nvidia-smi-q")
    idle_path, load_path = write(tmp_path, "i.json", idle), write(tmp_path, "l.json", load)
    assert main(["health-diff", str(load_path), str(idle_path)]) == 2
    bad = write(tmp_path, "bad.json", {"probe": "health"})
    assert main(["health-diff", str(idle_path), str(bad)]) == 2
    assert main(["health-diff", str(idle_path), str(tmp_path / "missing.json")]) == 2  # unreadable input: usage
    assert "not a valid health.json" in capsys.readouterr().err


def test_real_health_pair_from_the_gpu_machine():
    found = dict(real_health_fixtures())
    assert set(found) == {"health.idle.json", "health.load.json"}, "tests/fixtures/h200/ holds both captures"
    for document in found.values():
        assert violations("health", document) == []
    result = diff(found["health.idle.json"], found["health.load.json"])
    assert statuses(result)["clocks_rose"] == "pass" and statuses(result)["power_rose"] == "pass"
