"""`--runner auto|docker|local`: which runner runs the probes, and why (the bundle records why)."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from pathlib import Path
from typing import assert_never

from harness.errors import DossierError, UsageError
from harness.runners import images
from harness.runners.interface import Runner
from harness.runners.local import LocalRunner


class RunnerChoice(enum.StrEnum):
    AUTO = "auto"
    DOCKER = "docker"
    LOCAL = "local"


def host_has_nvidia_gpu() -> tuple[bool, str]:
    """Whether NVML sees a GPU on this host, and what it said."""
    from harness.probes.nvml import NvmlSession

    with NvmlSession() as nvml:
        if not nvml.ok:
            return False, f"NVML: {nvml.reason}"
        count = nvml.pynvml.nvmlDeviceGetCount()
    return count > 0, f"NVML sees {count} GPU(s)"


def default_image() -> tuple[str, str]:
    """(image name, why): the CUDA image where NVML sees a GPU, else the CPU one."""
    has_gpu, seen = host_has_nvidia_gpu()
    return ("cuda", seen) if has_gpu else ("cpu", seen)


GPU_IMAGES = frozenset({"cuda"})  # images that get every GPU unless --gpus says otherwise


def parse_gpus(text: str | None) -> str | list[str] | None:
    """--gpus: "all", "none", or comma-separated device indices or UUIDs."""
    if text is None or text == "none":
        return None
    if text == "all":
        return "all"
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids:
        raise UsageError(f"--gpus {text!r}: expected all, none, or device ids like 0,1")
    return ids


def docker_runner(
    image: str | None = None, gpus: str | None = None, mem_limit: str | None = None, output_dir: Path | None = None
) -> tuple[Runner, str]:
    """The docker runner for the pinned image; raises what is missing (engine, lock, image, digest)."""
    from harness.runners.docker import DockerRunner, connect

    name, seen = default_image() if image is None else (image, "asked for")
    pinned = images.pinned(name)
    if gpus is None:
        gpus = "all" if name in GPU_IMAGES else "none"
    runner = DockerRunner(pinned, client=connect(), mem_limit=mem_limit, output_dir=output_dir, gpus=parse_gpus(gpus))
    runner.check_gpus_inside(runner.resolve())  # present, the pinned digest, GPUs inside if asked
    return runner, f"image {name!r} ({seen}) pinned at {pinned.ref}, GPUs: {gpus}"


def first_line(exc: BaseException) -> str:
    """An error's message as one line (its hint, if any, is not part of it)."""
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def select_runner(
    choice: str,
    *,
    image: str | None = None,
    gpus: str | None = None,
    mem_limit: str | None = None,
    output_dir: Path | None = None,
) -> tuple[Runner, str]:
    """(runner, why). auto: docker when an engine answers and the pinned image is there, else local."""
    try:
        picked = RunnerChoice(choice)
    except ValueError:
        raise UsageError(f"--runner {choice!r}: expected one of " + ", ".join(c.value for c in RunnerChoice)) from None
    if picked is RunnerChoice.LOCAL:
        return LocalRunner(), "--runner local: probes run as local processes"
    if picked is RunnerChoice.DOCKER:
        runner, why = docker_runner(image, gpus, mem_limit, output_dir)
        return runner, f"--runner docker: {why}"
    if picked is RunnerChoice.AUTO:
        try:
            runner, why = docker_runner(image, gpus, mem_limit, output_dir)
        except DossierError as exc:  # no engine, no lock entry, image absent or not the pinned digest
            return LocalRunner(), f"--runner auto chose local because docker is not usable: {first_line(exc)}"
        return runner, f"--runner auto chose docker: {why}"
    assert_never(picked)


RUNNER_CHOICES: Sequence[str] = tuple(c.value for c in RunnerChoice)
