"""`dossier accept` end to end on signed bundles: refusal, profiles, JUnit, the signed predicate, summaries."""

import base64
import hashlib
import json
import textwrap
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.cli import main
from harness.judge.acceptance.predicate import PREDICATE_TYPE, VERDICT_NAME, verify_envelope
from harness.judge.acceptance.profile import example
from harness.schemas import violations
from harness.signing import dsse
from harness.signing.keys import load_public
from tests.accept_support import cpu_dossier, h200_documents, write_bundle
from tests.bundle_support import make_key, rewrite

SXM = "h200-sxm-141gb"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("accept")
    key, public = make_key(tmp / "signer")
    acceptor, acceptor_public = make_key(tmp / "acceptor")
    return {
        "tmp": tmp,
        "key": key,
        "public": public,
        "acceptor": acceptor,
        "acceptor_public": acceptor_public,
        "h200": write_bundle(tmp / "h200.tar.gz", h200_documents(), key),
    }


def accept(env, *extra, bundle=None):
    return main(["accept", str(bundle or env["h200"]), "--profile", SXM, "--key", str(env["public"]), *extra])


def test_recorded_h200_passes_and_what_it_lacks_is_skipped_exit_0(env, capsys):
    assert accept(env) == 0
    out = capsys.readouterr().out
    # nothing the catalogue requires is missing; skipped, each with why: what a 1-GPU bundle cannot
    # measure, the stress and transfer criteria (it predates both steps), what the profile states nothing of
    assert (
        "PASS: h200.tar.gz against h200-sxm-141gb: 12 passed, 0 warned, 0 failed, 0 incomplete "
        "(required, not measured), 28 skipped"
    ) in out
    assert "PASS bandwidth_plateau: 4254 GB/s" in out
    assert "SKIP allreduce_busbw" in out and "PASS config_persistence" in out


def test_json_output_lists_every_criterion(env, capsys):
    assert accept(env, "--json") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["result"] == "pass" and result["failed"] == [] and "allreduce_busbw" in result["skipped"]
    assert result["incomplete"] == []
    assert result["bundle"]["sha256"] == hashlib.sha256(env["h200"].read_bytes()).hexdigest()
    assert {c["name"] for c in result["criteria"]} >= {"sku_matches_profile", "allreduce_busbw", "gemm_bf16"}


def test_a_tampered_bundle_is_refused_naming_the_member(env, capsys):
    def flip(files):
        data = bytearray(files["raw/bandwidth.json"])
        data[len(data) // 2] ^= 0x01
        files["raw/bandwidth.json"] = bytes(data)

    tampered = rewrite(env["h200"], env["tmp"] / "tampered.tar.gz", flip)
    assert accept(env, bundle=tampered) == 1
    err = capsys.readouterr().err
    assert "refused" in err and "raw/bandwidth.json" in err and "does not verify" in err


def test_a_bundle_signed_by_another_key_is_refused(env, capsys):
    code = main(["accept", str(env["h200"]), "--profile", SXM, "--key", str(env["acceptor_public"])])
    assert code == 1 and "no signature verifies" in capsys.readouterr().err


def test_unknown_sku_says_there_is_no_profile_and_how_to_write_one(env, capsys):
    code = main(["accept", str(env["h200"]), "--profile", "mi300x-oam-192gb", "--key", str(env["public"])])
    err = capsys.readouterr().err
    assert code == 2
    assert "no acceptance profile for SKU 'mi300x-oam-192gb'" in err
    assert "schemas/acceptance-profile.schema.json" in err
    assert "dossier accept BUNDLE --profile mi300x-oam-192gb --profile-file mi300x-oam-192gb.json" in err
    assert '"format": "rig-dossier/acceptance-profile"' in err


def test_the_example_profile_is_valid_and_usable_for_a_new_sku(env, capsys):
    assert violations("acceptance-profile", example("new-gpu")) == []
    path = env["tmp"] / "new-gpu.json"
    path.write_text(json.dumps(example("new-gpu")))
    code = main(
        [
            "accept",
            str(env["h200"]),
            "--profile",
            "new-gpu",
            "--profile-file",
            str(path),
            "--key",
            str(env["public"]),
            "--json",
        ]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 1 and result["failed"] == ["sku_matches_profile"]  # an H200 is not "new-gpu"
    assert "bandwidth_plateau" in result["passed"]  # judged with the file's own known-good figure


def test_a_profile_file_override_changes_the_verdict(env, capsys):
    path = env["tmp"] / "strict.json"
    path.write_text(
        json.dumps(
            {
                "format": "rig-dossier/acceptance-profile",
                "format_version": 1,
                "sku_id": SXM,
                "thresholds": {"bandwidth_plateau_min_share": 1.02},
            }
        )
    )
    assert accept(env, "--profile-file", str(path)) == 1
    out = capsys.readouterr().out
    assert "FAIL bandwidth_plateau" in out and "4319 GB/s" in out  # 1.02 x 4234


def test_a_profile_file_that_breaks_its_schema_is_refused(env, capsys):
    path = env["tmp"] / "bad.json"
    path.write_text(
        json.dumps(
            {
                "format": "rig-dossier/acceptance-profile",
                "format_version": 1,
                "sku_id": SXM,
                "thresholds": {"bandwidth_plateau_min_share": "85%"},
            }
        )
    )
    assert accept(env, "--profile-file", str(path)) == 2
    assert "does not match schemas/acceptance-profile.schema.json" in capsys.readouterr().err


def test_junit_xml_parses_and_its_counts_match(env, capsys):
    junit = env["tmp"] / "accept.xml"
    assert accept(env, "--junit", str(junit), "--json") == 0
    result = json.loads(capsys.readouterr().out)
    suite = ET.parse(junit).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [c["name"] for c in result["criteria"]]
    assert int(suite.get("tests")) == len(cases) == len(result["criteria"])
    assert int(suite.get("failures")) == len(result["failed"]) == sum(c.find("failure") is not None for c in cases)
    assert int(suite.get("skipped")) == len(result["skipped"]) == sum(c.find("skipped") is not None for c in cases)
    assert int(suite.get("errors")) == len(result["incomplete"]) == sum(c.find("error") is not None for c in cases)


def test_junit_failures_carry_the_reason(env, capsys):
    junit = env["tmp"] / "nvl.xml"
    assert (
        main(
            [
                "accept",
                str(env["h200"]),
                "--profile",
                "h200-nvl-141gb",
                "--key",
                str(env["public"]),
                "--junit",
                str(junit),
            ]
        )
        == 1
    )
    failure = next(
        c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name") == "sku_matches_profile"
    ).find("failure")
    assert "h200-sxm-141gb is not h200-nvl-141gb" in failure.get("message")


def test_the_signed_predicate_verifies_with_the_key_and_names_the_bundle(env, capsys, monkeypatch):
    attestation = env["tmp"] / "acceptance.intoto.json"
    assert accept(env, "--attestation", str(attestation), "--signing-key", str(env["acceptor"].path)) == 0
    data = attestation.read_bytes()
    digest = hashlib.sha256(env["h200"].read_bytes()).hexdigest()
    stmt = verify_envelope(data, load_public(env["acceptor_public"]), digest)
    assert stmt["predicateType"] == PREDICATE_TYPE
    assert stmt["subject"] == [{"name": "h200.tar.gz", "digest": {"sha256": digest}}]
    predicate = stmt["predicate"]
    assert predicate["result"] == "PASSED" and predicate["failedTests"] == [] == predicate["warnedTests"]
    assert "bandwidth_plateau" in predicate["passedTests"] and "allreduce_busbw" not in predicate["passedTests"]
    (verdict,) = [d for d in predicate["configuration"] if d["name"] == VERDICT_NAME]
    judged = json.loads(base64.b64decode(verdict["content"]))
    assert (
        judged["verdict"] == "pass" == verdict["annotations"]["verdict"]
        and judged["criteria"]["allreduce_busbw"] == "skip"
    )
    assert predicate["configuration"][0]["name"] == f"acceptance-profile/{SXM}.json"
    with pytest.raises(dsse.EnvelopeError):
        verify_envelope(data, load_public(env["public"]))  # not the acceptor's key
    capsys.readouterr()
    assert main(["verify-acceptance", str(attestation), str(env["h200"]), "--key", str(env["acceptor_public"])]) == 0
    assert "result PASSED (verdict pass)" in capsys.readouterr().out
    assert (
        main(
            [
                "verify-acceptance",
                str(attestation),
                str(env["tmp"] / "tampered.tar.gz"),
                "--key",
                str(env["acceptor_public"]),
            ]
        )
        == 1
    )
    assert "not this bundle" in capsys.readouterr().err


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.text = []

    def handle_data(self, data):
        self.text.append(data)


def test_summary_pages_say_verdict_values_and_how_to_verify(env, capsys):
    md, html = env["tmp"] / "summary.md", env["tmp"] / "summary.html"
    nvl = [
        "accept",
        str(env["h200"]),
        "--profile",
        "h200-nvl-141gb",
        "--key",
        str(env["public"]),
        "--summary",
        str(md),
        "--html",
        str(html),
    ]
    assert main(nvl) == 1
    first = md.read_text()
    assert "**Verdict: REJECTED** (FAIL)" in first
    assert "h200-sxm-141gb is not h200-nvl-141gb" in first  # why, in plain words
    assert "## Not measured, and why" in first and "allreduce_busbw" in first
    # the files by name, as the reader has them beside the page (the paths are this machine's own)
    assert f"dossier verify {env['h200'].name} --key {env['public'].name}" in first
    assert str(env["tmp"]) not in first
    assert hashlib.sha256(env["h200"].read_bytes()).hexdigest() in first
    parser = _Text()
    parser.feed(html.read_text())
    text = "".join(parser.text)
    assert "Verdict: REJECTED" in text and "1365 MHz" in text
    main(nvl)  # the same inputs give the same pages
    assert md.read_text() == first


def test_a_cpu_dossier_of_this_machine_verifies_but_is_not_an_h200(env, capsys):
    bundle = cpu_dossier(env["tmp"] / "cpu" / "cpu.tar.gz", env["key"])
    assert main(["verify", str(bundle), "--key", str(env["public"])]) == 0
    capsys.readouterr()
    assert main(["accept", str(bundle), "--profile", SXM, "--key", str(env["public"]), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    by_name = {c["name"]: c for c in result["criteria"]}
    assert by_name["sku_matches_profile"]["status"] == "fail"
    assert "no GPU" in by_name["sku_matches_profile"]["why"]
    assert by_name["bandwidth_plateau"]["status"] == "fail"  # host memory is not 85% of an H200's HBM
    # required and not measurable on a CPU: INCOMPLETE (it fails closed; the verdict is FAIL anyway)
    assert by_name["clocks_rise_under_load"]["status"] == "incomplete"
    assert "no GPU" in by_name["clocks_rise_under_load"]["why"] and result["result"] == "fail"


PAGE_LINES, PAGE_COLUMNS = 66, 100  # one printed page: 66 lines of 100 characters (A4 or Letter, 10 pt mono)
FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.mark.parametrize(
    "bundle, profile",
    [
        ("h200/dossier-h200-full", SXM),
        ("h200/dossier-h200", SXM),
        ("h200/dossier-h200", "h200-nvl-141gb"),
        ("h200x2/dossier-h200x2", SXM),
    ],
)
def test_the_summary_fits_one_printed_page_with_the_details_after_it(bundle, profile, tmp_path):
    md = tmp_path / "summary.md"
    main(
        [
            "accept",
            str(FIXTURES / f"{bundle}.tar.gz"),
            "--profile",
            profile,
            "--key",
            str(FIXTURES / f"{bundle}.pub"),
            "--summary",
            str(md),
            "--allow-format",
            "1",
            "--allow-format",
            "4",
        ]
    )  # the committed bundles' formats
    page, details = md.read_text().split("\n# Details\n")
    printed = [chunk for line in page.splitlines() for chunk in textwrap.wrap(line, PAGE_COLUMNS) or [""]]
    assert len(printed) <= PAGE_LINES, len(printed)
    assert "**Verdict: " in page and "## Not measured, and why" in page and "dossier verify " in page
    assert "## What was checked" in details and "## Where each figure comes from" in details
    assert "shared/" not in md.read_text()  # every source it cites is in the bundle or the repository
