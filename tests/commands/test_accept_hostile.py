"""Issue 37, cases 2 (its acceptance half), 4 and 7: a profile given with a key is used only when that key
signed it in the current format; a profile's identity never makes a catalogued SKU of another GPU; an
acceptance attestation cannot vouch for itself (`dossier verify-acceptance` judges the bundle again
against the profile it carries and compares every part of the verdict); a malformed one is one line.

Bundles: the H200 documents of tests/accept_support.py (real captures), and the same with the bandwidth
sweep scaled to half (CONSTRUCTED: a machine that fails the catalogue's and a golden unit's bandwidth)."""

from __future__ import annotations

import base64
import json

import pytest

from harness.cli import main
from harness.judge.acceptance.signed_profile import open_profile, sign_profile
from harness.signing.keys import load_private, load_public
from harness.signing.statement import sign_statement
from tests.accept_support import h200_bandwidth, h200_health, write_bundle
from tests.bundle_support import make_key

SXM, NVL = "h200-sxm-141gb", "h200-nvl-141gb"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("accept-hostile")
    key, public = make_key(tmp / "vendor")
    buyer, buyer_public = make_key(tmp / "buyer")
    idle, load = h200_health()
    good = write_bundle(tmp / "good.tar.gz", {"health": idle, "bandwidth": h200_bandwidth(), "health-load": load}, key)
    slow = write_bundle(
        tmp / "slow.tar.gz", {"health": idle, "bandwidth": h200_bandwidth(scale=0.5), "health-load": load}, key
    )
    profile = tmp / "golden.profile.json"
    assert (
        main(["baseline", str(good), "--key", str(public), "--out", str(profile), "--signing-key", str(buyer.path)])
        == 0
    )
    return {
        "tmp": tmp,
        "public": public,
        "buyer": buyer,
        "buyer_public": buyer_public,
        "good": good,
        "slow": slow,
        "profile": profile,
    }


def accept(env, bundle, profile, *extra) -> int:
    return main(
        [
            "accept",
            str(bundle),
            "--profile-file",
            str(profile),
            "--profile-key",
            str(env["buyer_public"]),
            "--key",
            str(env["public"]),
            *extra,
        ]
    )


def test_an_unsigned_loosened_profile_is_refused_where_a_key_was_named_for_it(env, capsys):
    """Case 4: the strict signed profile fails the slow bundle; the same profile unsigned, relabelled format 1
    and loosened is refused (exit 2) before anything is judged, not used silently."""
    assert accept(env, env["slow"], env["profile"]) == 1
    capsys.readouterr()
    document = open_profile(env["profile"].read_bytes(), load_public(env["buyer_public"])).document
    loose = {k: v for k, v in document.items() if k in ("format", "sku_id", "name", "form_factor", "required")}
    loose.update(format_version=1, thresholds={"bandwidth_plateau_min_share": 0.01})
    path = env["tmp"] / "loose.json"
    path.write_text(json.dumps(loose))
    assert accept(env, env["slow"], path) == 2
    err = capsys.readouterr().err
    assert "is not signed, and --profile-key" in err and "Traceback" not in err


def test_a_signed_profile_in_an_older_format_is_refused_with_a_key(env, capsys):
    document = open_profile(env["profile"].read_bytes(), load_public(env["buyer_public"])).document
    old = {
        k: v for k, v in document.items() if k in ("format", "sku_id", "name", "form_factor", "required", "thresholds")
    }
    path = env["tmp"] / "old-signed.json"
    path.write_bytes(sign_profile({**old, "format_version": 1}, [("good.tar.gz", "0" * 64)], env["buyer"]))
    assert accept(env, env["good"], path) == 2
    assert "not the current signed format 2" in capsys.readouterr().err


def test_a_profiles_identity_never_makes_a_catalogued_sku_of_another_gpu(env, capsys):
    """Case 4: a signed profile for the H200 NVL carrying the SXM's identity (PCI id, memory) does not let an
    H200 SXM pass sku_matches_profile: the catalogue knows both SKUs."""
    document = open_profile(env["profile"].read_bytes(), load_public(env["buyer_public"])).document
    assert document["identity"]["pci_device_ids"]  # the baseline recorded the SXM's
    nvl = {**document, "sku_id": NVL}
    path = env["tmp"] / "nvl.profile.json"
    path.write_bytes(sign_profile(nvl, [("good.tar.gz", "0" * 64)], env["buyer"]))
    code = accept(env, env["good"], path, "--profile", NVL, "--json")
    result = json.loads(capsys.readouterr().out)
    sku = next(c for c in result["criteria"] if c["name"] == "sku_matches_profile")
    assert code == 1 and sku["status"] == "fail" and "by the profile's identity" not in sku["why"]


# --- the attestation ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def attestation(env):
    path = env["tmp"] / "slow.intoto.json"
    code = main(
        [
            "accept",
            str(env["slow"]),
            "--profile",
            SXM,
            "--key",
            str(env["public"]),
            "--attestation",
            str(path),
            "--signing-key",
            str(env["buyer"].path),
        ]
    )
    assert code == 1  # half the catalogue's bandwidth: FAILED
    return path


def statement_of(path) -> dict:
    return json.loads(base64.b64decode(json.loads(path.read_bytes())["payload"]))


def verify_acceptance(env, capsys, path) -> tuple[int, str, str]:
    code = main(["verify-acceptance", str(path), str(env["slow"]), "--key", str(env["buyer_public"])])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def forged(env, attestation, edit):
    stmt = statement_of(attestation)
    edit(stmt["predicate"])
    path = env["tmp"] / "forged.intoto.json"
    path.write_bytes(sign_statement(stmt, load_private(env["buyer"].path)))
    return path


def test_the_honest_attestation_verifies_and_prints_the_verdict_judged_here(env, attestation, capsys):
    code, out, err = verify_acceptance(env, capsys, attestation)
    assert code == 0, err
    assert "result FAILED (verdict fail)" in out and "bandwidth_plateau" in out


def _passed(predicate):
    predicate.update(result="PASSED", passedTests=predicate["passedTests"] + predicate["failedTests"], failedTests=[])
    for d in predicate["configuration"]:
        if d["name"] == "rig-dossier/verdict.json":
            content = json.loads(base64.b64decode(d["content"]))
            content["verdict"] = "pass"
            content["criteria"] = {k: ("pass" if v == "fail" else v) for k, v in content["criteria"].items()}
            raw = json.dumps(content, sort_keys=True, separators=(",", ":")).encode()
            d.update(content=base64.b64encode(raw).decode(), annotations={"verdict": "pass"})
            d["digest"]["sha256"] = __import__("hashlib").sha256(raw).hexdigest()


def _looser(predicate):
    for d in predicate["configuration"]:
        if d["name"].startswith("acceptance-profile/"):
            profile = json.loads(base64.b64decode(d["content"]))
            profile["thresholds"]["bandwidth_plateau_min_share"] = 0.01
            raw = json.dumps(profile, sort_keys=True, separators=(",", ":")).encode()
            d.update(content=base64.b64encode(raw).decode())
            d["digest"]["sha256"] = __import__("hashlib").sha256(raw).hexdigest()


@pytest.mark.parametrize(
    "edit",
    [
        _passed,
        _looser,
        lambda p: p.update(passedTests=[1, 2]),  # case 7: an internal error before
        lambda p: p.update(configuration="none"),
        lambda p: p["configuration"].append({"name": "harness/data/gpus.json", "digest": {"sha256": "0"}}),
        lambda p: [d.update(content="!!") for d in p["configuration"] if d["name"].startswith("acceptance-profile/")],
        lambda p: [
            d.update(digest={"sha256": "e" * 64}) for d in p["configuration"] if d["name"] == "bundle-signer-public-key"
        ],
    ],
    ids=[
        "says PASSED",
        "a looser profile than it judged with",
        "tests not names",
        "no configuration",
        "a resource twice",
        "a profile not base64",
        "another bundle signer",
    ],
)
def test_an_attestation_that_is_not_the_verdict_the_bundle_gives_is_refused(env, attestation, capsys, edit):
    code, out, err = verify_acceptance(env, capsys, forged(env, attestation, edit))
    assert code == 1 and "NOT VERIFIED" in err and "internal error" not in err and "Traceback" not in err, err
    assert "PASSED" not in out
