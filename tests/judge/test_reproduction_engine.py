"""The judgement of two bundles (harness.judge.reproduction.engine) on real H200 documents, read as
`dossier accept` reads them, unsigned (tests/accept_support.view_of): counts equal only, exact figures
equal only, a tensor or a timing method that differs is not comparable, the identity, the likely why.
Each failure path changes one recorded fact of a real capture and says which."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from harness import registry
from harness.analysis.noise import noise_model
from harness.analysis.verdict import Verdict
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.judge.reproduction import declare
from harness.judge.reproduction.engine import compare
from tests.accept_support import h200_bandwidth, h200_health, view_of

FIXTURES = Path(__file__).parents[1] / "fixtures"
H200_FULL = FIXTURES / "h200" / "dossier-h200-full.tar.gz"


def real(name: str) -> dict:
    """raw/NAME.json of the full H200 dossier (tests/fixtures/h200/, format 4)."""
    return json.loads(read_all(H200_FULL)[f"raw/{name}.json"])


def judged(theirs: dict, mine: dict, unhonoured=None):
    return compare(view_of(theirs), view_of(mine), registry.diff_figures(), registry.diff_fields(), unhonoured)


def by_id(judgement) -> dict:
    return {f.figure: f for f in judgement.figures}


def test_fault_counts_reproduce_only_when_equal():
    """The H200's real stress run against itself with two words of its memory test read back wrong."""
    stress = json.loads((FIXTURES / "h200" / "stress-bf16.json").read_text())
    faulty = copy.deepcopy(stress)
    faulty["devices"][0]["memory_test"]["patterns"][0]["mismatched_words_per_chunk"][3] = 2
    found = by_id(judged({"stress": stress}, {"stress": faulty}))
    errors = found["stress.gpu0.memory_errors"]
    assert (errors.theirs, errors.mine, errors.verdict, errors.kind) == (0, 2, Verdict.FAIL, "count")
    assert errors.tolerance == 0 and errors.ratio is None and "both are zero or equal" in errors.tolerance_source
    assert found["stress.gpu0.result_mismatches"].verdict == Verdict.PASS
    assert found["stress.gpu0.steady_tflops"].verdict == Verdict.PASS  # the same run: ratio 1
    assert found["stress.gpu0.steady_tflops"].ratio == 1


def test_the_precision_figures_are_exact_and_need_the_same_tensor():
    """The H200's real precision run: bit-identical on any device (PRECISION_DIGEST_RULE), so one error changed
    in its last digit does not reproduce; a tensor with another sha256 is not comparable at all."""
    precision = real("precision")
    changed = copy.deepcopy(precision)
    row = changed["tensors"][0]["formats"][0]
    row["relative_rmse"] *= 1 + 1e-12
    other = copy.deepcopy(precision)
    other["tensors"][1]["sha256"] = "0" * 64
    found = by_id(judged({"precision": precision}, {"precision": changed}))
    assert found["precision.embedding.fp16.relative_rmse"].verdict == Verdict.FAIL
    assert found["precision.embedding.bf16.relative_rmse"].verdict == Verdict.PASS
    found = by_id(judged({"precision": precision}, {"precision": other}))
    skipped = found["precision.attention_projection.int8_per_channel.relative_rmse"]
    assert skipped.verdict == Verdict.SKIP and skipped.why.startswith(
        'measured under other conditions: theirs {"tensor_sha256": "37cd347d'
    )


def test_precision_compares_across_skus_the_rates_do_not():
    """A CPU's bandwidth run against the H200's: the rates are not comparable (identity differs), the
    precision figures (device-independent) still are."""
    cpu = json.loads((FIXTURES / "bandwidth-cpu-sweep.json").read_text())
    judgement = judged(
        {"bandwidth": h200_bandwidth(), "precision": real("precision")},
        {"bandwidth": cpu, "precision": real("precision")},
    )
    assert not judgement.comparable and judgement.result == Verdict.SKIP
    found = by_id(judgement)
    assert found["bandwidth.repeat_median_gbps"].verdict == Verdict.SKIP
    assert found["bandwidth.repeat_median_gbps"].why.startswith(
        "identity differs: THEIRS was measured on GPU h200-sxm-141gb (the bandwidth step's), MINE on the CPU"
    )
    assert found["precision.mlp_projection.int4_per_group128.relative_rmse"].verdict == Verdict.PASS


def test_the_identity_is_judged_and_a_second_gpu_is_named():
    """The H200's health documents against the same with the idle document's device list doubled: the
    device list and count do not reproduce; per-GPU figures stay comparable (same SKU)."""
    idle, load = h200_health()
    doubled = copy.deepcopy(idle)
    second = copy.deepcopy(doubled["devices"][0])
    second.update(nvml_index=1, uuid="GPU-second")
    doubled["devices"].append(second)
    found = by_id(
        judged({"health": idle, "bandwidth": h200_bandwidth()}, {"health": doubled, "bandwidth": h200_bandwidth()})
    )
    assert found["health.device_count"].verdict == Verdict.FAIL
    assert (found["health.device_count"].theirs, found["health.device_count"].mine) == (1, 2)
    assert found["bandwidth.plateau_gbps"].verdict == Verdict.PASS


def test_a_step_run_where_their_plan_was_not_honoured_is_not_comparable():
    documents = {"bandwidth": h200_bandwidth()}
    found = by_id(judged(documents, documents, {"bandwidth": "their image is not here"}))
    assert found["bandwidth.plateau_gbps"].verdict == Verdict.SKIP
    assert found["bandwidth.plateau_gbps"].why == "their plan was not honoured here: their image is not here"


def test_a_slower_run_names_the_differences_that_can_explain_it_first():
    """A bandwidth 10% lower (scaled copy sweep) with another driver recorded and a foreign process under
    load: not reproduced; likely why: the driver, then the foreign process; the CPU-only facts come last."""
    idle, load = h200_health(load_pids=[999999])
    other = copy.deepcopy(idle)
    other["software"]["driver_version"] = "570.86.15"
    theirs = {"health": h200_health()[0], "health-load": h200_health()[1], "bandwidth": h200_bandwidth()}
    mine = {"health": other, "health-load": load, "bandwidth": h200_bandwidth(scale=0.9)}
    judgement = judged(theirs, mine)
    plateau = by_id(judgement)["bandwidth.plateau_gbps"]
    assert plateau.verdict == Verdict.FAIL and plateau.ratio == pytest.approx(0.9)
    assert plateau.likely_why == ("driver_version", "foreign processes (idle or under load)")
    names = [d.field for d in judgement.differences]
    assert names.index("driver_version") < names.index("foreign processes (idle or under load)")


def test_every_declared_kind_is_one_the_noise_model_answers():
    """Every figure the registry declares with a fixed kind is judged one way: a rate's bound exists, a count
    or exact figure is equality; identity figures are compared across SKUs."""
    model = noise_model("h200-sxm-141gb")
    for probe, _, figure in registry.diff_figures():
        if isinstance(figure.kind, str):
            noise = model.noise(figure.figure_id(probe).replace("{}", "x"), figure.kind)
            assert noise.share >= 0 and noise.source, figure.name
    identity = [f for _, _, f in registry.diff_figures() if not f.per_device]
    assert {f.figure for f in identity} >= {"health.devices", "health.device_count"}
    assert set(declare.KINDS) == {"steady", "burst", "launch_bound", "count", "exact"}


def test_the_h200_bundles_figures_are_all_declared():
    """Every figure of the full H200 dossier that the catalogue's run_to_run names is a figure `dossier
    reproduce` judges (the registry declares every headline figure once)."""
    view = BundleView.from_files(read_all(H200_FULL), registry.analysis_module)
    judgement = compare(view, view, registry.diff_figures(), registry.diff_fields())
    ids = {f.figure for f in judgement.figures}
    for figure in (
        "bandwidth.plateau_gbps",
        "roofline.bf16.burst_best_tflops",
        "roofline.fp8.burst_best_tflops",
        "roofline.tf32.user-4096x4096x8192.tflops",
        "stress.gpu0.burst_tflops",
        "transfer.gpu0.bidirectional_total_pinned_gbps",
        "precision.embedding.int4_per_tensor.relative_rmse",
        "health.contract.driver_supports_torch_cuda_build",
    ):
        assert figure in ids, figure
    assert judgement.result == Verdict.PASS and not judgement.named(Verdict.FAIL)
