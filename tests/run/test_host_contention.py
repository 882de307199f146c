"""Host contention during a real CPU `dossier run` (issue 35): two busy processes this test starts and
stops itself (tests/cotenant.py, named cotenant-spin) run beside `dossier run` (its own process, so they
are not the harness's descendants), and the same run without them. Made robust for a 2-core VM that other
engineers share: every assertion is on what the bundle recorded and what the verdict names from it, never
on a rate or a time (the run without our load may still find the host busy with theirs, and is then
judged by what it recorded). The steps are health and bandwidth (the criterion a busy host moves most)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.analysis import contention as rules
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.cli import main
from harness.judge import contention
from harness.judge.facts import BundleFacts
from harness.present.verdict import run_verdict
from harness.registry import analysis_module, step_ids
from tests import cotenant
from tests.bundle_support import make_key

pytestmark = pytest.mark.timeout(1800)  # two dossier runs, one beside two busy processes, on a shared 2-core VM

ROOT = Path(__file__).resolve().parents[2]
SKIPPED = [s for s in step_ids() if s not in ("health", "bandwidth")]
SPIN_LIMIT_S = 600  # a spinner this test failed to stop ends by itself


def _dossier(tmp: Path, name: str, key: Path) -> Path:
    argv = [sys.executable, "-m", "harness", "run", "--output-dir", str(tmp), "--name", name]
    argv += ["--signing-key", str(key), "--runner", "local", *(x for s in SKIPPED for x in ("--skip", s))]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode in (0, 1, 5), done.stderr[-3000:]  # a verdict, never a crash
    return tmp / f"{name}.tar.gz"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("contention")
    key, public = make_key(tmp / "keys")
    spinners = [
        subprocess.Popen([sys.executable, "-m", "tests.cotenant", str(SPIN_LIMIT_S)], cwd=ROOT) for _ in range(2)
    ]
    try:
        loaded = _dossier(tmp, "loaded", key.path)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    idle = _dossier(tmp, "idle", key.path)
    return {"loaded": loaded, "idle": idle, "public": public, "spinners": {s.pid for s in spinners}, "tmp": tmp}


def _view(path: Path) -> BundleView:
    return BundleView.from_files(read_all(path), analysis_module)


def _ours(document, pids) -> list[dict]:
    """Every reading's entry for one of our spinners."""
    return [p for e in document["steps"] for s in e["samples"] for p in s["others"] or [] if p["pid"] in pids]


def test_both_bundles_verify(runs, capsys):
    for name in ("loaded", "idle"):
        assert main(["verify", str(runs[name]), "--key", str(runs["public"])]) == 0, capsys.readouterr().out


def test_the_loaded_bundle_records_the_busy_processes_by_pid_name_and_share(runs):
    view = _view(runs["loaded"])
    ours = _ours(view.contention, runs["spinners"])
    assert {p["pid"] for p in ours} == runs["spinners"]  # both, by pid, in the raw readings
    assert {p["comm"] for p in ours} == {cotenant.NAME} and all(p["ticks"] > 0 for p in ours)
    windows = contention.windows(BundleFacts(view))
    assert set(windows) == {"health", "bandwidth"}
    bandwidth = windows["bandwidth"]
    assert bandwidth["state"] == rules.BUSY  # two busy loops on two CPUs: at least 10% of them
    named = [p for w in windows.values() for p in w["top"] if p["pid"] in runs["spinners"]]
    assert named and all(p["comm"] == cotenant.NAME and p["share"] > 0 for p in named)
    assert "## Host contention" in view.files["report.md"].decode()


def test_no_criterion_of_the_loaded_run_fails_without_the_load_beside_it(runs):
    view = _view(runs["loaded"])
    verdict = run_verdict(view)
    for result in verdict.results:
        if result.status == "fail":
            assert result.why.startswith("measured while the host was busy"), result.why
    bandwidth = next(r for r in verdict.results if r.name == "bandwidth")
    assert bandwidth.status != "fail"  # on a busy host a disagreement is a disturbed measurement
    if bandwidth.status == "incomplete":
        assert "the measurement was disturbed" in bandwidth.why and "RERUN_IDLE" in bandwidth.why
        assert "other processes used" in bandwidth.why
        assert any(cotenant.NAME in line for line in bandwidth.findings if line.startswith("host during"))


def test_the_run_without_our_load_records_none_of_it_and_is_judged_by_what_it_recorded(runs):
    view = _view(runs["idle"])
    assert _ours(view.contention, runs["spinners"]) == []
    window = contention.windows(BundleFacts(view))["bandwidth"]
    bandwidth = next(r for r in run_verdict(view).results if r.name == "bandwidth")
    if window["state"] == rules.IDLE:  # nobody else was busy: judged as before, the hardware's own
        assert bandwidth.status in ("skip", "fail", "incomplete") and "disturbed" not in bandwidth.why
        # a spread of a VM's host memory is not the hardware's (its other guests are unseen): not judged
        assert bandwidth.status == "skip" or bandwidth.why.startswith(("the hardware's rate varies", "not judged:"))
    else:  # other engineers' work on this shared VM: named the same way as ours
        assert bandwidth.status != "fail"


def test_reproduce_names_host_contention_as_the_likely_why(runs, capsys):
    code = main(
        [
            "reproduce",
            str(runs["idle"]),
            "--key",
            str(runs["public"]),
            "--against",
            str(runs["loaded"]),
            "--key-mine",
            str(runs["public"]),
            "--output-dir",
            str(runs["tmp"] / "reproduction"),
            "--signing-key",
            str(runs["tmp"] / "keys" / "dossier.key"),
            "--json",
        ]
    )
    assert code in (0, 1)
    judgement = json.loads(capsys.readouterr().out)
    host = next(d for d in judgement["differences"] if d["field"] == "host contention")
    assert host["mine"].startswith("busy during ") and "bandwidth (other processes used" in host["mine"]
    assert host["theirs"] != host["mine"]
    assert "other processes used" in host["mine"] and set(host["explains"]) >= {"steady", "burst", "launch_bound"}
    for figure in judgement["figures"]:
        if figure["verdict"] == "not_reproduced" and figure["kind"] in ("steady", "burst", "launch_bound"):
            assert "host contention" in figure["likely_why"], figure
