"""`--prometheus FILE.prom` on run and accept (check's and the fleet's are in their own tests): the
textfile parses with prometheus_client's own parser, names carry the base unit, verdicts are 0/1
gauges, and every figure is the bundle's (the committed full H200 dossier, taken 2026-12-01)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from harness import registry
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.export import gauges
from harness.export.textfile import in_base_unit
from harness.fleet.metrics import node_metrics
from harness.registry import step_ids
from tests.cli_support import dossier

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "h200"
FULL, FULL_KEY = FIXTURES / "dossier-h200-full.tar.gz", FIXTURES / "dossier-h200-full.pub"


def samples(text: str) -> dict[tuple[str, tuple], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_a_figure_goes_to_its_base_unit():
    assert in_base_unit("bandwidth_sustained_gbps", "GB/s", 4258.0) == (
        "rig_dossier_bandwidth_sustained_bytes_per_second",
        4.258e12,
    )
    assert in_base_unit("sm_clock_under_load_mhz", "MHz", 1980) == ("rig_dossier_sm_clock_under_load_hertz", 1.98e9)
    assert in_base_unit("stress_steady_tflops", "TFLOP/s", 676.9)[0] == "rig_dossier_stress_steady_flop_per_second"
    assert in_base_unit("stress_memory_errors", "words", 0) == ("rig_dossier_stress_memory_errors", 0)


def test_the_run_export_holds_the_bundles_figures_in_base_units():
    view = BundleView.from_files(read_all(FULL), registry.analysis_module)
    found = samples(generate_latest(gauges.run(view).registry).decode())
    node = (("node", "vm"), ("sku", "h200-sxm-141gb"))
    figures = node_metrics(view)
    assert found[("rig_dossier_bandwidth_sustained_bytes_per_second", node)] == pytest.approx(
        figures["bandwidth_sustained_gbps"] * 1e9
    )
    assert found[("rig_dossier_stress_steady_flop_per_second", node)] == pytest.approx(
        figures["stress_steady_tflops"] * 1e12
    )
    assert (
        found[
            ("rig_dossier_pcie_link_width_under_load_info", node + (("value", figures["pcie_link_width_under_load"]),))
        ]
        == 1
    )
    status = {
        dict(k[1])["step"]: dict(k[1])["status"]
        for k, v in found.items()
        if k[0] == "rig_dossier_run_step_status" and v == 1.0
    }
    assert status == {s["step"]: s["status"] for s in view.steps}


def test_run_refuses_a_textfile_name_before_any_probe(tmp_path):
    code, _, err = dossier("run", "--output-dir", str(tmp_path), "--prometheus", str(tmp_path / "run.txt"))
    assert code == 2 and "must end in .prom" in err and not list(tmp_path.glob("*.tar.gz"))


def test_run_writes_the_textfile_beside_its_bundle(tmp_path):
    key_dir = tmp_path / "keys"
    assert dossier("keygen", "--out", str(key_dir))[0] == 0
    skip = [arg for step in step_ids() for arg in ("--skip", step)]
    prom = tmp_path / "node.prom"
    code, _, err = dossier(
        "run",
        "--output-dir",
        str(tmp_path),
        "--name",
        "n",
        "--key",
        str(key_dir / "dossier.key"),
        "--prometheus",
        str(prom),
        *skip,
    )
    # every step left out: nothing judged, so the run's verdict is INCOMPLETE (exit 5); the bundle and the
    # textfile are written all the same
    assert code == 5 and f"wrote {prom}" in err and "verdict: INCOMPLETE: n.tar.gz: " in err
    assert err.rstrip().splitlines()[-1].endswith("(exit 5)")
    found = samples(prom.read_text())
    not_run = [k for k, v in found.items() if k[0] == "rig_dossier_run_step_status" and v == 1.0]
    assert {dict(k[1])["status"] for k in not_run} == {"not_run"} and len(not_run) == len(step_ids())


def test_accept_exports_its_result_and_each_criterion(tmp_path):
    prom = tmp_path / "accept.prom"
    code, out, _ = dossier(
        "accept",
        str(FULL),
        "--profile",
        "h200-sxm-141gb",
        "--key",
        str(FULL_KEY),
        "--prometheus",
        str(prom),
        "--allow-format",
        "4",
    )  # the committed dossier's format
    assert code == 0
    found = samples(prom.read_text())
    result = {dict(k[1])["verdict"]: v for k, v in found.items() if k[0] == "rig_dossier_accept_result"}
    assert result == {"pass": 1.0, "warn": 0.0, "fail": 0.0, "incomplete": 0.0}
    assert out.splitlines()[-1].startswith("verdict: PASS: dossier-h200-full.tar.gz against h200-sxm-141gb: ")
    reached = {
        dict(k[1])["criterion"]: dict(k[1])["verdict"]
        for k, v in found.items()
        if k[0] == "rig_dossier_accept_criterion" and v == 1.0
    }
    code, printed, _ = dossier(
        "accept", str(FULL), "--profile", "h200-sxm-141gb", "--key", str(FULL_KEY), "--json", "--allow-format", "4"
    )
    criteria = {c["name"]: c["status"] for c in json.loads(printed)["criteria"]}
    assert reached == criteria and reached["stress_power_target_reached"] == "pass"  # one 1 per criterion: its verdict
    labels = {"criterion": "sku_matches_profile", "node": "vm", "profile": "h200-sxm-141gb", "verdict": "fail"}
    assert found[("rig_dossier_accept_criterion", tuple(sorted(labels.items())))] == 0
