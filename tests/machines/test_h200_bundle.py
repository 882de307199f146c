"""A real dossier bundle made on the lent H200 SXM (tests/fixtures/h200/dossier-h200.tar.gz).

Taken 2026-11-29 with `OUT=$OUT bash bench/gpu_dossier.sh` (one device call: keygen, `dossier run
--runner local`, every step on the GPU); the public key beside it is the one that run made. A
colleague's bundle checked on another machine: this CPU machine verifies and judges it.
"""

import json
import tarfile
from pathlib import Path

from harness.bundle.read import read_all
from harness.bundle.write import archive_bytes
from harness.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "h200"
BUNDLE = FIXTURES / "dossier-h200.tar.gz"
PUBLIC_KEY = FIXTURES / "dossier-h200.pub"


def raw(name):
    with tarfile.open(BUNDLE) as tar:
        return json.load(tar.extractfile(f"raw/{name}.json"))


def test_the_h200_bundle_verifies_here_with_its_signer_key_once_its_format_is_allowed(capsys):
    assert main(["verify", str(BUNDLE), "--key", str(PUBLIC_KEY)]) == 1  # format 1: older than this build checks fully
    assert "FAIL format commands.json: format 1 " in capsys.readouterr().out
    assert main(["verify", str(BUNDLE), "--key", str(PUBLIC_KEY), "--allow-format", "1"]) == 0
    out = capsys.readouterr().out
    assert "checks passed, 1 not done" in out and "NOT DONE report report.md: not re-rendered" in out


def test_one_flipped_byte_fails_verify_and_names_the_member(tmp_path, capsys):
    members = read_all(BUNDLE)
    data = bytearray(members["raw/bandwidth.json"])
    data[data.index(b'"kernel"') + 1] ^= 0x01
    members["raw/bandwidth.json"] = bytes(data)
    tampered = tmp_path / "tampered.tar.gz"
    tampered.write_bytes(archive_bytes(members))  # canonical form: only the content differs
    assert main(["verify", str(tampered), "--key", str(PUBLIC_KEY)]) != 0
    assert "FAIL sha256 raw/bandwidth.json" in capsys.readouterr().out


def test_the_h200_is_identified_as_h200_sxm_and_meets_the_lab_criteria():
    health = raw("health")
    assert [d["sku"]["id"] for d in health["devices"]] == ["h200-sxm-141gb"]
    from harness.analysis import roofline
    from harness.analysis.bandwidth import figures as bandwidth

    bw = bandwidth.headlines(raw("bandwidth"))
    assert bw["repeat_verdict"] == "pass" and bw["repeat_spread"] < 0.05
    assert 0.85 <= bw["known_good_ratio"] <= 1.15  # within 15% of the known-good for this SKU
    rl = roofline.headlines(raw("roofline"))
    assert rl["classifications"]["qkv-decode-1"] == "memory"
    assert rl["classifications"]["qkv-prefill-8192"] == "compute"


def test_the_h200_bundle_passes_acceptance_for_its_own_sku(tmp_path):
    junit = tmp_path / "accept.xml"
    code = main(
        [
            "accept",
            str(BUNDLE),
            "--profile",
            "h200-sxm-141gb",
            "--key",
            str(PUBLIC_KEY),
            "--signing-key",
            str(tmp_path / "acceptor.key"),
            "--junit",
            str(junit),
            "--allow-format",
            "1",
        ]
    )
    assert code == 0
    text = junit.read_text()
    assert 'failures="0"' in text
    for dtype in ("bf16", "fp16", "fp8", "tf32", "fp32"):  # every dtype's GEMM was judged
        assert f'name="gemm_{dtype}"' in text


def test_every_lab_criterion_passes_in_the_h200_report():
    with tarfile.open(BUNDLE) as tar:
        report = tar.extractfile("report.md").read().decode()
    criteria = [line for line in report.splitlines() if line.startswith("- [")]
    assert len(criteria) == 6 and all(line.startswith("- [x] **pass**") for line in criteria)


def test_the_h200_sxm_bundle_fails_against_the_h200_nvl_profile(tmp_path):
    code = main(
        [
            "accept",
            str(BUNDLE),
            "--profile",
            "h200-nvl-141gb",
            "--key",
            str(PUBLIC_KEY),
            "--signing-key",
            str(tmp_path / "acceptor.key"),
        ]
    )
    assert code == 1
