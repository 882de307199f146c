"""The all-reduce probe on this CPU machine: real gloo curves, real process deaths and hangs,
the NCCL limitation path, the torchrun/Slurm launcher and the `dossier allreduce` command.

Every worker here is a real process running a real torch.distributed all-reduce; sizes and
time budgets are kept small so the module runs in well under a minute on two cores.
"""

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.analysis import allreduce as allreduce_analysis
from harness.analysis.allreduce import evidence
from harness.analysis.allreduce import figures as ar
from harness.cli import main
from harness.probes import allreduce as probe
from harness.probes.allreduce import campaign, setup
from harness.probes.contract import ProbeUsageError, probe_main
from harness.run.outcome import Completed, judge
from harness.runners.interface import ProbeInvocation
from harness.runners.local import PROJECT_ROOT, LocalRunner
from harness.schemas import violations
from tests.analysis.test_analysis_allreduce import independent_alpha_beta

QUICK = ["--backend", "gloo", "--time-budget-s", "0.01"]


@pytest.fixture(scope="module")
def gloo_run(tmp_path_factory):
    """One real `dossier allreduce` on gloo, world sizes 2 and 3, 8 B .. 1 MiB."""
    out = tmp_path_factory.mktemp("allreduce") / "allreduce.json"
    code = main(["allreduce", *QUICK, "--world-size", "2,3", "--max-bytes", "1M", "-o", str(out)])
    return code, out, json.loads(out.read_text())


def test_gloo_run_gives_real_verified_curves_with_knees(gloo_run):
    code, _, document = gloo_run
    assert code == 0
    assert violations("allreduce", document) == []
    assert [(r["world_size"], r["curve"], r["status"]) for r in document["runs"]] == [
        (2, "normal", "completed"),
        (3, "normal", "completed"),
    ]
    for run in document["runs"]:
        assert [p["bytes"] for p in run["points"]] == ar.sweep_sizes(8, 2**20)
        assert all(p["verified"] and len(p["rank_median_time_us"]) == run["world_size"] for p in run["points"])
        # every rank's per-call times are kept, and each rank's median is theirs
        for p in run["points"]:
            assert [len(t) for t in p["rank_times_us"]] == [p["iterations"]] * run["world_size"]
            assert p["rank_median_time_us"] == [statistics.median(t) for t in p["rank_times_us"]]
        # knee fitting on a real run, against the same fit written another way. On a busy 2-core CPU
        # the knee can land past the largest size swept, or the noise leave no startup regime to
        # resolve (fitted alpha <= 0): then the fit is unavailable with that reason, never invented.
        alpha, beta = independent_alpha_beta(
            [p["bytes"] for p in run["points"]], [max(p["rank_median_time_us"]) * 1e-6 for p in run["points"]]
        )
        if "unavailable" in run["fit"]:
            assert alpha <= 0 or beta <= 0, run["fit"]
        else:
            assert run["fit"]["alpha_us"] > 0 and run["fit"]["beta_gbps"] > 0
            assert run["fit"]["alpha_us"] == pytest.approx(alpha * 1e6, rel=1e-6)
            assert run["fit"]["knee_bytes"] == pytest.approx(alpha * beta, rel=1e-6)
        assert run["half_plateau"]["half_plateau_bytes"] in ar.sweep_sizes(8, 2**20)
        assert run["points"][0]["nccl_algorithm"] == {
            "unavailable": "backend gloo: NCCL's algorithm choice does not apply"
        }
    assert allreduce_analysis.discrepancies(document) == []


def test_gloo_run_records_prediction_before_measuring_and_compares(gloo_run):
    _, _, document = gloo_run
    prediction = document["prediction"]
    assert prediction["multipliers"] == {"2": 1.0, "3": pytest.approx(4 / 3)}
    assert prediction["written_at"] < document["runs"][0]["started_at"]
    assert document["ring_comparison"]["by_world_size"]["3"]["compared"]
    assert document["ring_comparison"]["by_world_size"]["3"]["predicted_algbw_ratio"] == pytest.approx(0.75)


def test_gloo_run_records_control_as_not_applicable_and_nvls_off(gloo_run):
    _, _, document = gloo_run
    whats = [item["what"] for item in document["limitations"]]
    assert "P2P-disabled control curve" in whats
    assert document["nvls"]["NCCL_NVLS_ENABLE"] == "0"
    env = document["runs"][0]["environment"]
    assert env["NCCL_NVLS_ENABLE"] == "0" and env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert env["NVSHMEM_DISABLE_NVLS"] == "1" and "NCCL_P2P_DISABLE" not in env
    assert "fresh processes" in document["sizing"] and "two CPU cores" in document["sizing"]


def test_command_writes_a_deterministic_plot(gloo_run, tmp_path):
    from harness.present.plots.allreduce import render

    _, out, document = gloo_run
    assert out.with_suffix(".png").stat().st_size > 0 and out.with_suffix(".svg").exists()
    again = render(document, tmp_path / "again")  # same document, same bytes as the command wrote
    assert [p.read_bytes() for p in again] == [out.with_suffix(s).read_bytes() for s in (".png", ".svg")]


def test_a_rank_that_dies_is_named_and_the_points_before_are_kept(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(probe.FAULT_ENV, "die:1:4096")
    out = tmp_path / "allreduce.json"
    code = main(["allreduce", *QUICK, "--max-bytes", "64K", "--no-plot", "-o", str(out)])
    assert code == 1  # a check failed, and the JSON is still written and valid
    err = capsys.readouterr().err
    assert "rank 1 was killed by SIGKILL during the 4096-byte all-reduce" in err
    document = json.loads(out.read_text())
    assert violations("allreduce", document) == []
    run = document["runs"][0]
    assert run["status"] == "failed"
    assert run["failure"]["kind"] == "rank_killed" and run["failure"]["rank"] == 1
    assert run["failure"]["signal"] == "SIGKILL" and run["failure"]["at_bytes"] == 4096
    assert [p["bytes"] for p in run["points"]] == [8, 16, 32, 64, 128, 256, 512, 1024, 2048]
    # the partial curve is still analysed: a fit, or the fit's own reason (9 small sizes on a busy
    # CPU may show no time growth at all)
    assert (run["fit"].get("knee_bytes") or 0) > 0 or run["fit"].get("unavailable")
    assert any("stopped early (9 point(s) up to 2 KiB kept)" in item["what"] for item in document["limitations"])
    assert document["test_hooks"]["fault"] == {"kind": "die", "rank": 1, "bytes": 4096}


@pytest.mark.timeout(120)
def test_a_hung_rank_times_out_without_hanging(tmp_path, monkeypatch):
    monkeypatch.setenv(probe.FAULT_ENV, "hang:1:1024")
    mark = f"{os.getpid()}-{time.monotonic_ns()}"  # tells this run's workers from any other's
    monkeypatch.setenv("DOSSIER_TEST_RUN_MARK", mark)
    started = time.monotonic()
    run = LocalRunner().run(ProbeInvocation("allreduce", (*QUICK, "--max-bytes", "8K", "--size-timeout-s", "2"), 120))
    assert time.monotonic() - started < 90
    outcome = judge(run)
    assert isinstance(outcome, Completed), outcome
    failure = outcome.document["runs"][0]["failure"]
    assert failure["kind"] == "timeout" and failure["at_bytes"] == 1024
    assert "no progress for 2 s" in failure["message"]
    # the stacks the supervisor asked for show where each rank was
    assert "apply_fault" in failure["ranks"]["1"]["stderr_tail"]
    assert "all_reduce" in failure["ranks"]["0"]["stderr_tail"]
    assert [p["bytes"] for p in outcome.document["runs"][0]["points"]] == [8, 16, 32, 64, 128, 256, 512]
    assert not _workers_left(mark)


def _workers_left(mark):
    """Live worker processes of the run carrying MARK in their environment."""
    found = subprocess.run(["pgrep", "-f", "harness.probes.collective.worker"], capture_output=True, text=True)
    left = []
    for pid in found.stdout.split():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:  # ended between pgrep and here
            continue
        if f"DOSSIER_TEST_RUN_MARK={mark}".encode() in environ.split(b"\0"):
            left.append(pid)
    return left


def test_nccl_on_this_cpu_machine_records_limitations_never_a_curve():
    run = LocalRunner().run(ProbeInvocation("allreduce", ("--backend", "nccl"), 120))
    outcome = judge(run)
    assert isinstance(outcome, Completed), outcome
    document = outcome.document
    assert document["runs"] == [] and document["world_sizes"] == []
    whats = {item["what"]: item["why"] for item in document["limitations"]}
    assert "0 visible GPUs: all-reduce needs at least 2" in whats
    assert any("NCCL is missing" in why for why in whats.values())
    assert ar.headlines(document)["curves"] == {}


def host(gpus, nccl=True):
    return probe.Host(
        torch_version="2.11.0+cu130",
        distributed=True,
        nccl_available=nccl,
        gloo_available=True,
        gpu_count=gpus,
        nccl_version="2.28.9",
    )


def test_one_visible_gpu_is_a_recorded_limitation():
    limitations = []
    assert probe.plan_world_sizes(None, "nccl", host(1), limitations) == []
    assert limitations[0]["what"] == "1 visible GPU: all-reduce needs at least 2"
    assert "simulated" in limitations[0]["why"]


@pytest.mark.parametrize(
    "gpus, requested, expected, limited",
    [
        (2, None, [2], []),
        (4, None, [2, 4], []),
        (8, None, [2, 4, 8], []),
        (2, "2,4", [2], ["world size 4"]),
        (8, "2", [2], []),
    ],
)
def test_world_sizes_follow_the_gpus(gpus, requested, expected, limited):
    limitations = []
    assert probe.plan_world_sizes(requested, "nccl", host(gpus), limitations) == expected
    assert [item["what"] for item in limitations] == limited


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--max-bytes", "1X"], "cannot read '1X'"),
        (["--min-bytes", "1M", "--max-bytes", "64K"], "larger than"),
        (["--min-bytes", "12"], "power of two"),
        (["--world-size", "1"], "at least 2 ranks"),
        (["--time-budget-s", "0"], "must be positive"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(argv, message, capsys):
    assert probe_main("allreduce", probe.build_parser, probe.measure, ["--backend", "gloo", *argv]) == 2
    assert message in capsys.readouterr().err


def test_command_rejects_a_bad_size_before_running(tmp_path, capsys):
    assert main(["allreduce", "--max-bytes", "lots", "-o", str(tmp_path / "x.json")]) == 2
    assert "cannot read 'lots'" in capsys.readouterr().err


def test_control_curve_environment_disables_p2p_and_never_multicast():
    settings = probe.Settings("nccl", (8,), 1, 1, 1, 0.1, 10, 10, True, None)
    base = {"NCCL_P2P_DISABLE": "1", "NCCL_NVLS_ENABLE": "1", "HF_TOKEN": "secret", "NCCL_IB_HCA": "mlx5_0"}
    normal, changed = setup.curve_env(base, "normal", settings, spawn=True)
    control, _ = setup.curve_env(base, "p2p_disabled", settings, spawn=True)
    assert "NCCL_P2P_DISABLE" not in normal and changed["NCCL_P2P_DISABLE"] == {"was": "1", "now": None}
    assert control["NCCL_P2P_DISABLE"] == "1"
    for env in (normal, control):
        assert env["NCCL_NVLS_ENABLE"] == "0" and env["NVSHMEM_DISABLE_NVLS"] == "1"
        assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_DEBUG_SUBSYS"] == "INIT,TUNING"
    assert changed["NCCL_NVLS_ENABLE"] == {"was": "1", "now": "0"}
    recorded = setup.recorded(normal)
    assert "HF_TOKEN" not in recorded and recorded["NCCL_IB_HCA"] == "mlx5_0"


def test_rendezvous_from_slurm_needs_a_master_address():
    slurm = {"SLURM_PROCID": "1", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1", "SLURM_TASKS_PER_NODE": "2(x2)"}
    with pytest.raises(ProbeUsageError, match="--master-addr"):
        probe.rendezvous_from_env(slurm, None, None)
    found = probe.rendezvous_from_env(slurm, "node-a", None)
    assert (
        found.source,
        found.rank,
        found.world_size,
        found.local_rank,
        found.local_world_size,
        found.master_port,
    ) == ("slurm", 1, 4, 1, 2, 29500)
    torchrun = {
        "RANK": "0",
        "WORLD_SIZE": "2",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "h",
        "MASTER_PORT": "1234",
        "TORCHELASTIC_RUN_ID": "x",
    }
    assert probe.rendezvous_from_env(torchrun, None, None).source == "torchrun"
    with pytest.raises(ProbeUsageError, match="RANK and WORLD_SIZE"):
        probe.rendezvous_from_env({}, None, None)


def test_env_launcher_as_two_srun_tasks_only_rank_0_prints(tmp_path):
    """Two probe processes with Slurm's variables (what srun sets), meeting on a local port."""
    port = setup.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "RANK", "WORLD_SIZE", "MASTER_"))}
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    procs = []
    for rank in (0, 1):
        task_env = dict(
            env,
            SLURM_PROCID=str(rank),
            SLURM_NTASKS="2",
            SLURM_LOCALID=str(rank),
            SLURM_TASKS_PER_NODE="2",
            GLOO_SOCKET_IFNAME="lo",
        )
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "harness.probes.allreduce",
                    "--launcher",
                    "env",
                    *QUICK,
                    "--max-bytes",
                    "256",
                    "--master-addr",
                    "127.0.0.1",
                    "--master-port",
                    str(port),
                ],
                env=task_env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs[1][1].decode()[-2000:]
    assert outputs[1][0] == b""  # rank 1 prints nothing on stdout
    document = json.loads(outputs[0][0])
    assert violations("allreduce", document) == []
    assert document["launcher"] == "env" and document["rendezvous"]["source"] == "slurm"
    assert document["rendezvous"]["base_port"] == port
    assert [p["bytes"] for p in document["runs"][0]["points"]] == [8, 16, 32, 64, 128, 256]
    assert len(document["runs"][0]["points"][0]["rank_median_time_us"]) == 2


def test_nccl_document_pieces_from_a_real_format_log():
    """The NCCL-only document paths, offline: algorithm per size, transports, NVLS, the explanation."""
    settings = probe.Settings("nccl", (8, 1024), 1, 1, 1, 0.1, 10, 10, True, None)
    log_lines = {
        "normal": [
            "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
            "h:1:1 [0] NCCL INFO NVLS multicast support is not available on dev 0 (NVLS_NCHANNELS 16)",
            "h:1:1 [0] NCCL INFO AllReduce: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}",
            "h:1:1 [0] NCCL INFO AllReduce: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}",
            "h:1:1 [0] NCCL INFO AllReduce: 24 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}",
        ],
        "p2p_disabled": ["h:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct"],
    }
    speed = {"normal": 300.0, "p2p_disabled": 20.0}  # GB/s at 1 KiB, made up for the arithmetic only
    runs = []
    for curve in ar.CURVES:
        raw = [
            {
                "bytes": b,
                "elements": b // 4,
                "iterations": 5,
                "warmup_iterations": 1,
                "rank_median_time_us": [10 + b / speed[curve] / 1e3, 10.0],
            }
            for b in (8, 1024)
        ]
        env, changed = setup.curve_env({}, curve, settings, spawn=True)
        runs.append(
            campaign.assemble_run(
                2,
                curve,
                "2026-01-01T00:00:00.000000Z",
                "2026-01-01T00:00:01.000000Z",
                env,
                changed,
                raw,
                None,
                "\n".join(log_lines[curve]),
                settings,
            )
        )
    normal, control = runs
    assert normal["points"][0]["nccl_algorithm"] == {"RING/LL": 2}
    assert "no 'AllReduce: 1024 Bytes -> Algo' line" in normal["points"][1]["nccl_algorithm"]["unavailable"]
    assert normal["nccl"]["algorithms_seen"] == ["RING/LL"]  # the 24-byte control message is not a sweep size
    assert control["environment"]["NCCL_P2P_DISABLE"] == "1"
    nvls = evidence.nvls_record(runs, probe.NO_MULTICAST)
    assert nvls["nvls_algorithm_seen"] is False and nvls["nccl_reported"][0].startswith("NVLS multicast support is not")
    topology = {
        "gpu_indices": [0, 1],
        "gpu_pairs": {"GPU0-GPU1": "NV18"},
        "nvml": {"devices": [{"pcie": {"max_gen": 5, "max_width": 16}}]},
    }
    explained = evidence.explanations(runs, topology)["2"]
    assert explained["explained"] and "NV18" in explained["text"] and "SHM/direct/direct" in explained["text"]
    assert explained["gap"]["busbw_ratio"] > 1


def test_verify_recomputes_the_medians_from_the_kept_per_call_times(gloo_run, tmp_path):
    """Item 15: a real gloo document in a signed bundle; every per-call time multiplied by 3 and the
    bundle re-signed with the right key must fail, naming the medians the times no longer give."""
    from harness.signing.keys import load_public
    from harness.verify import verify_bundle
    from tests.accept_support import write_bundle
    from tests.bundle_support import make_key, rewrite

    _, _, document = gloo_run
    assert document["contract_version"] >= 2
    key, public = make_key(tmp_path / "k")
    path = write_bundle(tmp_path / "gloo.tar.gz", {"allreduce": document}, key)
    assert verify_bundle(path, load_public(public)).failures == []

    def slower(files):
        tampered = json.loads(files["raw/allreduce.json"])
        for run in tampered["runs"]:
            for point in run["points"]:
                point["rank_times_us"] = [[t * 3 for t in rank] for rank in point["rank_times_us"]]
        files["raw/allreduce.json"] = json.dumps(tampered, sort_keys=True).encode()

    found = verify_bundle(
        rewrite(path, tmp_path / "slower.tar.gz", slower, resign_with=key), load_public(public)
    ).failures
    # signature, hashes and schemas pass; the figures fail (and so does the report re-rendered from them)
    assert found and "figures" in {f.check for f in found} <= {"figures", "report"}
    assert any(
        f.subject == "raw/allreduce.json" and "rank_median_time_us" in f.detail and "rank_times_us" in f.detail
        for f in found
    )


def test_a_contract_2_point_without_its_per_call_times_breaks_the_schema(gloo_run):
    _, _, document = gloo_run
    stripped = json.loads(json.dumps(document))
    del stripped["runs"][0]["points"][0]["rank_times_us"]
    assert any("rank_times_us" in v.message for v in violations("allreduce", stripped))
    stripped["contract_version"] = 1  # a document from before the times were kept
    for run in stripped["runs"]:
        for point in run["points"]:
            point.pop("rank_times_us", None)
    assert violations("allreduce", stripped) == []
    assert allreduce_analysis.discrepancies(stripped) == []  # its stated medians are checked as stated
    assert "not recomputable from per-call times" in ar.headlines(stripped)["medians_from"]
