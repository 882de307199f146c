"""The docker runner against a real engine: tests/services/docker.sh starts one (and the loopback
registry) when none answers, images/build-cpu.sh builds the CPU probe image (seconds when cached)."""

from __future__ import annotations

import hashlib
import json
import statistics
import subprocess
import sys
from dataclasses import replace

import docker
import pytest

from harness.cli import main
from harness.run.outcome import Completed, Failed, judge
from harness.runners import images
from harness.runners.docker import DigestMismatch, DockerRunner, GpuUnavailable, ImageMissing
from harness.runners.images import PROJECT_ROOT, PinnedImage
from harness.runners.interface import ProbeInvocation
from harness.runners.local import LocalRunner
from harness.runners.select import select_runner

# The first test pays for the engine and, on a fresh machine, the image build (about 3 min).
pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

SERVICE = PROJECT_ROOT / "tests" / "services" / "docker.sh"
BUILD_CPU = PROJECT_ROOT / "images" / "build-cpu.sh"
TESTS = PROJECT_ROOT / "tests"


def _engine_answers() -> bool:
    return subprocess.run([str(SERVICE), "status"], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def cpu_image() -> PinnedImage:
    """The engine, the registry and the pinned CPU image; stops at the end only what it started."""
    started_here = not _engine_answers()
    subprocess.run([str(SERVICE), "start"], check=True)
    try:
        subprocess.run([str(BUILD_CPU)], check=True)
        yield images.pinned("cpu")
    finally:
        if started_here:
            subprocess.run([str(SERVICE), "stop"], check=False)


@pytest.fixture
def client(cpu_image) -> docker.DockerClient:
    return docker.from_env()


def _test_probe_runner(pinned: PinnedImage, **kwargs) -> DockerRunner:
    """A runner for the deliberately odd probes under tests/broken_probes (mounted read-only)."""
    return DockerRunner(pinned, package="tests.broken_probes", **kwargs)


def _test_probe(
    probe: str, *args: str, timeout_s: float = 60.0, mounts: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> ProbeInvocation:
    return ProbeInvocation(
        probe,
        tuple(args),
        timeout_s,
        {"PYTHONPATH": f"/opt/rig-dossier:{PROJECT_ROOT}", **(env or {})},
        mounts=(str(TESTS), *mounts),
    )


def _leftovers(client: docker.DockerClient, probe: str) -> list:
    return client.containers.list(all=True, filters={"label": f"rig-dossier.probe={probe}"})


def test_probe_output_from_a_container_validates_and_records_the_digest(cpu_image, client):
    runner = DockerRunner(cpu_image)
    run = runner.run(ProbeInvocation("health", (), 120))
    outcome = judge(run)
    assert isinstance(outcome, Completed), getattr(outcome, "reason", "")
    assert run.runner == "docker" and run.image == cpu_image.ref
    assert run.image.split("@")[1] in client.images.get(cpu_image.ref).attrs["RepoDigests"][0]
    assert run.argv == ("python3", "-m", "harness.probes.health")
    assert _leftovers(client, "health") == []


def test_cli_runs_a_probe_in_the_pinned_image(cpu_image, tmp_path, capsys):
    output = tmp_path / "health.json"
    main(["health", "--runner", "docker", "--image", "cpu", "--output", str(output)])
    assert f"pinned at {cpu_image.ref}" in capsys.readouterr().err
    assert json.loads(output.read_text())["probe"] == "health"


def test_sandbox_mounts_readonly_output_rw_no_network_allowlisted_env(cpu_image, client, tmp_path, monkeypatch):
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    monkeypatch.setenv("HF_TOKEN", "hf_must_not_enter_the_container")
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / "0123abcd").write_bytes(b"tensor bytes")
    checkpoint = tmp_path / "weights.bin"  # a symlink into a blob store, as in a cache
    checkpoint.symlink_to(tmp_path / "blobs" / "0123abcd")
    out = tmp_path / "out"
    runner = _test_probe_runner(cpu_image, output_dir=out)
    run = runner.run(
        _test_probe("sandbox", "--read", str(checkpoint), "--output-dir", str(out), mounts=(str(checkpoint),))
    )
    assert run.exit_code == 0, run.stderr_tail()
    document = json.loads(run.stdout)
    assert document["read_sha256"] == hashlib.sha256(b"tensor bytes").hexdigest()
    assert "Read-only file system" in document["write_mounted"]["unavailable"]
    assert checkpoint.read_bytes() == b"tensor bytes"
    assert document["interfaces"] == ["lo"]  # network_mode none: loopback only
    assert document["env_seen"] == {"NCCL_DEBUG": "INFO"}  # HF_TOKEN is not allowlisted
    assert run.env["NCCL_DEBUG"] == "INFO" and "HF_TOKEN" not in run.env
    assert (out / "written-inside.txt").exists()
    assert _leftovers(client, "sandbox") == []


def test_precision_reads_its_checkpoint_through_a_readonly_mount(cpu_image, tmp_path, capsys):
    output = tmp_path / "precision.json"
    assert (
        main(
            [
                "precision",
                "--runner",
                "docker",
                "--image",
                "cpu",
                "--offline",
                "--device",
                "cpu",
                "--output",
                str(output),
            ]
        )
        == 0
    )
    assert f"pinned at {cpu_image.ref}" in capsys.readouterr().err
    from harness.analysis import precision

    heads = precision.headlines(json.loads(output.read_text()))
    assert len(heads["file_sha256"]) == 64 and heads["ranks"]  # the real file was read inside


def test_stderr_streams_and_stdout_noise_stays_out_of_the_document(cpu_image):
    lines = []
    run = _test_probe_runner(cpu_image).run(_test_probe("noisy"), on_stderr_line=lines.append)
    assert json.loads(run.stdout)["value"] == 1
    assert "NCCL INFO a library talking on stdout" in lines


def test_an_image_that_is_not_the_pinned_digest_is_refused(cpu_image):
    stale_lock = replace(cpu_image, ref=f"{cpu_image.repository}@sha256:{'0' * 64}")
    # the tag still names the image, but the lock pins another digest: refused before any container
    runner = DockerRunner(stale_lock, use_ref=f"{cpu_image.repository}:latest")
    with pytest.raises(DigestMismatch) as raised:
        runner.run(ProbeInvocation("health"))
    assert cpu_image.digest in str(raised.value) and "0" * 64 in str(raised.value)
    # an image that was never pushed has no registry digest at all
    unpushed = DockerRunner(cpu_image, use_ref="rig-dossier/debian-base:bookworm")
    with pytest.raises(DigestMismatch, match="never pushed"):
        unpushed.resolve()


def test_a_pinned_digest_absent_from_the_engine_is_a_clear_error(cpu_image):
    absent = replace(cpu_image, ref=f"{cpu_image.repository}@sha256:{'1' * 64}")
    with pytest.raises(ImageMissing) as raised:
        DockerRunner(absent).run(ProbeInvocation("health"))
    assert "make images" in raised.value.hint


def test_a_container_over_its_memory_limit_is_reported_and_removed(cpu_image, client):
    run = _test_probe_runner(cpu_image, mem_limit="192m").run(_test_probe("hog", "--max-mib", "2048"))
    assert run.exit_code == 137 and not run.timed_out
    assert "OOM-killed" in run.note and "192m" in run.note
    outcome = judge(run, schema="common")
    assert isinstance(outcome, Failed) and "OOM-killed" in outcome.reason
    assert _leftovers(client, "hog") == []


def test_a_container_past_its_timeout_is_killed_reported_and_removed(cpu_image, client):
    run = _test_probe_runner(cpu_image).run(_test_probe("sleeper", timeout_s=2.0))
    assert run.timed_out and run.exit_code is None
    assert "timeout" in run.note
    assert "timed out" in judge(run, schema="common").reason
    assert _leftovers(client, "sleeper") == []


def test_gpus_without_the_nvidia_container_toolkit_are_a_clear_error(cpu_image, client):
    with pytest.raises(GpuUnavailable) as raised:
        DockerRunner(cpu_image, gpus="all").run(ProbeInvocation("health"))
    assert "NVIDIA Container Toolkit" in raised.value.hint
    assert client.containers.list(all=True, filters={"label": "rig-dossier=gpu-check"}) == []


def test_auto_takes_docker_when_the_engine_and_pinned_image_are_here(cpu_image):
    runner, why = select_runner("auto", image="cpu")
    assert runner.name == "docker" and "auto chose docker" in why and cpu_image.ref in why


def test_auto_takes_local_when_the_pinned_image_is_absent(cpu_image, tmp_path, monkeypatch):
    lock = tmp_path / "lock.local.json"
    lock.write_text(json.dumps({"cpu": f"{cpu_image.repository}@sha256:{'2' * 64}"}))
    monkeypatch.setattr(images, "LOCAL_LOCK", lock)
    runner, why = select_runner("auto", image="cpu")
    assert runner.name == "local" and "is not on the engine" in why


BANDWIDTH_ARGS = ("--device", "cpu", "--size-mib", "512", "--repeats", "3", "--point-budget-s", "0.05")


def _repeat_medians(runner, analysis) -> list[float]:
    """The bandwidth probe's repeat medians (GB/s), recomputed from its raw timings."""
    outcome = judge(runner.run(ProbeInvocation("bandwidth", BANDWIDTH_ARGS, 300)))
    assert isinstance(outcome, Completed), outcome.describe()
    assert outcome.document["device"] == "cpu"
    return analysis.headlines(outcome.document)["repeat_medians_gbps"]


def test_containerized_bandwidth_is_not_slower_than_local_beyond_the_probes_spread(cpu_image):
    from harness.analysis.bandwidth import figures as analysis

    # 512 MiB buffers: past the last-level cache of the CI machines (260 MiB), so this is DRAM.
    # The container run sits between two local runs, so that drift on a shared host shows in
    # the local spread instead of passing for a container effect.
    local = _repeat_medians(LocalRunner(), analysis)
    inside = _repeat_medians(DockerRunner(cpu_image), analysis)
    local += _repeat_medians(LocalRunner(), analysis)
    # The probe's spread: (max - min) / median of its repeat medians, over all runs of each side,
    # and never under half the local rate. This VM's memory bandwidth moves by tens of percent for
    # tens of seconds at a time, so one run can land apart from the two around it, either way: on
    # 2026-12-01 a container run read 38.6-43.6 GB/s between local runs of 27.7-31.7, and another
    # 27.7-29.5 between local runs of 36.2-39.2 (26 % slower; 2026-11-29, 24.3 against 25.8). The
    # copy is memory-bound: on one core it read 20.1-24.5 GB/s against 23.4-31.5 on two (taskset,
    # the same day), so no CPU limit shows here. What this test can see is a container costing more
    # than the VM's own drift, one way (reclaim under a memory limit, whose limit is tested above):
    # the test is one-sided, and a container under half the local rate fails.
    tolerance = max(analysis.spread(local), analysis.spread(inside), 0.5)
    difference = (statistics.median(local) - statistics.median(inside)) / statistics.median(local)
    print(
        f"bandwidth local {statistics.median(local):.2f} GB/s {local}, container "
        f"{statistics.median(inside):.2f} GB/s {inside}, container slower by {difference:.3f}, "
        f"tolerance {tolerance:.3f}",
        file=sys.stderr,
    )
    assert difference <= tolerance


def test_a_containerized_cpu_dossier_runs_end_to_end_and_verifies(cpu_image, tmp_path, capsys):
    from harness.bundle.read import read_all
    from harness.commands.diff import load_view
    from harness.present.verdict import run_verdict
    from tests.bundle_support import make_key

    key, public = make_key(tmp_path / "keys")
    code = main(
        [
            "run",
            "--runner",
            "docker",
            "--image",
            "cpu",
            "--output-dir",
            str(tmp_path),
            "--name",
            "in-containers",
            "--key",
            str(key.path),
        ]
    )
    bundle = tmp_path / "in-containers.tar.gz"
    assert main(["verify", str(bundle), "--key", str(public)]) == 0, capsys.readouterr()
    assert code == run_verdict(load_view(bundle)).exit_code  # the exit code follows the bundle's verdict
    commands = json.loads(read_all(bundle)["commands.json"])
    assert commands["runner"]["name"] == "docker" and cpu_image.ref in commands["runner"]["why"]
    ran = [step for step in commands["steps"] if step["runner"] is not None]
    assert ran and all(step["runner"] == "docker" and step["image"] == cpu_image.ref for step in ran)
