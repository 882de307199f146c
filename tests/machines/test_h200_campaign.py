"""Issue 34's campaign on the lent H200s (tests/fixtures/h200/campaign/campaign.json: clean dossiers over three
machine starts and three GPUs, a heavy and a light co-tenant; bench/campaign.py, bench/RESULTS.md): the
catalogue's noise_campaign is what the bundles give, clean pairs reproduce under the rule, and the light
co-tenant (about 5% of the GPU) is not reproduced, with the sustained GEMM rate named."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import campaign
from harness import catalogue

MANIFEST = Path(__file__).parents[1] / "fixtures" / "h200" / "campaign" / "campaign.json"


@pytest.fixture(scope="module")
def runs():
    return campaign.read_manifest(MANIFEST, (5,))


def test_the_catalogues_campaign_is_these_bundles(runs):
    manifest, read = runs
    block = campaign.campaign_block(manifest, [r for r in read if r.load == "clean"])
    stated = catalogue.noise_campaign("h200-sxm-141gb")
    assert block["source"] == stated["source"]
    assert block["figures"] == stated["figures"]
    assert stated["source"]["machine_starts"] >= 3 and stated["source"]["gpus"] >= 2


def _judged(runs, theirs: str, mine: str):
    manifest, read = runs
    by_name = {r.name: r for r in read}
    model = campaign.model_of(manifest["sku_id"], catalogue.noise_campaign(manifest["sku_id"]))
    return campaign.judge(by_name[theirs], by_name[mine], model)


def test_clean_runs_reproduce_on_one_gpu_and_across_gpus(runs):
    same = _judged(runs, "c1-r1", "c1-r2")
    assert same.word == "reproduced" and same.rule.case == "same GPU"
    other = _judged(runs, "h200-a1", "c1-r3")
    assert other.word == "reproduced" and other.rule.case == "another GPU of the SKU"
    assert other.rule.false_alarm == 0.01 and other.rule.family >= 7


def test_the_light_co_tenant_is_not_reproduced_by_its_rates(runs):
    judged = _judged(runs, "c1-r1", "c1-cotenant")
    failed = {f.figure: f for f in judged.deciding if f.verdict.value == "fail"}
    assert judged.word == "not_reproduced"
    assert failed["stress.gpu0.steady_tflops"].ratio == pytest.approx(0.93, abs=0.01)
    assert "roofline.bf16.burst_best_tflops" in failed
