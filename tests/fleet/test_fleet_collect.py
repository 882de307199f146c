"""`dossier fleet collect` over a synthetic fleet of 50 nodes (bench/fleet_synth.py: bundles made from
the lent H200's dossier, assembled and signed by the harness itself), no Slurm needed: every kind of
sick node named with its reason, the healthy ones left alone, the report readable, the fleet bundle
signed over what it holds; a node whose check crashes or kills its worker does not stop the collect.
Timing is bench/fleet_collect.py's business, never asserted here."""

from __future__ import annotations

import csv
import io
import json
import shutil
import tarfile

import pytest

from harness.analysis import fleet as fleet_analysis
from harness.cli import main
from harness.fleet.collect import collect
from harness.fleet.sealing import check
from tests.fleet_support import JOB, KILLED, RAISING, crashing_check, synthetic_fleet

SKU = "h200-sxm-141gb"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    out, plans = synthetic_fleet(tmp_path_factory.mktemp("fleet"))
    code = main(
        [
            "fleet",
            "collect",
            JOB,
            "--output-dir",
            str(out),
            "--key",
            str(out / "keys" / "dossier.pub"),
            "--workers",
            "2",
        ]
    )
    bundle = out / f"fleet-{JOB}.tar.gz"
    with tarfile.open(bundle) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
    sick = {p.sickness: p.name for p in plans if p.sickness}
    return out, code, json.loads(files["fleet.json"]), files, sick, plans


def node(document, name):
    return next(n for n in document["nodes"] if n["name"] == name)


def flags_of(document, name):
    return {f["metric"]: f for f in document["flags"] if f["node"] == name}


def test_every_kind_of_sick_node_is_named_with_its_reason(fleet):
    out, code, document, files, sick, plans = fleet
    assert code == 1
    slow = flags_of(document, sick["slow-hbm"])["bandwidth_sustained_gbps"]
    assert slow["sku"] == SKU and slow["value"] < 0.85 * slow["median_others"] and slow["mads_away"] < -3.5 / 0.6745
    assert "below the other nodes' median" in slow["why"] and "MADs away" in slow["why"]
    assert "bandwidth_plateau" in node(document, sick["slow-hbm"])["acceptance"]["why"]
    pcie = flags_of(document, sick["pcie-x8"])["pcie_link_width_under_load"]
    assert pcie["value"] == "x8" and "most nodes report x16" in pcie["why"]
    assert [f["name"] for f in node(document, sick["pcie-x8"])["acceptance"]["failed"]] == [
        "pcie_link_at_max_under_load"
    ]
    hot = flags_of(document, sick["throttling"])
    assert {"gemm_best_tflops", "sm_clock_under_load_mhz"} <= set(hot) and "below" in hot["gemm_best_tflops"]["why"]
    forged = node(document, sick["bad-signature"])
    assert forged["status"] == "rejected" and "signature" in forged["why"] and forged["metrics"] is None
    missing = node(document, sick["missing-bundle"])
    assert missing["status"] == "failed" and "exited with code 3 and wrote no bundle" in missing["why"]
    assert "the probe crashed" in missing["log_tail"]


def test_healthy_nodes_verify_pass_acceptance_and_are_not_flagged(fleet):
    out, code, document, files, sick, plans = fleet
    healthy = [p.name for p in plans if not p.sickness]
    flagged = {f["node"] for f in document["flags"]}
    for name in healthy:
        n = node(document, name)
        assert n["status"] == "ok" and n["verify"]["passed"] and n["sku"] == SKU, n
        assert n["acceptance"]["verdict"] == "pass" and name not in flagged
    assert document["failed_nodes"] == sorted([sick["bad-signature"], sick["missing-bundle"]])
    assert document["summary"]["status"] == {"failed": 1, "ok": 48, "rejected": 1}
    assert document["summary"]["skus"] == {SKU: 48}
    assert fleet_analysis.discrepancies(document) == []


def test_the_report_puts_the_sick_nodes_first_and_the_csv_holds_every_node(fleet):
    out, code, document, files, sick, plans = fleet
    report = files["fleet.md"].decode()
    table = report.split("## Sick nodes", 1)[1].split("## Compared metrics", 1)[0]
    order = [line.split("|")[2].strip() for line in table.splitlines() if line.startswith("| n0")]
    assert order[:2] == ["failed", "rejected"] and order[-1] == "outlier" and "acceptance failed" in order
    assert set(sick.values()) <= {line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| n0")}
    assert "![bandwidth_sustained_gbps across the fleet](plots/bandwidth_sustained_gbps.png)" in report
    for metric in ("bandwidth_sustained_gbps", "gemm_best_tflops", "sm_clock_under_load_mhz"):
        assert files[f"plots/{metric}.png"].startswith(b"\x89PNG") and b"<svg" in files[f"plots/{metric}.svg"]
    rows = list(csv.DictReader(io.StringIO(files["fleet.csv"].decode())))
    assert [r["node"] for r in rows] == [p.name for p in plans]
    assert next(r for r in rows if r["node"] == sick["slow-hbm"])["flagged"] == "bandwidth_sustained_gbps"
    assert f"### {sick['missing-bundle']}: failed" in report


def test_the_fleet_bundle_is_signed_over_every_member_and_holds_each_verified_node_bundle(fleet):
    out, code, document, files, sick, plans = fleet
    statement = check(files, out / "keys" / "dossier.pub")
    assert {s["name"] for s in statement["subject"]} == set(files) - {"attestation.intoto.json"}
    ok = [n["name"] for n in document["nodes"] if n["status"] == "ok"]
    assert {f"nodes/{name}.tar.gz" for name in ok} == {f for f in files if f.startswith("nodes/")}
    inner = out / "inner.tar.gz"
    inner.write_bytes(files[f"nodes/{sick['slow-hbm']}.tar.gz"])
    assert main(["verify", str(inner), "--key", str(out / "keys" / "dossier.pub")]) == 0
    predicate = statement["predicate"]
    assert predicate["acceptance_failed"] == sorted([sick["slow-hbm"], sick["pcie-x8"], sick["throttling"]])


def test_collecting_again_gives_the_same_bytes(fleet):
    out, *_ = fleet
    bundle = out / f"fleet-{JOB}.tar.gz"
    first = bundle.read_bytes()
    bundle.rename(out / "first.tar.gz")
    main(
        [
            "fleet",
            "collect",
            JOB,
            "--output-dir",
            str(out),
            "--key",
            str(out / "keys" / "dossier.pub"),
            "--workers",
            "1",
        ]
    )
    assert bundle.read_bytes() == first


def test_a_bundle_that_crashes_or_kills_its_worker_is_a_rejected_node_and_the_collect_goes_on(fleet, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(fleet[0] / "fleet-synthetic", out / "fleet-synthetic")
    shutil.copytree(fleet[0] / "keys", out / "keys")
    garbage = out / "fleet-synthetic" / "nodes" / "n0005" / "n0005.tar.gz"
    garbage.write_bytes(b"\x1f\x8b not really a bundle")
    run, document = collect(out, JOB, out / "keys" / "dossier.pub", None, 0, workers=2, check=crashing_check)
    killed, raising, broken = node(document, KILLED), node(document, RAISING), node(document, "n0005")
    assert killed["status"] == "rejected" and "worker process checking it killed by SIGKILL" in killed["why"]
    assert raising["status"] == "rejected" and "MemoryError: cannot allocate the decompression buffer" in raising["why"]
    assert broken["status"] == "rejected" and "structure" in broken["why"]
    others = [n for n in document["nodes"] if n["name"] not in (KILLED, RAISING, "n0005")]
    assert len(others) == 47 and sum(n["status"] == "ok" for n in others) == 45  # all but the forged and the missing
