"""`dossier fleet collect|merge --baseline-out`: a signed acceptance profile made from a fleet's healthy nodes by
`dossier baseline`'s own code (harness/fleet/baseline.py, harness/fleet/healthy.py); bad input is one line and
exit 2, before the nodes are checked where it can be, and the fleet bundle is written in any case.

The fleet: 12 synthetic nodes (tests/fleet_support.baseline_fleet, bench/fleet_synth.py: bundles made from the lent
H200's dossier, each rate varied by ~1 %, assembled and signed by the harness: CONSTRUCTED, not measured), one of
each sickness, and one healthy-looking node whose GEMMs are 13 % faster than the others': it passes acceptance but
stands apart, so it is left out too. No Slurm.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.errors import UsageError
from harness.fleet import baseline as fleet_baseline
from harness.fleet import healthy
from harness.fleet.array import ArrayCollect, render_merge
from harness.fleet.collect import FleetRun
from harness.fleet.sealing import check
from harness.judge.acceptance.signed_profile import open_profile
from harness.signing.keys import load_public
from tests.bundle_support import make_key
from tests.cli_support import dossier
from tests.fleet_support import FAST, JOB, baseline_fleet

NODES = 12
SKU = "h200-sxm-141gb"


def pub(out: Path) -> str:
    return str(out / "keys" / "dossier.pub")


def bundle_of(out: Path, node: str) -> Path:
    return out / "fleet-synthetic" / "nodes" / node / f"{node}.tar.gz"


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def opened(data: bytes, out: Path):
    return open_profile(data, load_public(Path(pub(out))))


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    out, plans = baseline_fleet(tmp_path_factory.mktemp("baseline-fleet"), NODES)
    profile = out / "profiles" / "h200.profile.json"
    code, _, err = dossier(
        "fleet",
        "collect",
        JOB,
        "--output-dir",
        str(out),
        "--key",
        pub(out),
        "--workers",
        "2",
        "--baseline-out",
        str(profile),
    )
    bundle = out / f"fleet-{JOB}.tar.gz"
    data, files = bundle.read_bytes(), members(bundle)
    bundle.unlink()  # the tests that collect again write their own
    healthy_nodes = [p.name for p in plans if not p.sickness and p.gemm != FAST]
    return SimpleNamespace(
        out=out,
        plans=plans,
        code=code,
        err=err,
        bundle=data,
        files=files,
        profile=profile.read_bytes(),
        healthy=healthy_nodes,
        fast=next(p.name for p in plans if p.gemm == FAST),
        sick={p.sickness: p.name for p in plans if p.sickness},
    )


@pytest.fixture
def clean(fleet):
    """No shards, fleet bundle or profiles of another test before or after one."""
    yield fleet.out
    shutil.rmtree(fleet.out / f"fleet-{JOB}.shards", ignore_errors=True)
    (fleet.out / f"fleet-{JOB}.tar.gz").unlink(missing_ok=True)
    shutil.rmtree(fleet.out / "again", ignore_errors=True)


def test_the_profile_is_made_from_the_healthy_nodes_only(fleet):
    assert fleet.code == 1  # the sick nodes: the fleet's own verdict is unchanged
    assert (
        f"fleet baseline: wrote {fleet.out / 'profiles' / 'h200.profile.json'} ({SKU}, 6 node bundle(s))" in fleet.err
    )
    profile = opened(fleet.profile, fleet.out)
    assert [name for name, _ in profile.inputs] == [f"{n}.tar.gz" for n in fleet.healthy]
    assert [digest for _, digest in profile.inputs] == [
        hashlib.sha256(bundle_of(fleet.out, n).read_bytes()).hexdigest() for n in fleet.healthy
    ]
    statement = profile.document["baseline"]["fleet"]
    assert statement["nodes_used"] == 6 and statement["nodes_in_job"] == NODES and statement["job_id"] == JOB
    assert statement["left_out"]["by_reason"] == {
        "acceptance fail": 3,
        "flagged: outlier": 1,
        "not verified (failed)": 1,
        "not verified (rejected)": 1,
    }
    assert statement["nodes_used"] + statement["left_out"]["count"] + sum(statement["other_skus"].values()) == NODES
    why = {item["node"]: item["why"] for item in statement["left_out"]["nodes"]}
    assert why[fleet.fast].startswith("flagged: outlier: gemm_best_tflops:") and "above" in why[fleet.fast]
    assert why[fleet.sick["slow-hbm"]].startswith("acceptance fail: bandwidth_plateau")
    assert "signature" in why[fleet.sick["bad-signature"]]
    stats = profile.document["baseline"]["figures"]["bandwidth_plateau/hbm_bandwidth_gbps/copy"]
    assert stats["n"] == 6 and stats["rejected"] == []  # neither the slow nor the fast node is among the values


def test_the_fleet_bundle_says_which_profile_was_written_from_which_nodes(fleet):
    files = fleet.files
    record = json.loads(files["fleet.json"])["baseline"]
    made = record["profiles"]
    assert [m["sku"] for m in made] == [SKU] and made[0]["nodes"] == fleet.healthy
    assert made[0]["member"] == f"baseline/{SKU}.profile.json" and made[0]["file"] == "h200.profile.json"
    assert files[made[0]["member"]] == fleet.profile  # nothing is lost should the file go astray
    assert made[0]["sha256"] == hashlib.sha256(fleet.profile).hexdigest() and record["not_made"] == []
    assert len(record["left_out"]) == NODES - 6 and record["rule"] == healthy.RULE
    statement = check(files, Path(pub(fleet.out)))  # the profile is a signed member of the fleet bundle
    assert statement["predicate"]["baseline_profiles"] == [
        {k: made[0][k] for k in ("sku", "member", "sha256", "nodes")}
    ]
    report = files["fleet.md"].decode()
    section = report.split("## Baseline profile from the healthy nodes", 1)[1].split("## Compared metrics", 1)[0]
    assert f"- **{SKU}**: `baseline/{SKU}.profile.json` (written as `h200.profile.json`" in section
    assert "from 6 node(s): " + ", ".join(fleet.healthy) + "." in section
    assert f"| {fleet.fast} | {SKU} | flagged: outlier |" in section


def test_the_profile_is_what_dossier_baseline_makes_of_the_same_bundles(fleet, tmp_path):
    out = tmp_path / "by-hand.profile.json"
    code, _, err = dossier(
        "baseline",
        *(str(bundle_of(fleet.out, n)) for n in fleet.healthy),
        "--key",
        pub(fleet.out),
        "--out",
        str(out),
        "--signing-key",
        str(fleet.out / "keys" / "dossier.key"),
    )
    assert code == 0, err
    by_hand, from_fleet = opened(out.read_bytes(), fleet.out), opened(fleet.profile, fleet.out)
    assert from_fleet.inputs == by_hand.inputs and from_fleet.signer_keyid == by_hand.signer_keyid
    mine, theirs = json.loads(json.dumps(from_fleet.document)), json.loads(json.dumps(by_hand.document))
    del mine["baseline"]["fleet"]
    assert mine.pop("why").startswith(f"dossier fleet collect {JOB}: the 6 healthy node(s) of {SKU}")
    theirs.pop("why")
    assert mine == theirs  # the same figures, thresholds, known-good values, required criteria and inputs


def test_dossier_accept_takes_the_profile(fleet, tmp_path):
    profile = tmp_path / "p.json"
    profile.write_bytes(fleet.profile)

    def accept(node):
        return dossier(
            "accept",
            str(bundle_of(fleet.out, node)),
            "--profile-file",
            str(profile),
            "--profile-key",
            pub(fleet.out),
            "--key",
            pub(fleet.out),
        )

    code, printed, _ = accept(fleet.healthy[0])
    assert code == 0 and f"PASS: {fleet.healthy[0]}.tar.gz against {SKU}" in printed
    code, printed, _ = accept(fleet.sick["slow-hbm"])
    assert code == 1 and "FAIL" in printed and "bandwidth_plateau" in printed
    code, printed, _ = accept(fleet.fast)  # faster than the baseline is no failure
    assert code == 0


def test_a_sharded_collect_merges_to_the_same_profile_and_fleet_bundle(fleet, clean):
    for index in range(2):
        code, _, err = dossier(
            "fleet",
            "collect",
            JOB,
            "--output-dir",
            str(clean),
            "--key",
            pub(clean),
            "--shard",
            f"{index}/2",
            "--workers",
            "1",
        )
        assert code == 0, err
    again = clean / "again" / "h200.profile.json"  # the same file name: fleet.json records it
    code, _, err = dossier(
        "fleet", "merge", JOB, "--output-dir", str(clean), "--key", pub(clean), "--baseline-out", str(again)
    )
    assert code == 1 and again.read_bytes() == fleet.profile
    assert (clean / f"fleet-{JOB}.tar.gz").read_bytes() == fleet.bundle


@pytest.mark.parametrize(
    "options, says",
    [
        (["--baseline-sku", SKU], "--baseline-sku goes with --baseline-out"),
        (
            ["--baseline-out", "{tmp}/p.json", "--baseline-sku", "acme-x1-141gb"],
            "--baseline-sku acme-x1-141gb: not a catalogue SKU",
        ),
        (["--baseline-out", "{tmp}"], "is a folder; give a file name"),
        (["--baseline-out", "{tmp}/{sku}/p.json"], "{sku} goes in the file name"),
        (["--baseline-out", "{tmp}/f.prom", "--prometheus", "{tmp}/f.prom"], "the same file as --prometheus"),
        (
            ["--baseline-out", "{tmp}/p.json", "--shard", "0/2"],
            "--baseline-out goes with the command that writes the fleet",
        ),
    ],
)
def test_bad_baseline_options_are_refused_before_any_bundle_is_read(fleet, clean, tmp_path, options, says):
    argv = [o.replace("{tmp}", str(tmp_path)) for o in options]
    code, _, err = dossier("fleet", "collect", JOB, "--output-dir", str(clean), "--key", pub(clean), *argv)
    assert code == 2 and says in err and "Traceback" not in err, err
    assert "nodes checked" not in err and not (clean / f"fleet-{JOB}.tar.gz").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes where the mode bits say no")
def test_a_baseline_out_that_cannot_be_written_is_refused_first(fleet, clean, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    code, _, err = dossier(
        "fleet",
        "collect",
        JOB,
        "--output-dir",
        str(clean),
        "--key",
        pub(clean),
        "--baseline-out",
        str(locked / "p.json"),
    )
    assert code == 2 and "not writable" in err and "nodes checked" not in err


def test_no_healthy_node_of_the_sku_asked_is_exit_2_and_the_fleet_bundle_is_kept(fleet, clean, tmp_path):
    profile = tmp_path / "h100.profile.json"
    code, printed, err = dossier(
        "fleet",
        "collect",
        JOB,
        "--output-dir",
        str(clean),
        "--key",
        pub(clean),
        "--workers",
        "2",
        "--baseline-out",
        str(profile),
        "--baseline-sku",
        "h100-sxm5-80gb",
    )
    assert code == 2 and err.count("\nerror: ") == 1 and "Traceback" not in err
    assert "no verified node of the fleet is of it (the fleet's SKUs: h200-sxm-141gb)" in err
    assert printed.strip() == str(clean / f"fleet-{JOB}.tar.gz") and not profile.exists()
    record = json.loads(members(clean / f"fleet-{JOB}.tar.gz")["fleet.json"])["baseline"]
    assert record["profiles"] == [] and record["not_made"][0]["sku"] == "h100-sxm5-80gb"
    assert "no verified node of the fleet is of it" in record["not_made"][0]["why"]


# --- which nodes are healthy, and the SKUs a profile is made of: fleet.json alone -----------------------


def node(name, sku=SKU, status="ok", verdict="pass", sha=None):
    return {
        "name": name,
        "status": status,
        "sku": sku if status == "ok" else None,
        "why": "no bundle",
        "sha256": sha or hashlib.sha256(name.encode()).hexdigest(),
        "verify": {"keyid": "k"},
        "acceptance": {
            "verdict": verdict,
            "failed": [{"name": "bandwidth_plateau", "why": "low"}] if verdict == "fail" else [],
        },
    }


def document(nodes, flags=()):
    return {
        "job": {"id": JOB},
        "nodes": nodes,
        "flags": [{"node": n, "metric": m, "kind": k, "why": "stands apart"} for n, m, k in flags],
    }


def test_silent_data_corruption_a_copied_bundle_a_skip_and_two_skus_in_one_node_keep_a_node_out():
    nodes = [
        node("a"),
        node("b", verdict="warn"),
        node("c"),
        node("d", sha="f" * 64),
        node("e", sha="f" * 64),
        node("f", verdict="skip"),
        node("g", sku=f"{SKU}+h100-sxm5-80gb"),
        node("h", status="failed"),
        node("i", verdict="incomplete"),
    ]
    selection = healthy.select(document(nodes, [("c", "stress_reference_digest", "digest")]))
    assert [n["name"] for n in selection.healthy[SKU]] == ["a", "b"]  # WARN passed
    reasons = {item.node: item.reason for item in selection.left_out}
    assert reasons == {
        "c": "flagged: possible silent data corruption",
        "d": "same bundle as another node",
        "e": "same bundle as another node",
        "f": "acceptance skip",
        "g": "several SKUs",
        "h": "not verified (failed)",
        "i": "acceptance incomplete",
    }
    assert "byte for byte the bundle of e" in next(i.why for i in selection.left_out if i.node == "d")
    left, others = healthy.of_sku(selection, SKU)
    assert {i.node for i in left} == set(reasons) and others == {}
    left, others = healthy.of_sku(selection, "h100-sxm5-80gb")
    assert {i.node for i in left} == {"g", "h"} and others == {SKU: 7}  # 2 healthy + 5 left out of the other SKU


def test_two_skus_need_sku_in_the_file_name_or_baseline_sku(tmp_path):
    key, _ = make_key(tmp_path / "k")
    fleet = document([node("a"), node("b", sku="h100-sxm5-80gb"), node("c", sku="h100-sxm5-80gb", verdict="fail")])
    run = FleetRun(tmp_path, JOB, {})
    outcome = fleet_baseline.profiles(fleet, run, fleet_baseline.Request(tmp_path / "p.json", None), key, 1)
    assert isinstance(outcome.error, UsageError) and outcome.made == []
    assert "healthy nodes are of 2 SKUs (h100-sxm5-80gb, h200-sxm-141gb)" in str(outcome.error)
    assert "{sku}" in outcome.error.hint and outcome.record["not_made"][0]["sku"] is None
    asked = fleet_baseline.Request(tmp_path / "{sku}.json", "h100-sxm5-80gb")
    assert asked.path("h100-sxm5-80gb") == tmp_path / "h100-sxm5-80gb.json"
    sick = document([node("a"), node("c", sku="h100-sxm5-80gb", verdict="fail")])
    outcome = fleet_baseline.profiles(sick, run, asked, key, 1)
    assert "none of the fleet's 1 node(s) of it is healthy (1 acceptance fail)" in str(outcome.error)


def test_the_array_s_merge_job_makes_the_profile(tmp_path):
    spec = ArrayCollect(
        run=FleetRun(tmp_path, JOB, {}),
        output_dir=tmp_path,
        public_key=tmp_path / "k.pub",
        shards=4,
        workers=8,
        baseline_out=tmp_path / "{sku}.profile.json",
        baseline_sku=SKU,
    )
    script = render_merge(spec)
    assert f"--baseline-out '{tmp_path}/{{sku}}.profile.json' --baseline-sku {SKU}" in script
    assert "#SBATCH --cpus-per-task=8" in script  # it reads every healthy node's bundle: a shard's CPUs
    assert "--cpus-per-task" not in render_merge(
        ArrayCollect(run=spec.run, output_dir=tmp_path, public_key=tmp_path / "k.pub", shards=4, workers=8)
    )
