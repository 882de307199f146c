"""The docker runner: each probe in its pinned image, by digest, through the Docker SDK.

A container gets no network, only the GPUs asked for, the output folder (read-write) and the
host files the probe declared (read-only, at the same paths), and the allowlisted environment.
It is removed whatever happens. What the engine cannot do is raised as an EnvironmentProblem
with a hint (no engine, image missing or not the pinned digest, no GPU inside); what happens to
the probe (it crashed, was OOM-killed, timed out) is recorded in the ProbeRun, like the local
runner does, so one probe's failure never stops a dossier.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import docker
import requests
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.types import DeviceRequest, LogConfig, Mount

from harness.errors import EnvironmentProblem
from harness.probes.contract import utc_now
from harness.runners.environment import recorded_environment
from harness.runners.images import PinnedImage
from harness.runners.interface import STOP_GRACE_S, LineCallback, ProbeInvocation, ProbeRun

PYTHON = "python3"  # on PATH in both images (the CPU image's venv, the PyTorch image's conda)
GPU_CHECK = "import glob, sys; sys.exit(0 if glob.glob('/dev/nvidia[0-9]*') else 3)"
# The runner decides which GPUs a container sees; the host's own selection would contradict it.
NOT_PASSED = frozenset({"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"})


class EngineUnavailable(EnvironmentProblem):
    """No Docker engine answers."""


class ImageMissing(EnvironmentProblem):
    """The pinned image is not on this engine."""


class DigestMismatch(EnvironmentProblem):
    """The image found is not the one the lock pins."""


class GpuUnavailable(EnvironmentProblem):
    """GPUs were asked for but the container cannot have them (NVIDIA Container Toolkit)."""


def engine_address() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


CONNECTION_CAUSES: tuple[tuple[type[BaseException], str], ...] = (
    (FileNotFoundError, "nothing is there (no such socket)"),
    (ConnectionRefusedError, "the connection was refused"),
    (PermissionError, "permission denied (this user may not use the engine's socket)"),
    (TimeoutError, "it did not answer in time"),
    (requests.Timeout, "it did not answer in time"),
)


def connection_cause(exc: BaseException) -> str:
    """Why a connection to the engine failed, in words: the first cause found in the exception's
    chain and arguments (requests wraps urllib3, which wraps the socket's OSError as an argument)."""
    seen: set[int] = set()
    queue: list[BaseException] = [exc]
    while queue:
        current = queue.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        for kind, words in CONNECTION_CAUSES:
            if isinstance(current, kind):
                return words
        queue += [c for c in (current.__cause__, current.__context__) if c is not None]
        queue += [a for a in current.args if isinstance(a, BaseException)]
    return f"it did not answer ({type(exc).__name__})"


def connect(timeout_s: float = 10.0) -> docker.DockerClient:
    """A client to an engine that answered a ping, or EngineUnavailable (the cause in words)."""
    try:
        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except (DockerException, requests.RequestException) as exc:
        raise EngineUnavailable(
            f"no Docker engine answers at {engine_address()}: {connection_cause(exc)}",
            hint="start one (tests/services/docker.sh start, or your system's docker service), "
            "point DOCKER_HOST at it, or use --runner local",
        ) from exc
    return client


def device_requests(gpus: str | Sequence[str] | None) -> list[DeviceRequest]:
    """None: no GPU; "all": every GPU; a list of ids or UUIDs: those."""
    if gpus is None:
        return []
    if gpus == "all":
        return [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    ids = [gpus] if isinstance(gpus, str) else list(gpus)
    return [DeviceRequest(device_ids=[str(i) for i in ids], capabilities=[["gpu"]])]


class DockerRunner:
    """Runs `python3 -m PACKAGE.NAME ARGS` in the pinned image, one container per probe."""

    name = "docker"

    def __init__(
        self,
        pinned: PinnedImage,
        *,
        client: docker.DockerClient | None = None,
        gpus: str | Sequence[str] | None = None,
        mem_limit: str | int | None = None,
        output_dir: Path | None = None,
        use_ref: str | None = None,
        package: str = "harness.probes",
    ) -> None:
        self.pinned = pinned
        self.use_ref = use_ref or pinned.ref  # e.g. a local tag, refused unless it is the pinned digest
        self.gpus = gpus
        self.mem_limit = mem_limit
        self.output_dir = output_dir
        self.package = package
        self._client = client
        self._gpus_checked = False
        self._running: set[int] = set()  # host pids of the running containers' init (probe_pids)

    def probe_pids(self) -> tuple[int, ...]:
        """The host pids of the running probes' containers (their init, as the host sees it): the
        processes below them are the harness's own when `dossier run` reads the host (harness.run.host_load)."""
        return tuple(self._running)

    def _track(self, container: Any) -> int | None:
        """The started container's init pid on the host, remembered while it runs (None if unread)."""
        try:
            container.reload()
            pid = container.attrs.get("State", {}).get("Pid")
        except (APIError, requests.RequestException):
            return None
        if isinstance(pid, int) and pid > 0:
            self._running.add(pid)
            return pid
        return None

    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            self._client = connect()
        return self._client

    def argv_for(self, invocation: ProbeInvocation) -> list[str]:
        return [PYTHON, "-m", f"{self.package}.{invocation.probe}", *invocation.args]

    def resolve(self) -> Any:
        """The local image to run: present, and carrying the lock's registry digest."""
        try:
            image = self.client.images.get(self.use_ref)
        except ImageNotFound as exc:
            raise ImageMissing(
                f"image {self.use_ref} (pinned as {self.pinned.name!r} in {self.pinned.source.name}) "
                f"is not on the engine at {engine_address()}",
                hint=f"`make images` for locally built images, or `docker pull {self.pinned.ref}`",
            ) from exc
        except APIError as exc:
            raise EngineUnavailable(f"the engine could not look up {self.use_ref}: {exc}") from exc
        digests = [d.split("@", 1)[1] for d in image.attrs.get("RepoDigests") or [] if "@" in d]
        if self.pinned.digest not in digests:
            found = ", ".join(digests) or "none (never pushed to or pulled from a registry)"
            raise DigestMismatch(
                f"refusing image {self.use_ref}: its registry digest is {found}, "
                f"but {self.pinned.source.name} pins {self.pinned.name!r} at {self.pinned.digest}",
                hint="rebuild and re-pin it (`make images` for local images), or run the pinned "
                f"reference {self.pinned.ref}",
            )
        return image

    def container_env(self, invocation: ProbeInvocation) -> dict[str, str]:
        env = {k: v for k, v in recorded_environment().items() if k not in NOT_PASSED}
        env.update(invocation.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        return env

    def mounts_for(self, invocation: ProbeInvocation) -> list[Mount]:
        mounts = []
        if self.output_dir is not None:
            out = Path(self.output_dir).resolve()
            out.mkdir(parents=True, exist_ok=True)
            mounts.append(Mount(str(out), str(out), type="bind", read_only=False))
        for host_path in invocation.mounts:
            # Inside, the path the probe was given (a symlink in a cache, say); its target behind it.
            seen_as, source = os.path.abspath(host_path), Path(host_path).resolve()
            if not source.exists():
                raise EnvironmentProblem(
                    f"probe {invocation.probe} needs {host_path}, which does not exist",
                    hint="check the path given to the probe",
                )
            mounts.append(Mount(seen_as, str(source), type="bind", read_only=True))
        return mounts

    def check_gpus_inside(self, image: Any) -> None:
        """Once per runner: a throwaway container must see an NVIDIA device when GPUs are asked for."""
        if self._gpus_checked or not self.gpus:
            return
        container = None
        try:
            container = self.client.containers.create(
                image.id,
                [PYTHON, "-c", GPU_CHECK],
                network_mode="none",
                device_requests=device_requests(self.gpus),
                labels={"rig-dossier": "gpu-check"},
            )
            container.start()
            status = container.wait(timeout=60).get("StatusCode")
        except APIError as exc:
            raise GpuUnavailable(
                f"the engine cannot give the container GPUs ({self.gpus}): {exc.explanation or exc}",
                hint="install and configure the NVIDIA Container Toolkit "
                "(nvidia-ctk runtime configure --runtime=docker), or use --gpus none "
                "or --runner local",
            ) from exc
        finally:
            if container is not None:
                _remove(container)
        if status != 0:
            raise GpuUnavailable(
                f"GPUs were requested ({self.gpus}) but no NVIDIA device is visible inside the container",
                hint="check the NVIDIA Container Toolkit and the driver on this host (nvidia-smi), "
                "or use --gpus none or --runner local",
            )
        self._gpus_checked = True

    def run(self, invocation: ProbeInvocation, on_stderr_line: LineCallback | None = None) -> ProbeRun:
        image = self.resolve()
        self.check_gpus_inside(image)
        argv = self.argv_for(invocation)
        env = self.container_env(invocation)
        mounts = self.mounts_for(invocation)
        try:
            container = self.client.containers.create(
                image.id,
                argv,
                environment=env,
                mounts=mounts,
                network_mode="none",
                device_requests=device_requests(self.gpus),
                mem_limit=self.mem_limit,
                memswap_limit=self.mem_limit,  # no swap: the limit is the limit
                user=f"{os.getuid()}:{os.getgid()}",
                # stdout is read back from the engine's log: json-file whatever the host's default
                log_config=LogConfig(type=LogConfig.types.JSON),
                name=f"rig-dossier-{invocation.probe}-{uuid.uuid4().hex[:8]}",
                labels={"rig-dossier": "probe", "rig-dossier.probe": invocation.probe},
            )
        except APIError as exc:
            raise EnvironmentProblem(
                f"the engine refused to create the container for {invocation.probe}: {exc.explanation or exc}"
            ) from exc
        try:
            return self._run_container(container, invocation, argv, env, on_stderr_line)
        finally:
            _remove(container)

    def _run_container(
        self,
        container: Any,
        invocation: ProbeInvocation,
        argv: list[str],
        env: dict[str, str],
        on_stderr_line: LineCallback | None,
    ) -> ProbeRun:
        started = utc_now()
        try:
            container.start()
        except APIError as exc:
            raise EnvironmentProblem(
                f"the engine could not start the container for {invocation.probe}: {exc.explanation or exc}"
            ) from exc
        follower = threading.Thread(target=_follow_stderr, args=(container, on_stderr_line), daemon=True)
        follower.start()
        pid = self._track(container)
        timed_out = False
        try:
            exit_code: int | None = container.wait(timeout=invocation.timeout_s).get("StatusCode")
        except requests.RequestException:  # the wait's read timeout: the probe ran too long
            timed_out, exit_code = True, None
            _kill(container)
        except BaseException:  # Ctrl-C or SIGTERM: the probe stops first (SIGTERM, then SIGKILL after the grace)
            _stop(container)
            raise
        finally:
            self._running.discard(pid or 0)
        follower.join(timeout=10)
        container.reload()
        oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
        return ProbeRun(
            probe=invocation.probe,
            argv=tuple(argv),
            env=recorded_environment(env),
            runner=self.name,
            image=self.pinned.ref,
            started_at=started,
            finished_at=utc_now(),
            exit_code=exit_code,
            timed_out=timed_out,
            stdout=container.logs(stdout=True, stderr=False),
            stderr=container.logs(stdout=False, stderr=True),
            note=_note(invocation, timed_out, oom, self.mem_limit),
        )


def _note(invocation: ProbeInvocation, timed_out: bool, oom: bool, mem_limit: str | int | None) -> str | None:
    if timed_out:
        return f"killed after {invocation.timeout_s:g} s timeout; container removed"
    if oom:
        return f"OOM-killed: the container went over its memory limit ({mem_limit}); container removed"
    return None


def _follow_stderr(container: Any, on_line: LineCallback | None) -> None:
    """Hand each stderr line to the callback while the container runs (progress lines)."""
    if on_line is None:
        return
    pending = b""
    try:
        for chunk in container.logs(stdout=False, stderr=True, stream=True, follow=True):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                on_line(line.decode("utf-8", "replace"))
    except (DockerException, requests.RequestException):
        return  # the container went away: the full stderr is read again after the run
    if pending:
        on_line(pending.decode("utf-8", "replace"))


def _kill(container: Any) -> None:
    try:
        container.kill()
    except (NotFound, APIError):
        pass  # it ended on its own between the timeout and the kill


def _stop(container: Any) -> None:
    """`docker stop`: SIGTERM to the probe (PID 1 of the container: probe_main takes it like Ctrl-C),
    SIGKILL after STOP_GRACE_S; the container is removed afterwards either way."""
    try:
        container.stop(timeout=int(STOP_GRACE_S))
    except (NotFound, APIError, requests.RequestException):
        pass


def _remove(container: Any) -> None:
    try:
        container.remove(force=True)
    except NotFound:
        pass
