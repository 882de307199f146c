"""`dossier health` in-process: writes valid health.json; exits 1 naming failed contracts."""

import json

import pytest

from harness.analysis.health import discrepancies, headlines
from harness.cli import main
from harness.commands import probe as probe_command
from harness.run.outcome import Completed
from harness.schemas import violations
from tests.h200_capture import real_health_fixtures, recorded_pair


def test_dossier_health_writes_valid_json(tmp_path):
    out = tmp_path / "health.json"
    assert main(["health", "-o", str(out)]) == 0
    document = json.loads(out.read_text())
    assert violations("health", document) == []
    assert discrepancies(document) == []
    assert document["torch_imported"] is False and "CUDA driver API" in document["device_view_source"]


def test_failed_contract_exits_1_and_is_named(tmp_path, monkeypatch, capsys):
    idle, _ = recorded_pair("nvidia-smi-q")
    idle["devices"][0]["modes"]["persistence"] = "disabled"
    idle["contracts"] = [
        c if c["name"] != "persistence_mode_on" else {**c, "status": "fail"} for c in idle["contracts"]
    ]
    monkeypatch.setattr(probe_command, "run_probe", lambda probe, argv, args, **options: Completed(None, idle))
    assert main(["health", "-o", str(tmp_path / "h.json")]) == 1
    err = capsys.readouterr().err
    assert "contract failed: persistence_mode_on" in err and "nvidia-smi -pm 1" in err


def test_under_load_option_reaches_the_probe_and_stretches_the_timeout(monkeypatch, tmp_path):
    seen = {}

    def fake_run_probe(probe, argv, args, **options):
        seen.update(argv=argv, timeout=args.timeout)
        return Completed(None, recorded_pair("nvidia-smi-q")[1])

    monkeypatch.setattr(probe_command, "run_probe", fake_run_probe)
    assert main(["health", "--under-load", "300", "-o", str(tmp_path / "h.json")]) == 0
    assert seen["argv"] == ["--under-load", "300", "--sample-interval", "0.1"]
    assert seen["timeout"] >= 300 + 120


def test_torch_option_reaches_the_probe(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr(
        probe_command,
        "run_probe",
        lambda probe, argv, args, **options: (
            seen.update(argv=argv),
            Completed(None, recorded_pair("nvidia-smi-q")[0]),
        )[1],
    )
    assert main(["health", "--torch", "-o", str(tmp_path / "h.json")]) == 0
    assert seen["argv"] == ["--torch"]
    assert main(["health", "--torch", "--under-load", "2", "-o", str(tmp_path / "h.json")]) == 0
    assert seen["argv"] == ["--torch", "--under-load", "2", "--sample-interval", "0.1"]


def test_dossier_health_under_load_runs_here(tmp_path):
    out = tmp_path / "load.json"
    assert main(["health", "--under-load", "1", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["mode"] == "under_load"


def test_negative_load_is_a_usage_error(tmp_path):
    assert main(["health", "--under-load", "-1", "-o", str(tmp_path / "h.json")]) == 2


@pytest.mark.parametrize("kind", ["nvml-fields", "nvidia-smi-q"])
def test_headlines_from_recorded_facts(kind):
    idle, _ = recorded_pair(kind)
    h = headlines(idle)
    assert h["driver_version"] == "580.159.04" and h["cuda_driver_version"] == "13.0"
    assert h["torch_cuda_build"] == "13.0" and h["device_count"] == 1
    assert h["devices"][0]["sku_id"] == "h200-sxm-141gb"
    assert h["contracts_failed"] == [] and h["contracts"]["nvlink_links_up"] == "not-applicable"
    assert discrepancies(idle) == []


def test_discrepancies_catch_an_edited_verdict_and_sku():
    idle, _ = recorded_pair("nvidia-smi-q")
    idle["devices"][0]["ecc"]["volatile_uncorrected_errors"] = 3  # the facts now fail ECC
    idle["devices"][0]["sku"]["id"] = "h200-nvl-141gb"
    found = discrepancies(idle)
    assert any("ecc_enabled_no_uncorrectable" in line for line in found)
    assert any("SKU" in line for line in found)


def test_real_gpu_fixtures_validate():
    found = real_health_fixtures()
    assert found, "tests/fixtures/h200/health.*.json are committed (tests/fixtures/README.md)"
    for name, document in found:
        assert violations("health", document) == [], name
        assert all(d["sku"]["id"] == "h200-sxm-141gb" for d in document["devices"]), name
        assert discrepancies(document) == [], name
