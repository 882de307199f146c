"""Image locks and runner selection, without an engine."""

from __future__ import annotations

import json
import socket

import pytest

from harness.cli import main
from harness.errors import UsageError
from harness.runners import images
from harness.runners.docker import EngineUnavailable, connect, device_requests
from harness.runners.images import ImageNotLocked, LockError
from harness.runners.select import parse_gpus, select_runner

DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64


@pytest.fixture
def locks(tmp_path, monkeypatch):
    committed, local = tmp_path / "lock.json", tmp_path / "lock.local.json"
    monkeypatch.setattr(images, "LOCK", committed)
    monkeypatch.setattr(images, "LOCAL_LOCK", local)
    return committed, local


def test_local_lock_pins_locally_built_images_on_top_of_the_committed_lock(locks):
    committed, local = locks
    committed.write_text(json.dumps({"cuda": f"ghcr.io/o/probe-cuda@{DIGEST_A}"}))
    local.write_text(json.dumps({"cpu": f"127.0.0.1:5055/rig-dossier/probe-cpu@{DIGEST_B}"}))
    pinned = images.load()
    assert pinned["cuda"].digest == DIGEST_A and pinned["cuda"].source == committed
    assert pinned["cpu"].repository == "127.0.0.1:5055/rig-dossier/probe-cpu"
    assert pinned["cpu"].digest == DIGEST_B and pinned["cpu"].source == local


def test_a_local_lock_cannot_redirect_a_published_image(locks):
    committed, local = locks
    committed.write_text(json.dumps({"cuda": f"ghcr.io/o/probe-cuda@{DIGEST_A}"}))
    local.write_text(json.dumps({"cuda": f"evil.example/probe-cuda@{DIGEST_B}"}))
    with pytest.raises(LockError, match="not built locally"):
        images.load()


@pytest.mark.parametrize("ref", ["pytorch/pytorch:2.11.0", "repo@sha256:abc", f"repo@{DIGEST_A} "])
def test_a_lock_entry_must_pin_a_full_digest(locks, ref):
    locks[0].write_text(json.dumps({"cuda": ref}))
    with pytest.raises(LockError, match="REPOSITORY@sha256"):
        images.load()


def test_an_unpinned_image_says_how_to_pin_it(locks):
    with pytest.raises(ImageNotLocked) as cpu:
        images.pinned("cpu")
    assert "make images" in cpu.value.hint
    with pytest.raises(ImageNotLocked) as cuda:
        images.pinned("cuda")
    assert "images/lock.json" in cuda.value.hint


def test_the_committed_lock_parses():
    assert isinstance(images.load(local_lock=images.PROJECT_ROOT / "does-not-exist.json"), dict)


def test_gpu_requests():
    assert device_requests(None) == []
    [every] = device_requests("all")
    assert every["Count"] == -1 and every["Capabilities"] == [["gpu"]]
    [chosen] = device_requests(parse_gpus("0, 2"))
    assert chosen["DeviceIDs"] == ["0", "2"]
    assert parse_gpus("none") is None
    with pytest.raises(UsageError):
        parse_gpus(",")


def test_an_absent_engine_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(EngineUnavailable) as raised:
        connect(timeout_s=2)
    assert "no-engine.sock" in str(raised.value) and "--runner local" in raised.value.hint
    assert str(raised.value).endswith(": nothing is there (no such socket)")  # no exception repr


def test_a_socket_nobody_listens_on_is_named_as_refused(monkeypatch, tmp_path):
    path = tmp_path / "bound.sock"
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind(str(path))  # bound but not listening: connecting is refused
        monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
        with pytest.raises(EngineUnavailable) as raised:
            connect(timeout_s=2)
    assert str(raised.value) == f"no Docker engine answers at unix://{path}: the connection was refused"


def test_auto_falls_back_to_local_and_says_why_when_no_engine_answers(monkeypatch, tmp_path, locks):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    locks[1].write_text(json.dumps({"cpu": f"127.0.0.1:5055/rig-dossier/probe-cpu@{DIGEST_B}"}))
    runner, why = select_runner("auto", image="cpu")
    assert runner.name == "local"
    assert why == (
        f"--runner auto chose local because docker is not usable: no Docker engine answers at "
        f"unix://{tmp_path}/no-engine.sock: nothing is there (no such socket)"
    )


def test_cli_with_runner_docker_and_no_engine_exits_4_with_a_hint(monkeypatch, tmp_path, locks, capsys):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    locks[1].write_text(json.dumps({"cpu": f"127.0.0.1:5055/rig-dossier/probe-cpu@{DIGEST_B}"}))
    code = main(["health", "--runner", "docker", "--image", "cpu", "--output", str(tmp_path / "h.json")])
    err = capsys.readouterr().err
    assert code == 4
    assert "error: no Docker engine answers" in err and "hint:" in err and "Traceback" not in err


def test_runner_local_needs_no_engine():
    runner, why = select_runner("local")
    assert runner.name == "local" and "--runner local" in why
    with pytest.raises(UsageError):
        select_runner("kubernetes")
