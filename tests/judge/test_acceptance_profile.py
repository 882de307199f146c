"""Acceptance profiles: the catalogue's per-SKU blocks, and a user's file merged over them."""

import json

import pytest

from harness import catalogue
from harness.errors import UsageError
from harness.judge.acceptance.profile import NoProfile, example
from harness.judge.acceptance.rates import GEMM_KNOWN_GOOD, HBM_KNOWN_GOOD
from tests.accept_support import apply_file, resolve

SXM = "h200-sxm-141gb"


def test_every_catalogue_sku_has_a_profile_requiring_the_core_criteria():
    for sku in catalogue.skus():
        profile = resolve(sku["id"])
        assert {"sku_matches_profile", "bandwidth_plateau", "ecc_uncorrectable_zero"} <= set(profile.required)
        assert profile.threshold("repeat_spread_max") == 0.05


def test_h200_sxm_profile_carries_the_baseline_known_goods_and_its_host_link():
    profile = resolve(SXM)
    assert (
        profile.known(HBM_KNOWN_GOOD)["copy"].value == 4234
        and "h200-baseline.md" in profile.known(HBM_KNOWN_GOOD)["copy"].source
    )
    assert profile.known(GEMM_KNOWN_GOOD)["bf16"].value == 765.1
    assert (profile.threshold("pcie_min_generation"), profile.threshold("pcie_min_width")) == (5, 16)
    assert resolve("h200-nvl-141gb").known(HBM_KNOWN_GOOD) == {}  # none recorded for the NVL card: not borrowed


def test_a_file_replaces_only_what_it_names(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(
        json.dumps(
            {
                "format": "rig-dossier/acceptance-profile",
                "format_version": 1,
                "sku_id": SXM,
                "thresholds": {"gemm_min_share": {"bf16": 0.9}},
                "known_good": {"hbm_bandwidth_gbps": {"triad": {"value": 4400, "source": "our run"}}},
                "required": ["sku_matches_profile"],
            }
        )
    )
    profile = resolve(SXM, path)
    shares = profile.threshold("gemm_min_share")
    assert shares["bf16"] == 0.9 and shares["fp16"] == 0.85  # merged dtype by dtype
    assert profile.known(HBM_KNOWN_GOOD)["triad"].value == 4400 and profile.known(HBM_KNOWN_GOOD)["copy"].value == 4234
    assert profile.required == ("sku_matches_profile",)
    assert profile.sources[0].startswith("catalogue") and "p.json" in profile.sources[1]


def test_a_file_for_another_sku_or_an_incomplete_new_sku_is_refused(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"format": "rig-dossier/acceptance-profile", "format_version": 1, "sku_id": SXM}))
    with pytest.raises(UsageError, match="is for 'h200-sxm-141gb'"):
        resolve("h100-sxm5-80gb", path)
    with pytest.raises(UsageError, match="must state name and form_factor"):
        apply_file(None, {"sku_id": "new-gpu"}, "test file")


def test_unknown_sku_without_a_file_has_no_profile():
    with pytest.raises(NoProfile) as raised:
        resolve("new-gpu")
    assert "--profile-file new-gpu.json" in raised.value.hint
    assert json.dumps(example("new-gpu"), indent=2, sort_keys=True) in raised.value.hint
