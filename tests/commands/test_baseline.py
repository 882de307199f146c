"""`dossier baseline` (harness.judge.acceptance.baseline): a signed profile from a golden unit or a
fleet, the statistics of each figure, and what `dossier accept` does with it; bad input is one line
and exit 2.

Inputs: the golden H200 bundle (tests/fixtures/h200/dossier-h200-full.tar.gz, taken on the lent H200
SXM 2026-12-01) and, for fleets, nodes made from it by bench/fleet_synth.py (every rate scaled by the
factor each test names, the documents recomputed by the probes' analysis: CONSTRUCTED, not measured).
"""

import hashlib
import json
import re
import shlex
from pathlib import Path

import pytest

from bench import fleet_synth
from harness import registry
from harness.analysis.noise import noise_model
from harness.analysis.verdict import Verdict
from harness.bundle.view import BundleView
from harness.cli import main
from harness.judge.acceptance.baseline.build import build
from harness.judge.acceptance.baseline.inputs import Input
from harness.judge.acceptance.baseline.noise import gpu_vs_node, run_to_run
from harness.judge.acceptance.criteria import evaluate
from harness.judge.acceptance.signed_profile import open_profile, sign_profile
from harness.run.assemble import unsigned_files
from harness.run.provenance import tool_info
from harness.signing.keys import load_public
from tests.accept_support import apply_file, h200_documents, h200_health, resolve, write_bundle
from tests.bundle_support import make_key

CRITERIA, KINDS = registry.acceptance_criteria(), registry.known_good_kinds()  # as `dossier accept` judges

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "fixtures" / "h200" / "dossier-h200-full.tar.gz"
GOLDEN_PUB = ROOT / "tests" / "fixtures" / "h200" / "dossier-h200-full.pub"
GOLDEN_FORMAT = ("--allow-format", "4")  # the committed golden dossier's format, older than this build's
SXM = "h200-sxm-141gb"


@pytest.fixture(scope="module")
def base():
    return fleet_synth.Base.read(GOLDEN)


def node(base, name, **factors) -> Input:
    """A node made from the golden bundle with its rates scaled (CONSTRUCTED), as a verified view."""
    record = fleet_synth.node_record(base, fleet_synth.NodePlan(name, **factors), tool_info())
    files = unsigned_files(record)
    return Input(
        f"{name}.tar.gz",
        hashlib.sha256(name.encode()).hexdigest(),
        "test",
        BundleView.from_files(files, registry.analysis_module),
    )


@pytest.fixture(scope="module")
def fleet(base):
    factors = [1.0, 1.01, 0.99, 1.005, 0.995, 1.0, 0.80]  # the last node's HBM is slow (sick)
    return [node(base, f"n{i}", hbm=f) for i, f in enumerate(factors)]


@pytest.fixture(scope="module")
def fleet_profile(fleet):
    return build(fleet, CRITERIA, KINDS)


def test_a_fleet_baseline_rejects_the_slow_node_and_states_its_statistics(fleet, fleet_profile):
    stats = fleet_profile["baseline"]["figures"]["bandwidth_plateau/hbm_bandwidth_gbps/copy"]
    assert stats["n"] == 7 and stats["n_used"] == 6
    assert [r["bundle"] for r in stats["rejected"]] == ["n6.tar.gz"] and stats["rejected"][0]["pass"] == 1
    assert stats["median"] == pytest.approx(4232.2, abs=1)  # the median of the six healthy nodes
    assert stats["mad_scale"] == 1.4826 and stats["mad_scaled"] == pytest.approx(1.4826 * stats["mad"], rel=1e-4)
    floor = stats["noise"]["share"]
    assert stats["tolerance"] == pytest.approx(max(floor, 3.5 * stats["mad_scaled"] / stats["median"]), rel=1e-5)
    assert stats["pass_share"] == pytest.approx(6 / 7, abs=1e-5)  # the slow node is under the fail line
    # the H200's plateau is measured by the noise campaign: the tolerance for another unit of the SKU, at the
    # share of the false-alarm rate each of the profile's rate figures gets (harness.analysis.noise)
    family = len(fleet_profile["baseline"]["figures"])
    expected = noise_model(SXM).noise("bandwidth.plateau_gbps", "steady", same_start=False, family=family)
    assert stats["noise"]["measured"] is True and floor == pytest.approx(expected.share)
    assert (
        "another machine start or GPU of the SKU" in stats["noise"]["source"]
        and "issue-34-h200" in stats["noise"]["source"]
    )
    criteria = fleet_profile["baseline"]["criteria"]
    assert criteria["bandwidth_plateau"]["passed"] == 6 and criteria["bandwidth_plateau"]["judged"] == 7
    assert "n6.tar.gz" in criteria["bandwidth_plateau"]["failed"][0]


def test_the_known_good_figure_is_the_median_and_the_share_its_fail_line(fleet_profile):
    stats = fleet_profile["baseline"]["figures"]["bandwidth_plateau/hbm_bandwidth_gbps/copy"]
    assert fleet_profile["known_good"]["hbm_bandwidth_gbps"]["copy"]["value"] == stats["median"]
    assert fleet_profile["thresholds"]["bandwidth_plateau_min_share"] == pytest.approx(1 - stats["tolerance"])
    assert fleet_profile["thresholds"]["warn_band"]["bandwidth_plateau"] == pytest.approx(
        stats["tolerance"] / 2, rel=1e-5
    )
    assert "bandwidth_plateau" in fleet_profile["required"] and "stress_sustained_bf16" in fleet_profile["required"]
    assert fleet_profile["thresholds"]["config"]["driver_min"] == "580.159.04"
    # what one-GPU nodes cannot measure keeps the catalogue's share (and its known-good figure)
    assert fleet_profile["thresholds"]["transfer_min_share"]["peer_read"] == 0.9
    assert fleet_profile["thresholds"]["gemm_min_share"]["int8"] == 0.85
    assert any(n.startswith("transfer_min_share: peer_read not measured") for n in fleet_profile["baseline"]["notes"])


def test_each_figure_is_exactly_what_its_criterion_judges(base):
    golden = node(base, "golden")
    document = build([golden], CRITERIA, KINDS)
    profile = apply_file(resolve(SXM), document, "test")
    results = {r.name: r for r in evaluate(golden.facts, profile, CRITERIA)}
    for stats in document["baseline"]["figures"].values():
        row = results[stats["criterion"]]
        assert row.measured.value == pytest.approx(stats["median"], rel=1e-5), stats["criterion"]
        assert row.status == Verdict.PASS  # the golden unit passes its own profile


@pytest.mark.parametrize("of_tolerance, status", [(0.0, Verdict.PASS), (0.75, Verdict.WARN), (1.25, Verdict.FAIL)])
def test_a_candidate_is_pass_warn_or_fail_against_a_golden_unit(base, of_tolerance, status):
    """One golden bundle: the tolerance is the run-to-run noise for another machine start or unit (the
    bandwidth plateau's: the noise campaign's), the fail line 1 - tolerance of its figure, the WARN band the
    half of the tolerance above it; a candidate OF_TOLERANCE tolerances below the golden figure."""
    document = build([node(base, "golden")], CRITERIA, KINDS)
    tolerance = document["baseline"]["figures"]["bandwidth_plateau/hbm_bandwidth_gbps/copy"]["tolerance"]
    profile = apply_file(resolve(SXM), document, "test")
    candidate = node(base, "candidate", hbm=1 - of_tolerance * tolerance)
    assert {r.name: r for r in evaluate(candidate.facts, profile, CRITERIA)}["bandwidth_plateau"].status == status


def test_the_same_inputs_give_the_same_signed_bytes(base, tmp_path):
    key, public = make_key(tmp_path / "k")
    inputs = [node(base, "golden")]
    first, second = build(inputs, CRITERIA, KINDS), build(inputs, CRITERIA, KINDS)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    signed = sign_profile(first, [(i.name, i.sha256) for i in inputs], key)
    assert signed == sign_profile(second, [(i.name, i.sha256) for i in inputs], key)
    opened = open_profile(signed, load_public(public))
    assert opened.inputs == (("golden.tar.gz", inputs[0].sha256),) and opened.document == first


def test_a_criterion_no_input_passes_stops_the_baseline(tmp_path, capsys):
    key, public = make_key(tmp_path / "k")
    foreign = write_bundle(tmp_path / "foreign.tar.gz", h200_documents(load_pids=[999999]), key)
    code = main(
        [
            "baseline",
            str(foreign),
            "--key",
            str(public),
            "--out",
            str(tmp_path / "p.json"),
            "--signing-key",
            str(key.path),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "no input bundle passes no_unexpected_process" in err
    assert not (tmp_path / "p.json").exists()


def test_run_to_run_tolerance_is_the_noise_model_reproduce_judges_with(monkeypatch):
    """One noise model: a measured figure's tolerance is the campaign's for another unit of the SKU at its share
    of the false-alarm rate (reproduce's rule), an unmeasured one its stated default (the catalogue's defaults,
    else its kind's bound), said so."""
    measured = run_to_run(SXM, "bandwidth.plateau_gbps", "steady", 9)
    assert measured == noise_model(SXM).noise("bandwidth.plateau_gbps", "steady", same_start=False, family=9)
    # another start or unit: the unit-to-unit spread on the campaign's four starts (about 3 degrees of freedom)
    assert measured.measured and "another machine start or GPU of the SKU" in measured.source
    assert measured.share > noise_model(SXM).noise("bandwidth.plateau_gbps", "steady", same_start=True, family=9).share
    pinned = run_to_run(SXM, "transfer.h2d_pinned_gbps", "steady", 9)
    assert pinned.measured and pinned.share >= 0.04  # the stated floor for pinned copies
    stated = run_to_run("b200-180gb", "transfer.bidirectional_total_pinned_gbps", "steady")  # not measured there
    assert not stated.measured and stated.share == 0.08 and "stated default" in stated.source
    other = run_to_run("b200-180gb", "bandwidth.plateau_gbps", "steady")  # no campaign for the B200
    assert not other.measured and other.share == 0.02 and "steady bound" in other.source
    assert gpu_vs_node(SXM).share == 0.05 and not gpu_vs_node(SXM).measured


# --- the command, and bad input ------------------------------------------------------------------


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("baseline")
    key, public = make_key(tmp / "buyer")
    out = tmp / "golden.profile.json"
    assert (
        main(
            [
                "baseline",
                str(GOLDEN),
                "--key",
                str(GOLDEN_PUB),
                "--out",
                str(out),
                "--signing-key",
                str(key.path),
                *GOLDEN_FORMAT,
            ]
        )
        == 0
    )
    return {"tmp": tmp, "key": key, "public": public, "profile": out}


def accept(signed, *extra, bundle=GOLDEN, key=GOLDEN_PUB, profile=None):
    return main(
        [
            "accept",
            str(bundle),
            "--profile-file",
            str(profile or signed["profile"]),
            "--profile-key",
            str(signed["public"]),
            "--key",
            str(key),
            *GOLDEN_FORMAT,
            *extra,
        ]
    )


def test_the_signed_profile_names_every_input_by_sha256(signed):
    opened = open_profile(signed["profile"].read_bytes(), load_public(signed["public"]))
    digest = hashlib.sha256(GOLDEN.read_bytes()).hexdigest()
    assert opened.inputs == (("dossier-h200-full.tar.gz", digest),)
    assert opened.document["baseline"]["inputs"][0]["sha256"] == digest
    assert opened.document["format_version"] == 2 and opened.document["sku_id"] == SXM


def test_the_golden_bundle_passes_its_own_profile(signed, capsys):
    assert accept(signed) == 0
    out = capsys.readouterr().out
    assert "PASS: dossier-h200-full.tar.gz against h200-sxm-141gb" in out and "0 incomplete" in out


def _flip_payload(signed, name):
    envelope = json.loads(signed["profile"].read_text())
    envelope["payload"] = (
        envelope["payload"][:40] + ("A" if envelope["payload"][40] != "A" else "B") + envelope["payload"][41:]
    )
    path = signed["tmp"] / name
    path.write_text(json.dumps(envelope))
    return path


def test_a_tampered_profile_is_refused_exit_2(signed, capsys):
    assert accept(signed, profile=_flip_payload(signed, "tampered.json")) == 2
    err = capsys.readouterr().err
    assert "does not verify with" in err and "Traceback" not in err and err.count("\nerror") == 0


def test_a_profile_signed_by_another_key_is_refused_exit_2(signed, tmp_path, capsys):
    _, other = make_key(tmp_path / "other")
    code = main(
        [
            "accept",
            str(GOLDEN),
            "--profile-file",
            str(signed["profile"]),
            "--profile-key",
            str(other),
            "--key",
            str(GOLDEN_PUB),
        ]
    )
    assert code == 2 and "does not verify with" in capsys.readouterr().err


def test_an_unsigned_baseline_profile_is_refused_exit_2(signed, capsys):
    document = open_profile(signed["profile"].read_bytes(), load_public(signed["public"])).document
    bare = signed["tmp"] / "bare.json"
    bare.write_text(json.dumps(document))
    assert accept(signed, profile=bare) == 2  # with --profile-key: only a profile that key signed is used
    assert "is not signed, and --profile-key" in capsys.readouterr().err
    code = main(["accept", str(GOLDEN), "--profile-file", str(bare), "--key", str(GOLDEN_PUB), *GOLDEN_FORMAT])
    assert code == 2 and "is a baseline profile (format_version 2) that is not signed" in capsys.readouterr().err


def test_a_profile_for_another_sku_is_refused_exit_2(signed, capsys):
    assert accept(signed, "--profile", "h200-nvl-141gb") == 2
    assert "is for 'h200-sxm-141gb'" in capsys.readouterr().err


def test_a_signed_profile_without_a_key_to_check_it_is_refused_exit_2(signed, capsys):
    assert main(["accept", str(GOLDEN), "--profile-file", str(signed["profile"])]) == 2
    assert "is signed: give the public key" in capsys.readouterr().err


def test_bundles_of_two_skus_are_refused_exit_2(tmp_path, capsys):
    key, public = make_key(tmp_path / "k")

    def as_nvl(answers):  # EDITED: the recorded H200's answers as an H200 NVL's (device id, 600 W)
        answers["nvmlDeviceGetPciInfo_v3"].pciDeviceId = 0x233B10DE
        answers["nvmlDeviceGetPowerManagementDefaultLimit"] = 600_000
        answers["nvmlDeviceGetEnforcedPowerLimit"] = 600_000

    sxm = write_bundle(tmp_path / "sxm.tar.gz", h200_documents(), key)
    idle, load = h200_health(edit_idle=as_nvl, edit_load=as_nvl)
    nvl = write_bundle(tmp_path / "nvl.tar.gz", {"health": idle, "health-load": load}, key)
    code = main(
        [
            "baseline",
            str(sxm),
            str(nvl),
            "--key",
            str(public),
            "--out",
            str(tmp_path / "p.json"),
            "--signing-key",
            str(key.path),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "more than one SKU (sxm.tar.gz: h200-sxm-141gb; nvl.tar.gz: h200-nvl-141gb)" in err
    assert not (tmp_path / "p.json").exists()


def test_the_same_bundle_twice_is_refused_exit_2(signed, capsys):
    code = main(
        [
            "baseline",
            str(GOLDEN),
            str(GOLDEN),
            "--key",
            str(GOLDEN_PUB),
            "--out",
            str(signed["tmp"] / "twice.json"),
            "--signing-key",
            str(signed["key"].path),
            *GOLDEN_FORMAT,
        ]
    )
    assert code == 2 and "given more than once" in capsys.readouterr().err


def test_a_gpu_the_catalogue_lacks_needs_sku_and_is_then_recognised_by_its_identity(tmp_path, capsys):
    key, public = make_key(tmp_path / "k")

    def unknown(answers):  # EDITED: a PCI device id no catalogue SKU has
        answers["nvmlDeviceGetPciInfo_v3"].pciDeviceId = 0x299910DE

    idle, load = h200_health(edit_idle=unknown, edit_load=unknown)
    bundle = write_bundle(tmp_path / "x1.tar.gz", {"health": idle, "health-load": load}, key)
    out = tmp_path / "x1.profile.json"
    args = ["baseline", str(bundle), "--key", str(public), "--out", str(out), "--signing-key", str(key.path)]
    assert main(args) == 2 and "are not in the catalogue: name the SKU" in capsys.readouterr().err
    assert main([*args, "--sku", "acme-x1-141gb"]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "accept",
                str(bundle),
                "--profile-file",
                str(out),
                "--profile-key",
                str(public),
                "--key",
                str(public),
                "--json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    sku = next(c for c in result["criteria"] if c["name"] == "sku_matches_profile")
    assert sku["status"] == "pass" and "by the profile's identity: PCI device id 0x2999" in sku["why"]
    assert result["profile"]["name"] == "NVIDIA H200"


# --- the worked example in docs/accept.md, run as written -------------------------------------------


def example_commands() -> list[list[str]]:
    text = (ROOT / "docs" / "accept.md").read_text()
    block = text.split("<!-- worked example: tests/commands/test_baseline.py runs these commands -->", 1)[1]
    block = block.split("```", 2)[1]
    lines = block.replace("\\\n", " ").splitlines()
    return [shlex.split(line)[1:] for line in lines if line.startswith("dossier ")]


def test_the_worked_example_runs_as_documented(tmp_path, monkeypatch, capsys):
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOSSIER_KEY", str(tmp_path / "unused" / "dossier.key"))
    commands = example_commands()
    assert [c[0] for c in commands] == ["keygen", "baseline", "accept", "accept", "accept"]
    documented = [
        line
        for line in (ROOT / "docs" / "accept.md").read_text().splitlines()
        if line.startswith(("note: ", "30 criteria required", "transfer_h2d_pinned  "))
    ]
    codes = []
    for argv in commands:
        codes.append(main(argv))
        out, err = capsys.readouterr()
        if argv[0] == "baseline":
            assert documented and all(line in err for line in documented)  # the doc shows what it prints
        if argv[0] == "accept":
            codes[-1] = (codes[-1], re.findall(r"^(?:PASS|WARN|FAIL|INCOMPLETE): .*$", out, re.M)[-1])
    assert codes[:2] == [0, 0]
    # the golden run passes its own profile; the earlier run of an H200 passes the catalogue's profile but
    # is INCOMPLETE against the golden unit's: it has no stress or transfer step, which the profile requires
    assert codes[2][0] == 0 and codes[2][1].startswith("PASS: dossier-h200-full.tar.gz")
    assert codes[3][0] == 5 and codes[3][1].startswith("INCOMPLETE: dossier-h200.tar.gz")
    # as docs/accept.md says
    assert codes[2][1].endswith(
        "30 passed, 0 warned, 0 failed, 0 incomplete (required, not measured), 10 skipped (not required, not measured)"
    )
    assert codes[3][1].endswith(
        "19 passed, 0 warned, 0 failed, 11 incomplete (required, not measured), 10 skipped (not required, not measured)"
    )
    assert codes[4][0] == 0 and codes[4][1].startswith("PASS: dossier-h200.tar.gz")
