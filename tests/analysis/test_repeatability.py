"""Run-to-run repeatability: the catalogue's bounds and measured spreads, the declaration a bundle records
at run time (commands.json `repeatability`), the report's section and what verdicts say of a noisy figure."""

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from bench import repeatability as bench
from harness import catalogue, registry
from harness.analysis import repeatability as rules
from harness.analysis.figure import RATE_KINDS
from harness.analysis.roofline.declared import roofline_kind
from harness.bundle.view import BundleView
from harness.judge.acceptance.rates import bandwidth_plateau
from harness.judge.facts import BundleFacts
from harness.present.report import render_report
from harness.run.assemble import unsigned_files
from harness.schemas import violations
from tests.accept_support import h200_documents, record, resolve

H200 = "h200-sxm-141gb"


def test_the_bounds_are_the_issues_and_every_kind_has_one():
    bounds = catalogue.repeatability_bounds()["bounds"]
    assert {k: b["max_spread"] for k, b in bounds.items()} == {"steady": 0.02, "burst": 0.05, "launch_bound": 0.10}
    assert set(bounds) == set(RATE_KINDS)


def test_the_h200_declaration_names_its_sources_and_the_noisy_figures():
    record = rules.declaration(H200)
    final, dossiers = record["sources"]["issue-30-final-h200"], record["sources"]["issue-30-b661845"]
    assert (final["runs"], final["machine_starts"], final["date"]) == (5, 2, "2026-12-01")
    assert "tests/fixtures/h200/final/h200-{a1,a2,a3,b1,b2}.tar.gz" in final["where"]  # the raw data, committed
    assert (dossiers["runs"], dossiers["machine_starts"], dossiers["commit"]) == (5, 3, "b661845")  # pageable
    assert record["sources"]["issue-30-windows-h200"]["runs"] == 3  # roofline shapes the five did not time
    noisy = {e["figure"]: e for e in rules.noisy(record)}
    # the launch-bound shapes' eager rates (the host's launch rate) are noisy; their kernel-only headlines are not
    assert {
        "transfer.*_pageable_gbps",
        "transfer.d2h_pageable_gbps",
        "transfer.bidirectional_total_pageable_gbps",
        "transfer.bidirectional_h2d_pinned_gbps",
        "roofline.bf16.square-256.eager_tflops",
        "roofline.bf16.square-512.eager_tflops",
        "roofline.bf16.square-1024.eager_tflops",
        "roofline.bf16.o-decode-1.eager_tflops",
        "roofline.bf16.o-decode-64.eager_tflops",
        "roofline.bf16.awkward-1000.eager_tflops",
    } == set(noisy)
    assert noisy["roofline.bf16.square-256.eager_tflops"]["kind"] == "launch_bound"
    assert "host's launch path" in noisy["roofline.bf16.square-256.eager_tflops"]["why"]
    assert all(e["spread"] > e["bound"] and e["why"] for e in noisy.values())
    headline = rules.lookup(record, "roofline.bf16.square-256.tflops")
    assert headline["noisy"] is False and headline["kind"] == "burst" and headline["spread"] == 0.0089
    steady = rules.lookup(record, "bandwidth.plateau_gbps")
    assert steady["noisy"] is False and steady["spread"] == 0.0061 and steady["bound"] == 0.02


def test_an_exact_figure_wins_over_a_pattern():
    record = rules.declaration(H200)
    assert rules.lookup(record, "roofline.bf16.square-256.eager_tflops")["spread"] == 0.3692
    assert (
        rules.lookup(record, "roofline.bf16.o-prefill-2048.tflops")["figure"] == "roofline.bf16.o-prefill-2048.tflops"
    )
    assert rules.lookup(record, "roofline.bf16.user-1x2x3.tflops")["figure"] == "roofline.bf16.*.tflops"
    assert rules.lookup(record, "transfer.h2d_pageable_gbps")["figure"] == "transfer.*_pageable_gbps"
    assert rules.lookup(record, "roofline.bf16.burst_best_tflops")["figure"] == "roofline.bf16.burst_best_tflops"
    assert rules.lookup(record, "allreduce.busbw_gbps") is None


def test_without_a_measurement_the_declaration_says_why():
    assert "no GPU SKU was identified" in rules.declaration(None)["unavailable"]
    assert rules.declaration("l4-24gb") == {
        "unavailable": "the catalogue has no run-to-run measurement for l4-24gb yet"
    }


def test_the_bundles_sku_is_the_one_health_identified():
    assert rules.bundle_sku(h200_documents()) == H200
    assert rules.bundle_sku({"bandwidth": {"reference": {"sku_id": "a100-sxm4-80gb"}}}) == "a100-sxm4-80gb"
    assert rules.bundle_sku({}) is None


@pytest.mark.parametrize(
    "per_call_s, launch_bound, kind",
    [(16e-6, True, "launch_bound"), (25e-6, False, "burst"), (0.3e-3, False, "burst"), (1.4e-3, False, "steady")],
)
def test_a_roofline_shapes_kind(per_call_s, launch_bound, kind):
    assert roofline_kind(per_call_s, launch_bound) == kind


def bundle_view(repeatability):
    return BundleView.from_files(
        unsigned_files(dataclasses.replace(record(h200_documents()), repeatability=repeatability)),
        registry.analysis_module,
    )


def test_a_bundle_records_it_and_the_report_renders_it_from_the_bundle_alone():
    view = bundle_view(rules.declaration(H200))
    assert violations("commands", view.commands) == []
    assert view.commands["repeatability"]["figures"] == rules.declaration(H200)["figures"]
    report = render_report(view)
    section = " ".join(report[report.index("\n## Repeatability") : report.index("\n## Host\n")].split())  # unwrapped
    assert "not what the next run" in section
    assert (
        "5 runs of dossier run (local runner, the 60 s stress) by PHASE=A|B OUT=$OUT bash bench/gpu_final.sh" in section
    )
    assert "3 runs of the roofline probe as dossier run starts it on a GPU" in section
    assert "**Noisy**" in section and "transfer.*_pageable_gbps 34.00%" in section
    assert "roofline.bf16.square-256.eager_tflops 36.92%" in section.split("Within bounds:")[0]
    within = section.split("Within bounds:")[1]  # a list of figures, folded as the report folds them
    assert "bandwidth.plateau_gbps 0.61%" in within and "more in commands.json repeatability" in within
    unavailable = render_report(bundle_view(rules.declaration(None)))
    assert "nothing applies here: no GPU SKU was identified" in " ".join(unavailable.split())
    before = bundle_view(None)  # bundles before format 5 carry none
    before.commands.pop("repeatability")
    assert "## Repeatability" not in render_report(before)


def test_a_verdict_on_a_noisy_figure_says_so():
    record = rules.declaration(H200)
    noisy = {
        **record,
        "figures": [
            {
                **rules.lookup(record, "bandwidth.plateau_gbps"),
                "spread": 0.03,
                "noisy": True,
                "why": "a test's declaration",
            }
        ],
    }
    [result] = bandwidth_plateau(BundleFacts(bundle_view(noisy)), resolve(H200))
    assert (
        "declared noisy in this bundle: 3.00% run to run over its 2% steady bound (a test's declaration)" in result.why
    )
    [plain] = bandwidth_plateau(BundleFacts(bundle_view(record)), resolve(H200))
    assert "noisy" not in plain.why


def test_the_bench_reads_verified_dossiers_and_writes_a_block_the_catalogue_takes(tmp_path, capsys, monkeypatch):
    """bench/repeatability.py on the two committed H200 dossiers (formats 1 and 4, two keys)."""
    fixtures = Path(__file__).parents[1] / "fixtures" / "h200"
    out = tmp_path / "block.json"
    monkeypatch.setattr(
        sys,
        "argv",
        [
            "repeatability.py",
            str(fixtures / "dossier-h200.tar.gz"),
            str(fixtures / "dossier-h200-full.tar.gz"),
            "--key",
            str(fixtures / "dossier-h200.pub"),
            str(fixtures / "dossier-h200-full.pub"),
            "--machine-starts",
            "2",
            "--json",
            str(out),
            "--allow-format",
            "1",
            "--allow-format",
            "4",
        ],
    )  # older than this build's
    assert bench.main() == 0
    printed = capsys.readouterr().out
    assert "| bandwidth.plateau_gbps | steady | 2% | 2 | 4232.2 |" in printed
    assert "| stress.steady_tflops |" not in printed  # the format-1 bundle has no stress step: one value only
    data = json.loads(out.read_text())
    bench.check_block(data)
    [source] = data["sources"].values()
    assert source["runs"] == 2 and source["machine_starts"] == 2 and source["date"] == "2026-11-29"
    plateau = next(f for f in data["figures"] if f["figure"] == "bandwidth.plateau_gbps")
    assert plateau["kind"] == "steady" and plateau["spread"] == pytest.approx((4258.5 - 4232.2) / 4245.4, abs=1e-4)
