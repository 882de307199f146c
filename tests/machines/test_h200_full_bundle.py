"""The whole dossier as this build makes it, taken on the lent H200 SXM (tests/fixtures/h200/
dossier-h200-full.tar.gz, bundle format 4): every step including transfer and the 60 s stress,
its bundled schemas and table members. Taken 2026-12-01 08:01 UTC by `OUT=$OUT bash
bench/gpu_dossier.sh` (carry .whl .gpu; `dossier run` took 140.3 s there); the public key beside it
is the one that run generated. This CPU machine verifies it byte for byte (report and tables
re-rendered here equal those rendered on the GPU machine) and judges it against the H200 profile.
"""

import json
import tarfile
from pathlib import Path

import pytest

from harness.analysis.stress import figures as stress
from harness.analysis.transfer.figures import headlines as transfer_headlines
from harness.bundle.read import read_all
from harness.cli import main
from harness.signing.keys import load_public
from harness.verify import verify_bundle

FIXTURES = Path(__file__).parents[1] / "fixtures" / "h200"
BUNDLE = FIXTURES / "dossier-h200-full.tar.gz"
PUBLIC_KEY = FIXTURES / "dossier-h200-full.pub"


def raw(name):
    with tarfile.open(BUNDLE) as tar:
        return json.load(tar.extractfile(f"raw/{name}.json"))


def test_it_verifies_here_once_its_format_is_allowed_and_says_which_checks_were_not_done():
    assert not verify_bundle(BUNDLE, load_public(PUBLIC_KEY)).ok  # format 4: older than this build fully checks
    report = verify_bundle(BUNDLE, load_public(PUBLIC_KEY), allow_formats=(4,))
    assert report.ok, [c for c in report.checks if not c.ok]
    subjects = {c.subject for c in report.checks}
    assert {"raw/stress.json", "raw/transfer.json", "schemas/common.schema.json"} <= subjects
    not_done = {c.subject for c in report.not_done}  # format 4's report and tables, and its schemas that differ
    assert {"report.md", "tables/*", "schemas/stress.schema.json"} <= not_done


def test_every_step_ran_and_stress_is_last():
    commands = json.loads(read_all(BUNDLE)["commands.json"])
    assert commands["format_version"] == 4
    steps = [(s["step"], s["status"]) for s in commands["steps"]]
    assert all(status == "completed" for _, status in steps)
    assert steps[-1][0] == "stress" and ("transfer", "completed") in steps


def test_the_figures_are_what_the_gpu_measured():
    heads = stress.headlines(raw("stress"))
    [gpu] = heads["devices"]
    assert heads["seconds"] == 60 and heads["dtype"] == "bf16"
    assert gpu["steady_tflops"] == pytest.approx(677.50, abs=0.01)  # sustained, under the power cap
    assert gpu["burst_tflops"] == pytest.approx(686.21, abs=0.01)  # the first second
    assert heads["verdict"]["status"] == "pass"
    per_gpu = transfer_headlines(raw("transfer"))["per_gpu"]["0"]
    assert per_gpu["h2d_pinned_gbps"] == pytest.approx(55.27, abs=0.01)
    assert per_gpu["bidirectional_total_pinned_at_bytes"] == 512 * 2**20
    fusion = raw("roofline")["fusion"]
    assert fusion["fused_by"]["name"] == "torch.cuda.jiterator"


def test_it_is_accepted_as_an_h200_sxm_skipping_what_one_gpu_or_the_profile_cannot_judge(capsys):
    assert (
        main(["accept", str(BUNDLE), "--profile", "h200-sxm-141gb", "--key", str(PUBLIC_KEY), "--allow-format", "4"])
        == 0
    )
    out = capsys.readouterr().out
    # 24 criteria as before plus the 4 configuration criteria the catalogue states; skipped: the all-reduce
    # and GPU-against-GPU (one GPU), NVLink (NVML: NotSupported in this VM), what the profile states nothing of
    assert (
        "PASS: dossier-h200-full.tar.gz against h200-sxm-141gb: 28 passed, 0 warned, 0 failed, 0 incomplete "
        "(required, not measured)"
    ) in out
    assert "PASS stress_sustained_bf16: 677.5 TFLOPS lowest steady" in out
    assert "PASS transfer_bidirectional_pinned: 100.9 GB/s (GPU 0, summed at 512 MiB" in out
    assert "SKIP allreduce_busbw" in out and "SKIP config_nvlink" in out
