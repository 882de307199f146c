"""`dossier verify` recomputes every figure from raw samples: tampered consistently, re-signed with
the right key, a real H200 bundle must fail, naming the figure.

The bundles are the committed signed dossiers made on the lent H200 SXM and on two NVLink H200s
(tests/fixtures/h200/, tests/fixtures/h200x2/). Each test changes a raw document the way an
attacker would (keeping it schema-valid), re-signs the whole bundle with a key made here and
verifies with that key's public half: the signature, hashes and schemas then pass, so only the
recomputation can catch the change.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness import registry
from harness.analysis import roofline as roofline_analysis
from harness.signing.keys import load_public
from harness.verify import verify_bundle
from tests.bundle_support import make_key, rewrite

FIXTURES = Path(__file__).parents[1] / "fixtures"
H200 = FIXTURES / "h200" / "dossier-h200.tar.gz"
H200X2 = FIXTURES / "h200x2" / "dossier-h200x2.tar.gz"
FORMAT_1 = (1,)  # both are format-1 bundles: allowed, their report.md is not re-rendered (docs/bundle.md)


@pytest.fixture(scope="module")
def signer(tmp_path_factory):
    private, public = make_key(tmp_path_factory.mktemp("signer"))
    return private, load_public(public)


def edit_json(member: str, change: Callable[[dict], None]) -> Callable[[dict], None]:
    def edit(files):
        document = json.loads(files[member])
        change(document)
        files[member] = json.dumps(document, allow_nan=False, sort_keys=True).encode()

    return edit


def failures(bundle: Path, member: str, change, signer, tmp_path) -> list:
    private, public = signer
    out = rewrite(bundle, tmp_path / "tampered.tar.gz", edit_json(member, change), resign_with=private)
    return verify_bundle(out, public, allow_formats=FORMAT_1).failures


def assert_named(found, member: str, *words: str) -> None:
    """Only figure checks fail (signature, hashes and schemas pass), and one names every word."""
    assert found, f"the change to {member} verified"
    assert {f.check for f in found} == {"figures"}, [f.line() for f in found]
    assert any(f.subject == member and all(w in f.detail for w in words) for f in found), [f.line() for f in found]


@pytest.mark.parametrize("bundle", [H200, H200X2], ids=["h200", "h200x2"])
def test_the_untouched_bundle_re_signed_here_verifies(bundle, signer, tmp_path):
    private, public = signer
    out = rewrite(bundle, tmp_path / "resigned.tar.gz", resign_with=private)
    assert verify_bundle(out, public, allow_formats=FORMAT_1).failures == []


# --- item 9: roofline and fusion rates come from the per-call times ----------------------------


def _times_three(timed: dict) -> None:
    timed["times_s"] = [t * 3 for t in timed["times_s"]]


def test_gemm_per_call_times_multiplied_by_three_fail(signer, tmp_path):
    def slower(document):
        for shape in document["measurements"]["shapes"]:
            if shape["status"] == "measured":
                _times_three(shape)

    found = failures(H200, "raw/roofline.json", slower, signer, tmp_path)
    assert_named(found, "raw/roofline.json", "square-4096", "median_s", "times_s")


def test_fusion_per_call_times_multiplied_by_three_fail(signer, tmp_path):
    found = failures(H200, "raw/roofline.json", lambda d: _times_three(d["fusion"]["fused"]), signer, tmp_path)
    assert_named(found, "raw/roofline.json", "fusion.fused", "median_s", "times_s")


def test_a_stated_median_and_everything_it_feeds_restated_still_fails_on_the_times(signer, tmp_path):
    """The attacker halves one shape's median and restates every figure made from it: the per-call
    times it claims to summarise still give the measured median."""
    from harness.analysis.roofline.explanation import context_of, explain

    def faster(document):
        shape = next(s for s in document["measurements"]["shapes"] if s["label"] == "square-8192")
        prediction = next(p for p in document["predictions"]["shapes"] if p["label"] == "square-8192")
        shape["median_s"] /= 2
        shape["achieved_tflops"] = prediction["flops"] / shape["median_s"] / 1e12
        shape["effective_gbps"] = prediction["min_bytes"] / shape["median_s"] / 1e9
        shape["fraction_of_attainable"] = shape["achieved_tflops"] / prediction["attainable_tflops"]
        explanation = explain(prediction, shape, context_of(document))
        shape["explanation"] = {k: explanation[k] for k in ("verdict", "explained", "causes", "text")}
        document["summary"]["best_tflops"] = max(document["summary"]["best_tflops"], shape["achieved_tflops"])
        document["summary"]["best_shape"] = "square-8192"

    found = failures(H200, "raw/roofline.json", faster, signer, tmp_path)
    assert_named(found, "raw/roofline.json", "square-8192", "median_s", "times_s")
    assert any("summary.best_tflops" in f.detail for f in found)


# --- item 10: the byte count follows the kernel's rule and the buffer; no figure above the datasheet


def restate(document: dict) -> None:
    """Every figure the probe derives from bytes and times, recomputed from the document's own
    (tampered) bytes_per_iteration, as an attacker covering their tracks would."""
    from harness.analysis.bandwidth import figures as bw

    cache, empty = document["cache"]["size_bytes"], document["launch"]["empty_launch_s"]
    for point in document["sweep"] + document["repeats"]["runs"]:
        median_s = point["median_s"]
        point["median_gbps"] = bw.gbps(point["bytes_per_iteration"], median_s)
        point["marks"], point["why"] = bw.classify(median_s, point["bytes_per_iteration"], cache, empty)
        point["bytes_vs_cache"] = point["bytes_per_iteration"] / cache
    points = [
        {"size_mib": p["size_mib"], "gbps": p["median_gbps"], "marks": p["marks"], "why": p["why"]}
        for p in document["sweep"]
    ]
    found, top = bw.plateau(points), max(points, key=lambda p: p["gbps"])
    document["plateau"].update(
        gbps=found["gbps"],
        sizes_mib=found["sizes_mib"],
        reached=found["reached"],
        why=found["why"],
        off_plateau=bw.explain_off_plateau(points, found["gbps"], found["sizes_mib"]),
    )
    document["plateau"]["maximum"].update(size_mib=top["size_mib"], gbps=top["gbps"])
    repeats = document["repeats"]
    repeats["medians_gbps"] = [r["median_gbps"] for r in repeats["runs"]]
    repeats["spread"] = bw.spread(repeats["medians_gbps"])
    reference = document["reference"]
    reference["known_good_ratio"] = found["gbps"] / reference["known_good_gbps"]
    reference["spec_ratio"] = found["gbps"] / reference["spec_gbps"]


def _scaled(*keys: str, factor: float = 1.5):
    def change(document):
        for point in document["sweep"] + document["repeats"]["runs"]:
            for key in keys:
                point[key] = type(point[key])(point[key] * factor)
        if "size_mib" in keys:
            document["repeats"]["size_mib"] *= factor
        restate(document)
        assert document["plateau"]["gbps"] == pytest.approx(1.5 * 4258.51, rel=1e-4)  # the 6388 GB/s

    return change


def test_a_copy_byte_count_raised_1_5x_fails_on_the_kernels_byte_rule(signer, tmp_path):
    found = failures(H200, "raw/bandwidth.json", _scaled("bytes_per_iteration"), signer, tmp_path)
    assert_named(found, "raw/bandwidth.json", "sweep 16384 MiB bytes_per_iteration", "34359738368")


def test_a_buffer_raised_with_its_byte_count_fails_on_the_buffer_size(signer, tmp_path):
    change = _scaled("bytes_per_iteration", "buffer_bytes", "elements")
    found = failures(H200, "raw/bandwidth.json", change, signer, tmp_path)
    assert_named(found, "raw/bandwidth.json", "sweep 16384 MiB elements", "16384 MiB of float32")


def test_sizes_raised_with_everything_else_fail_on_the_datasheet_limit(signer, tmp_path):
    change = _scaled("bytes_per_iteration", "buffer_bytes", "elements", "size_mib")
    found = failures(H200, "raw/bandwidth.json", change, signer, tmp_path)
    assert_named(
        found, "raw/bandwidth.json", "plateau.gbps: 6388 GB/s", "above the 4800 GB/s datasheet figure", "h200-sxm-141gb"
    )
    assert not any("bytes_per_iteration" in f.detail for f in found)  # consistent: only the limit catches it


# --- item 11: every stated summary is recomputed -----------------------------------------------


def _set(path: str, value):
    """Set document[a][b]... to VALUE, or to VALUE(old) when callable; a digit indexes a list."""
    keys = path.split(".")

    def change(document):
        target = document
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        last = int(keys[-1]) if isinstance(target, list) else keys[-1]
        target[last] = value(target[last]) if callable(value) else value

    return change


BANDWIDTH_SUMMARIES = [
    ("repeats.medians_gbps.1", lambda v: v + 10, "repeats.medians_gbps"),
    ("plateau.maximum.gbps", lambda v: v * 1.1, "plateau.maximum.gbps"),
    ("plateau.maximum.size_mib", 8192, "plateau.maximum.size_mib"),
    ("plateau.off_plateau.0.vs_plateau", 0.0, "plateau.off_plateau"),
    ("plateau.why", "5 largest sizes agree within 1%", "plateau.why"),
    ("plateau.tolerance", 0.5, "plateau.tolerance"),
    ("sweep.7.median_s", lambda v: v / 2, "sweep 16384 MiB median_s"),
    ("sweep.7.min_s", lambda v: v / 2, "sweep 16384 MiB min_s"),
    ("sweep.0.max_s", lambda v: v * 2, "sweep 4 MiB max_s"),
    ("sweep.0.iterations", 10, "sweep 4 MiB iterations"),
    ("sweep.0.why", ["launch-bound"], "sweep 4 MiB why"),
    ("repeats.count", 5, "repeats.count"),
    ("repeats.size_mib", 8192, "repeats.size_mib"),
    ("repeats.trusted", False, "repeats.trusted"),
    ("repeats.spread_max", 0.5, "repeats.spread_max"),
    ("memory.largest_safe_size_mib", 100000.0, "memory.largest_safe_size_mib"),
    ("cache.size_mib", 50.0, "cache.size_mib"),
    ("reference.spec_ratio", 0.95, "reference.spec_ratio"),
    ("reference.spec_gbps", 6000, "reference.spec_gbps"),
    ("reference.known_good_gbps", 4000, "reference.known_good_gbps"),
    ("reference.sku_id", "h200-nvl-141gb", "reference.sku_id"),
    ("device_identity.sku_id", "h100-sxm5-80gb", "device_identity.sku_id"),
    ("byte_counting.reads", 2, "byte_counting.reads"),
    ("launch.launch_bound_factor", 1.0, "launch.launch_bound_factor"),
]


@pytest.mark.parametrize("path, value, named", BANDWIDTH_SUMMARIES, ids=[s[0] for s in BANDWIDTH_SUMMARIES])
def test_each_stated_bandwidth_summary_is_recomputed(path, value, named, signer, tmp_path):
    found = failures(H200, "raw/bandwidth.json", _set(path, value), signer, tmp_path)
    assert_named(found, "raw/bandwidth.json", named)


# --- item 12: the roofline's roof is the bandwidth step's recomputed median ---------------------


def on_roof(roof_gbps: float):
    """A roofline document restated on another memory roof: ridge, predictions, rates,
    explanations, fusion comparison and summary all recomputed, as an attacker would."""
    from harness.analysis.roofline import model as rl
    from harness.analysis.roofline.explanation import context_of, explain

    def change(document):
        roofs = document["roofs"]
        roofs["bandwidth_gbps"] = roof_gbps
        argv = document["argv"]  # the roof is given on the command line: restated there too
        argv[argv.index("--bandwidth-gbps") + 1] = f"{roof_gbps:g}"
        roofs["ridge_flop_per_byte"] = rl.ridge_flop_per_byte(roofs["peak_tflops"], roof_gbps)
        widths = (document["precision"]["input_bytes"], document["precision"]["output_bytes"])
        predictions = {}
        for p in document["predictions"]["shapes"]:
            p.update(rl.classify(p["m"], p["n"], p["k"], *widths, roofs["peak_tflops"], roof_gbps))
            predictions[p["label"]] = p
        for shape in document["measurements"]["shapes"]:
            if shape["status"] == "measured":
                p = predictions[shape["label"]]
                shape["fraction_of_attainable"] = shape["achieved_tflops"] / p["attainable_tflops"]
                explanation = explain(p, shape, context_of(document))
                shape["explanation"] = {k: explanation[k] for k in ("verdict", "explained", "causes", "text")}
        fusion = document["fusion"]
        if "comparison" in fusion:
            fusion["comparison"] = rl.fusion_comparison(fusion, roofs["peak_tflops"], roof_gbps)
        document["summary"].update(
            {k: v for k, v in roofline_analysis.headlines(document).items() if k in document["summary"]}
        )

    return change


def test_a_roofline_restated_on_another_roof_fails_against_the_bandwidth_step(signer, tmp_path):
    from tests.machines.test_h200_bundle import raw

    restated = raw("roofline")
    on_roof(4800.0)(restated)
    assert roofline_analysis.discrepancies(restated) == []  # consistent in itself
    found = failures(H200, "raw/roofline.json", on_roof(4800.0), signer, tmp_path)
    assert_named(
        found,
        "raw/roofline.json",
        "roofs.bandwidth_gbps 4800 GB/s",
        "sustained median 4272.85 GB/s",
        "raw/bandwidth.json",
    )


def test_the_stored_input_edited_with_the_roof_still_fails(signer, tmp_path):
    """The report used to compare the roof with commands.json's stored input: edit both."""
    private, public = signer

    def both(files):
        edit_json("raw/roofline.json", on_roof(4800.0))(files)

        def inputs(commands):
            step = next(s for s in commands["steps"] if s["step"] == "roofline")
            step["inputs"]["bandwidth_gbps"] = 4800.0

        edit_json("commands.json", inputs)(files)

    found = verify_bundle(
        rewrite(H200, tmp_path / "both.tar.gz", both, resign_with=private), public, allow_formats=FORMAT_1
    ).failures
    assert_named(found, "raw/roofline.json", "roofs.bandwidth_gbps 4800 GB/s")
    assert any(f.subject == "commands.json" and "inputs.bandwidth_gbps 4800.0" in f.detail for f in found)


def test_bandwidth_claiming_a_device_health_does_not_list_fails(signer, tmp_path):
    """A B200's 8000 GB/s datasheet would lift the limit: health lists an H200."""

    def as_b200(document):
        document["device_identity"].update(
            pci_device_id="0x290110de", memory_total_mib=183359.0, power_limit_w=1000.0, sku_id="b200-180gb"
        )
        document["reference"].update(
            sku_id="b200-180gb",
            spec_gbps=8000,
            comparable=False,
            known_good=None,
            known_good_gbps=None,
            known_good_ratio=None,
            spec_ratio=document["plateau"]["gbps"] / 8000,
        )

    found = failures(H200, "raw/bandwidth.json", as_b200, signer, tmp_path)
    assert_named(found, "raw/bandwidth.json", "identifies b200-180gb", "no health step lists", "h200-sxm-141gb")


# --- item 13: the precision table's per-tensor rank column --------------------------------------


def test_a_reversed_per_tensor_ranking_fails(signer, tmp_path):
    def reverse(document):
        document["tensors"][0]["ranking"].reverse()

    found = failures(H200, "raw/precision.json", reverse, signer, tmp_path)
    assert_named(found, "raw/precision.json", "tensor embedding ranking", "ranked by SQNR")


def test_a_reversed_ranking_restated_in_both_places_fails(signer, tmp_path):
    def reverse(document):
        for tensor in document["tensors"]:
            tensor["ranking"].reverse()
            document["ranks"][tensor["role"]] = list(tensor["ranking"])

    found = failures(H200, "raw/precision.json", reverse, signer, tmp_path)
    assert_named(found, "raw/precision.json", "tensor mlp_projection ranking")
    assert any("ranks[attention_projection]" in f.detail for f in found)


PRECISION_SUMMARIES = [
    ("tensors.0.formats.3.bits_per_element_with_scales", 8.0, "bits_per_element_with_scales"),
    ("tensors.1.stats.beyond_6sigma_share", 0.5, "beyond_6sigma_share"),
    ("explanations.0.formats", ["int8_per_tensor"], "explanations: the kind, role, formats or order"),
    ("explanations.0.role", "mlp_projection", "explanations: the kind, role, formats or order"),
]


@pytest.mark.parametrize("path, value, named", PRECISION_SUMMARIES, ids=[s[0] for s in PRECISION_SUMMARIES])
def test_each_stated_precision_summary_is_recomputed(path, value, named, signer, tmp_path):
    found = failures(H200, "raw/precision.json", _set(path, value), signer, tmp_path)
    assert_named(found, "raw/precision.json", named)


# --- item 15: a contract 1 all-reduce (no per-call times) still verifies, and says so ------------


def test_the_two_gpu_bundles_medians_are_checked_as_stated_and_the_report_says_why():
    from harness.bundle.read import read_all
    from harness.bundle.view import BundleView
    from harness.judge import lab
    from harness.judge.facts import BundleFacts

    view = BundleView.from_files(read_all(H200X2), registry.analysis_module)
    assert view.documents["allreduce"]["contract_version"] == 1
    [judged] = lab.judge_allreduce(BundleFacts(view))
    assert judged.status == "pass"
    assert any("not recomputable from per-call times" in line and "contract 1" in line for line in judged.findings)


ALLREDUCE_SUMMARIES = [
    ("runs.0.fit.rel_rms_residual", 0.01, "fit rel_rms_residual"),
    ("runs.1.half_plateau.plateau_sizes_bytes", [268435456, 536870912], "half_plateau plateau_sizes_bytes"),
    ("runs.0.points.27.elements", 1, "1073741824 B elements"),
    ("runs.0.status", "failed", "status 'failed'"),
    ("explanations.2.gap.busbw_ratio", 2.0, "explanations[2].gap"),
    ("explanations.2.text", "NVLink, trust me.", "explanations[2].text"),
    ("nvls.nvls_algorithm_seen", True, "nvls.nvls_algorithm_seen"),
    ("ring_comparison", {"compared": False, "reason": "made up"}, "ring_comparison"),
]


@pytest.mark.parametrize("path, value, named", ALLREDUCE_SUMMARIES, ids=[s[0] for s in ALLREDUCE_SUMMARIES])
def test_each_stated_allreduce_summary_is_recomputed(path, value, named, signer, tmp_path):
    found = failures(H200X2, "raw/allreduce.json", _set(path, value), signer, tmp_path)
    assert_named(found, "raw/allreduce.json", named)


def test_a_shapes_clock_median_is_recomputed_from_its_kept_samples():
    """Contract 2 keeps each shape's SM clock samples; the H200 dossier (contract 1) stated the one
    sample of square-256 as its median (1980 MHz), so that sample list is what contract 2 keeps."""
    from harness.analysis.roofline import timing_checks
    from tests.machines.test_h200_bundle import raw

    document = raw("roofline")
    shape = next(s for s in document["measurements"]["shapes"] if s["label"] == "square-256")
    assert shape["clocks"]["samples"] == 1 and shape["clocks"]["sm_clock_mhz_median"] == 1980
    shape["clocks"]["sm_clock_mhz_samples"] = [1980]
    assert timing_checks.sample_discrepancies(document) == []
    shape["clocks"]["sm_clock_mhz_samples"] = [1305]  # what the samples would say under a power cap
    assert any("square-256" in line and "1305" in line for line in timing_checks.sample_discrepancies(document))


ROOFLINE_SUMMARIES = [
    ("measurements.shapes.3.rotated_mib", 512.0, "rotated_mib"),
    ("measurements.shapes.3.cache_defeated", False, "cache_defeated"),
    ("measurements.shapes.0.explanation.causes", [], "explanation causes"),
    ("measurements.shapes.0.iterations", 50, "iterations 50"),
    ("predictions.shapes.0.min_bytes", 1, "prediction square-256: min_bytes"),
    ("fusion.comparison.traffic_ratio", 8.0, "fusion.comparison.traffic_ratio"),
    ("fusion.unfused_bytes", 4294967296, "fusion.unfused_bytes"),
    ("fusion.unfused_kernels", 8, "fusion.unfused_kernels 8"),
    ("fusion.fused.achieved_gbps", 8000.0, "fusion.fused.achieved_gbps"),
    ("fusion.unfused.iterations", 100, "fusion.unfused: iterations"),
    ("roofs.peak_tflops", 1979.0, "the catalogue's dense bf16 figure"),
    ("summary.classifications.square-256", "compute", "summary.classifications"),
]


@pytest.mark.parametrize("path, value, named", ROOFLINE_SUMMARIES, ids=[s[0] for s in ROOFLINE_SUMMARIES])
def test_each_stated_roofline_summary_is_recomputed(path, value, named, signer, tmp_path):
    found = failures(H200, "raw/roofline.json", _set(path, value), signer, tmp_path)
    assert_named(found, "raw/roofline.json", named)
