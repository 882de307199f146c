"""`dossier evidence` and `dossier verify-evidence` on CPU, on a real failing bundle: a `dossier run`
of this machine whose stress step injected a GEMM fault (`--stress-inject-fault gemm`: one flipped
bit, caught by the result check), made once for the module.

The live tools are run for real: where a test needs `nvidia-smi` and `nvidia-bug-report.sh` on PATH
(this VM has neither), the stand-ins replay the real H200 `nvidia-smi -q` capture
(tests/fixtures/h200/check/) or hang past their time bound; with no tool on PATH the pieces say so.
The GPU identity reads run the reader's own code on the H200 node-state capture (tests/check_support.py)."""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from harness.bundle.layout import ATTESTATION
from harness.bundle.read import read_all
from harness.bundle.write import archive_bytes
from harness.cli import main
from harness.evidence import archive, live
from harness.evidence.check import verify_archive
from harness.probes.check.identity import device_identity
from harness.signing.keys import load_public
from tests.bundle_support import make_key
from tests.check_support import CAPTURES, capture, changed, node_state_nvml, reading

SKIPPED = ("bandwidth", "roofline", "precision", "allreduce", "transfer")
SMI_CAPTURE = CAPTURES / "nvidia-smi-q.idle.txt"


def dossier(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def failed(tmp_path_factory):
    """(the failing bundle, its signer's private key path, public key path)."""
    folder = tmp_path_factory.mktemp("failed")
    key, public = make_key(folder / "keys")
    skips = [arg for step in SKIPPED for arg in ("--skip", step)]
    code, out, err = dossier(
        "run", "--runner", "local", "--output-dir", str(folder), "--name", "faulty", "--signing-key",
        str(folder / "keys" / "dossier.key"), "--stress-seconds", "1", "--stress-inject-fault", "gemm", *skips,
    )  # fmt: skip
    assert code == 1, out + err  # FAIL: the injected bit was caught
    return folder / "faulty.tar.gz", folder / "keys" / "dossier.key", public


def tools(folder: Path, smi: str | None = None, bug_report: str | None = None) -> str:
    """A PATH whose first folder holds these stand-in tools (and the rest of PATH without NVIDIA's)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, body in (("nvidia-smi", smi), ("nvidia-bug-report.sh", bug_report)):
        if body is not None:
            (folder / name).write_text("#!/bin/sh\n" + body + "\n")
            (folder / name).chmod(0o755)
    return f"{folder}:/usr/bin:/bin"


def make(failed, tmp_path, monkeypatch, path_env: str, *extra: str) -> tuple[int, str, str, Path]:
    bundle, private, public = failed
    monkeypatch.setenv("PATH", path_env)
    out = tmp_path / "evidence.tar.gz"
    code, printed, err = dossier(
        "evidence", str(bundle), "--key", str(public), "--signing-key", str(private), "-o", str(out), *extra
    )
    return code, printed, err, out


def manifest_of(path: Path) -> dict:
    return json.loads(read_all(path)[archive.MANIFEST])


def test_the_archive_holds_the_failure_with_its_raw_data_and_verifies(failed, tmp_path, monkeypatch):
    code, printed, err, out = make(failed, tmp_path, monkeypatch, tools(tmp_path / "none"))
    assert code == 0, printed + err
    assert "evidence of stress written and verified" in printed and printed.strip().endswith(str(out))
    files, found = read_all(out), manifest_of(out)
    assert [f["name"] for f in found["failed"]] == ["stress"] and "result_check" in found["failed"][0]["why"]
    assert files["failing/raw/stress.json"] == read_all(failed[0])["raw/stress.json"]  # byte for byte
    assert files[found["bundle"]["member"]] == failed[0].read_bytes()
    failures = json.loads(files[archive.FAILURES])
    assert failures[0]["members"] == ["raw/stress.json"] and failures[0]["status"] == "fail"
    pieces = found["pieces"]
    assert pieces["nvidia_smi_q"] == {
        "unavailable": "nvidia-smi is not on PATH (the driver is not installed on this host)"
    }
    assert "nvidia-bug-report.sh is not on PATH" in pieces["nvidia_bug_report"]["unavailable"]
    assert pieces["node_reading"] == {"members": ["live/reading.json"], "source": "live"}
    assert pieces["ruled_out"] == {"members": ["ruled-out.json"], "source": "bundle"}
    ruled = json.loads(files["ruled-out.json"])
    assert "records no host contention" in ruled["host_contention"]["unavailable"]
    assert {c["name"] for c in ruled["other_processes"]["checks"]} <= {"no_foreign_process", "no_unexpected_process"}
    code, printed, _ = dossier("verify-evidence", str(out), "--key", str(failed[2]), "--bundle-key", str(failed[2]))
    assert code == 0 and "NOT DONE" not in printed and "checks passed" in printed
    code, printed, _ = dossier("verify-evidence", str(out), "--key", str(failed[2]))
    assert code == 0 and "NOT DONE bundle-verified" in printed


def test_the_tools_run_with_their_time_bound(failed, tmp_path, monkeypatch):
    path = tools(tmp_path / "bin", smi=f"cat {SMI_CAPTURE}", bug_report="sleep 30")
    code, printed, err, out = make(failed, tmp_path, monkeypatch, path, "--bug-report-timeout", "1")
    assert code == 0, printed + err
    files, pieces = read_all(out), manifest_of(out)["pieces"]
    assert files["live/nvidia-smi-q.txt"] == SMI_CAPTURE.read_bytes()
    why = pieces["nvidia_bug_report"]["unavailable"]
    assert why.startswith("nvidia-bug-report.sh --output-file ") and why.endswith("did not finish within 1 s")


def test_a_failing_tool_is_its_exit_code_and_message(failed, tmp_path, monkeypatch):
    path = tools(tmp_path / "bin", smi="echo 'NVIDIA-SMI has failed because it could not communicate' >&2; exit 9")
    code, *_, out = make(failed, tmp_path, monkeypatch, path)
    assert code == 0
    assert manifest_of(out)["pieces"]["nvidia_smi_q"] == {
        "unavailable": "nvidia-smi -q exited 9: NVIDIA-SMI has failed because it could not communicate"
    }


def test_a_bundle_in_which_nothing_failed_is_refused(tmp_path):
    from harness.run.assemble import assemble
    from tests.h200_remade import remade

    key, public = make_key(tmp_path / "keys")
    bundle = tmp_path / "h200-full.tar.gz"  # the committed full H200 dossier, this format: it passed
    bundle.write_bytes(assemble(remade(Path(__file__).parents[1] / "fixtures/h200/dossier-h200-full.tar.gz"), key))
    argv = [
        "--key",
        str(public),
        "--signing-key",
        str(tmp_path / "keys" / "dossier.key"),
        "-o",
        str(tmp_path / "e.tar.gz"),
    ]
    code, _, err = dossier("evidence", str(bundle), *argv)
    assert code == 2 and "nothing failed in this bundle" in err and not (tmp_path / "e.tar.gz").exists()


def test_a_bundle_that_does_not_verify_is_refused(failed, tmp_path):
    bundle, private, _ = failed
    _, other = make_key(tmp_path / "other")
    code, _, err = dossier(
        "evidence", str(bundle), "--key", str(other), "--signing-key", str(private), "-o", str(tmp_path / "e.tar.gz")
    )
    assert code == 1 and "does not verify" in err and not (tmp_path / "e.tar.gz").exists()


def test_live_pieces_are_unavailable_away_from_the_bundles_node():
    taken = live.take("h200-node7", "2026-12-01T07:58:00.000000Z", live.Timeouts(), lambda _: None)
    assert taken.members == {}
    why = live.elsewhere("h200-node7", "login1")
    assert (
        why
        == "this host (login1) is not the node the bundle was measured on (h200-node7): run `dossier evidence` there"
    )
    assert all(piece == {"unavailable": live.elsewhere("h200-node7")} for piece in taken.pieces.values())


def test_the_kernel_log_window_keeps_the_runs_xids():
    def timed(r):
        r["taken_at"] = "2026-12-01T08:10:00.000000Z"
        r["uptime_s"] = 3600.0  # booted 07:10:00
        r["kernel_log"]["lines"] += [
            {"uptime_s": 100.0, "text": "NVRM: Xid (PCI:0000:00:06): 79, pid=1, GPU has fallen off the bus."},
            {"uptime_s": 2900.0, "text": "NVRM: Xid (PCI:0000:00:06): 48, pid=2, An uncorrectable double bit error"},
            {"uptime_s": 3000.0, "text": "NVRM: Xid (PCI:0000:00:06): 13, pid=3, Graphics Exception"},
        ]

    r = changed(reading("node-idle.json"), timed)
    window = live.kernel_window(r, "2026-12-01T08:00:00.000000Z")  # run at uptime 3000 s: the window opens at 2400
    assert window["opens_uptime_s"] == 2400.0
    assert [(e["xid"], e["fatal"]) for e in window["xids"]] == [(48, True), (13, False)]
    booted_since = live.kernel_window(r, "2026-12-01T06:00:00.000000Z")
    assert "booted since the run started" in booted_since["window"] and len(booted_since["xids"]) == 3
    r["uptime_s"] = {"unavailable": "/proc/uptime: PermissionError"}
    assert "cannot be placed" in live.kernel_window(r, "2026-12-01T08:00:00.000000Z")["unavailable"]


def test_the_identity_a_ticket_asks_for_is_read_from_the_gpu():
    from types import SimpleNamespace

    recorded = capture("node-idle.json")
    nvml = node_state_nvml(recorded)
    d = recorded["nvml"]["devices"][0]
    nvml.answers["nvmlDeviceGetSerial"] = d["serial"]
    nvml.answers["nvmlDeviceGetRowRemapperHistogram"] = SimpleNamespace(**d["row_remapper_histogram"])
    found = device_identity(nvml, 0, 0)
    assert found["serial"] == "1654024075113" and found["vbios_version"] == "96.00.A5.00.1A"
    assert found["row_remapper_histogram"] == {"max": 3072, "high": 0, "partial": 0, "low": 0, "none": 0}
    assert "NotCaptured" in found["inforom"]["image_version"]["unavailable"]  # never invented


def resealed(path: Path, out: Path, key, edit) -> Path:
    files = read_all(path)
    files.pop(ATTESTATION)
    edit(files)
    return archive.seal(files, key, out)


@pytest.fixture
def evidence(failed, tmp_path, monkeypatch):
    code, printed, err, out = make(failed, tmp_path, monkeypatch, tools(tmp_path / "none"))
    assert code == 0, printed + err
    return out


def failing_checks(path: Path, trusted: Path, bundle_key: Path | None = None) -> list[str]:
    checks, _ = verify_archive(path, load_public(trusted), load_public(bundle_key) if bundle_key else None)
    return [f"{c.check} {c.subject}: {c.detail}" for c in checks if not c.ok]


def test_a_member_changed_after_signing_is_caught(failed, evidence, tmp_path):
    files = read_all(evidence)
    files["ruled-out.json"] = b'{"other_processes": "none, honest"}\n'
    (tmp_path / "changed.tar.gz").write_bytes(archive_bytes(files))
    assert failing_checks(tmp_path / "changed.tar.gz", failed[2]) == [
        "sha256 ruled-out.json: differs from the statement"
    ]


def test_a_copy_that_is_not_the_bundles_member_is_caught_even_resigned(failed, evidence, tmp_path):
    from harness.signing.keys import load_private

    def edit(files):
        files["failing/raw/stress.json"] = files["failing/raw/stress.json"].replace(b'"fp32"', b'"bf16"', 1)

    out = resealed(evidence, tmp_path / "copy.tar.gz", load_private(failed[1]), edit)
    assert failing_checks(out, failed[2]) == ["copy failing/raw/stress.json: not raw/stress.json"]


def test_a_manifest_naming_other_failures_is_caught_with_the_bundle_key(failed, evidence, tmp_path):
    from harness.signing.keys import load_private

    def edit(files):
        found = json.loads(files[archive.MANIFEST])
        found["failed"][0]["name"] = "bandwidth"
        files[archive.MANIFEST] = archive.as_json(found)

    out = resealed(evidence, tmp_path / "claims.tar.gz", load_private(failed[1]), edit)
    assert failing_checks(out, failed[2]) == []  # without the bundle's key the claim cannot be judged again
    assert failing_checks(out, failed[2], failed[2]) == [
        "failures failures.json: judged again: ['stress']; stated: ['bandwidth']"
    ]


def test_the_same_members_seal_to_the_same_bytes(failed, evidence, tmp_path):
    from harness.signing.keys import load_private

    key = load_private(failed[1])
    first = resealed(evidence, tmp_path / "a.tar.gz", key, lambda files: None)
    second = resealed(evidence, tmp_path / "b.tar.gz", key, lambda files: None)
    assert first.read_bytes() == second.read_bytes() == evidence.read_bytes()


def test_an_existing_output_is_never_overwritten(failed, evidence, tmp_path):
    bundle, private, public = failed
    before = evidence.read_bytes()
    code, _, err = dossier(
        "evidence", str(bundle), "--key", str(public), "--signing-key", str(private), "-o", str(evidence)
    )
    assert code == 2 and "already exists" in err and evidence.read_bytes() == before
    assert os.path.exists(evidence)
