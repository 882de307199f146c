"""The transfer probe's registry entry: `dossier transfer`'s exit rule, the report criterion, the
acceptance criteria (pass and fail paths), the `dossier run` step's arguments and the fleet metrics.

Documents: the real one-GPU H200 run (tests/fixtures/transfer/transfer.json) and documents built
from the H200 captures (tests/transfer_fixtures.py): the copy-load capture EDITED by hand to a x8
link, and the two H200s' facts on the real NV18 `nvidia-smi topo -m` with peer access as the test
gives it. Built documents carry nvbandwidth's figures at one size (512 MiB), so no plateau: where a
test needs one, `three_sizes` says it constructs it.
"""

import argparse
import json

import pytest

from harness import registry
from harness.analysis.transfer.figures import headlines
from harness.analysis.verdict import Verdict
from harness.errors import CheckFailed
from harness.judge.acceptance.criteria import evaluate
from harness.judge.facts import BundleFacts
from harness.judge.transfer import judge_transfer
from harness.probes.transfer.copies import point
from harness.probes.transfer.document import state_figures
from harness.registry import transfer as entry
from harness.registry.steps import RunState
from tests.accept_support import h200_documents, resolve, view_of
from tests.transfer_fixtures import EDITED_X8, FIXTURES, h200_document, two_gpu_document

SXM = "h200-sxm-141gb"
NV18 = FIXTURES / "h200x2" / "nvidia-smi-topo-m.txt"
NO_PLOT = argparse.Namespace(no_plot=True, output="transfer.json")


def three_sizes(document, slower=1.0):
    """CONSTRUCTED, not measured: each series' one recorded 512 MiB copy time becomes three sizes
    (256 MiB, 512 MiB, 1 GiB) at the same rate (x `slower` for its time), so a plateau exists."""
    document = json.loads(json.dumps(document))
    for series in document["series"]:
        [recorded] = series["points"]
        per_byte = recorded["copy_times_s"][0] / recorded["bytes"] * slower
        series["points"] = [point(n, [n * per_byte]) for n in (2**28, 2**29, 2**30)]
    return state_figures(document)


def judged(document, profile=None):
    facts = BundleFacts(view_of({**h200_documents(), "transfer": document}))
    return {
        r.name: r for r in evaluate(facts, profile or resolve(SXM), registry.acceptance_criteria())
    }, judge_transfer(facts)[0]


def test_a_link_edited_to_x8_fails_the_command_the_report_and_acceptance():
    document = three_sizes(h200_document(under_copy=EDITED_X8))
    with pytest.raises(CheckFailed, match="GPU 0 link degraded: NVML reports the link at x8 of its x16"):
        entry.finish(NO_PLOT, document)
    results, report = judged(document)
    assert results["transfer_links"].status == Verdict.FAIL
    why = results["transfer_links"].why
    assert "x8 of its x16" in why and "trained below its width" in why
    assert report.status == Verdict.FAIL and any("link degraded" in f for f in report.findings)
    assert results["transfer_h2d_pinned"].status == Verdict.PASS  # the rate itself is the recorded healthy one


def test_refused_peer_access_on_nv18_is_broken_p2p_everywhere():
    document = three_sizes(two_gpu_document(NV18, access=False, with_peer_copies=False))
    with pytest.raises(CheckFailed, match="GPU0-GPU1 broken_p2p: cudaDeviceCanAccessPeer says no"):
        entry.finish(NO_PLOT, document)
    results, report = judged(document)
    assert results["transfer_p2p"].status == Verdict.FAIL and "NV18" in results["transfer_p2p"].why
    assert results["transfer_peer_read"].status == Verdict.FAIL  # NVLink in the topology, no peer read measured
    assert "0->1, 1->0" in results["transfer_peer_read"].why
    assert report.status == Verdict.FAIL


def test_two_healthy_nvlinked_h200s_pass_and_peer_read_is_held_to_its_known_good():
    document = three_sizes(two_gpu_document(NV18, access=True, with_peer_copies=True))
    entry.finish(NO_PLOT, document)  # exit 0
    results, report = judged(document)
    for name in ("transfer_links", "transfer_p2p", "transfer_peer_read", "transfer_h2d_pinned", "transfer_d2h_pinned"):
        assert results[name].status == Verdict.PASS, (name, results[name].why)
    assert results["transfer_peer_read"].measured.value == pytest.approx(393.9, abs=0.01)
    assert results["transfer_peer_read"].threshold.value == pytest.approx(0.9 * 393.9)
    assert results["transfer_h2d_pinned"].measured.value == pytest.approx(55.26)  # GPU0, the slower of the two
    assert "GPU 0" in results["transfer_h2d_pinned"].measured.text
    assert results["transfer_bidirectional_pinned"].status == Verdict.SKIP  # not in the recorded figures
    assert report.status == Verdict.PASS


def test_slower_peer_reads_fail_the_share_but_not_the_p2p_rule():
    document = three_sizes(two_gpu_document(NV18, access=True, with_peer_copies=True), slower=1.25)
    results, _ = judged(document)
    assert results["transfer_peer_read"].status == Verdict.FAIL  # 315 GB/s < 0.9 x 393.9
    assert results["transfer_p2p"].status == Verdict.PASS  # 315 / 450 = 0.70, above the 0.6 degraded rule


def test_no_plateau_is_a_failed_rate_not_a_passed_one():
    results, _ = judged(h200_document())  # one recorded size per series
    assert results["transfer_h2d_pinned"].status == Verdict.FAIL
    assert "no plateau" in results["transfer_h2d_pinned"].why


def test_a_cpu_run_is_not_measured_and_says_host_memory():
    from harness.probes import transfer as probe
    from tests.probes.test_transfer_probe import FAST

    document = probe.measure(probe.build_parser().parse_args(FAST))
    document.update(
        probe="transfer",
        contract_version=1,
        started_at="2026-12-01T00:00:00.000000Z",
        finished_at="2026-12-01T00:00:01.000000Z",
        argv=FAST,
    )
    entry.finish(NO_PLOT, document)  # exit 0: nothing to judge is no failure
    results, report = judged(document)
    for name in ("transfer_links", "transfer_h2d_pinned"):
        assert results[name].status == Verdict.SKIP and "host memory on the CPU" in results[name].why
    assert report.status == Verdict.SKIP and "no GPU link to judge" in report.why  # cannot be judged here


def test_a_bundle_without_the_step_is_not_measured_with_why():
    facts = BundleFacts(view_of(h200_documents()))
    results = {r.name: r for r in evaluate(facts, resolve(SXM), registry.acceptance_criteria())}
    assert results["transfer_links"].status == Verdict.SKIP and "not run" in results["transfer_links"].why
    assert not results["transfer_links"].required
    assert judge_transfer(facts)[0].status == Verdict.INCOMPLETE


def test_the_run_step_is_short_on_gpus_and_its_timeout_grows_with_them():
    state = RunState(analyses=registry.analysis_module)
    cpu = entry.transfer_arguments(state)
    assert cpu.args == ("--device", "cpu") and cpu.timeout_s == 120
    state.add("health", h200_documents()["health"], "health")
    gpu = entry.transfer_arguments(state)
    assert gpu.args[:2] == ("--point-budget-s", "0.1") and "1G" not in gpu.args and "512M" in gpu.args
    assert gpu.timeout_s == 150 and entry.timeout_s(2) == 195 and entry.timeout_s(8) == 780


def test_fleet_metrics_read_the_slowest_gpu_and_pair():
    metrics = {m.name: m for probe, m in registry.fleet_metrics() if probe == "transfer"}

    def read(name: str, document: dict) -> object:  # as the fleet reads it: the document, or its headlines
        metric = metrics[name]
        return metric.read(document if metric.source == "document" else headlines(document))

    two = three_sizes(two_gpu_document(NV18, access=True, with_peer_copies=True))
    assert read("transfer_h2d_pinned_slowest_gpu_gbps", two) == pytest.approx(55.26)
    assert read("transfer_d2h_pinned_slowest_gpu_gbps", two) == pytest.approx(55.30)
    assert read("transfer_peer_slowest_gbps", two) == pytest.approx(393.9)
    one = json.loads((FIXTURES / "transfer" / "transfer.json").read_text())
    assert read("transfer_peer_slowest_gbps", one) is None
    assert read("transfer_h2d_pinned_slowest_gpu_gbps", one) == pytest.approx(55.448, abs=0.001)
