"""The all-reduce probe's setup: its settings from the options, what this host has (backends, GPUs),
the world sizes to measure, and each curve's environment (NVLink multicast always off) and
rendezvous (spawned here, or ranks launched by torchrun or srun)."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.analysis.allreduce import figures as ar
from harness.probes.contract import ProbeUsageError, attempt, unavailable

FAULT_ENV = "RIG_DOSSIER_ALLREDUCE_FAULT"  # test hook: "die:RANK:BYTES" or "hang:RANK:BYTES"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
NCCL_LOG_SUBSYS = "INIT,TUNING"
RECORDED_PREFIXES = (
    "NCCL_",
    "TORCH_NCCL_",
    "TORCH_SYMM_MEM_",
    "NVSHMEM_",
    "GLOO_",
    "CUDA_DEVICE_ORDER",
    "CUDA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS",
)
SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|(^|_)KEY($|_)", re.I)

# Per backend: the default largest size and how long each size is timed. gloo is what CI runs on
# two CPU cores, so its defaults stay small.
DEFAULTS = {
    "nccl": {"max_bytes": 2**30, "warmup": 5, "min_iters": 5, "max_iters": 1000, "time_budget_s": 0.2},
    "gloo": {"max_bytes": 32 * 2**20, "warmup": 2, "min_iters": 3, "max_iters": 50, "time_budget_s": 0.05},
}


# --- settings ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """The frozen configuration of one probe run."""

    backend: str
    sizes: tuple[int, ...]
    warmup: int
    min_iters: int
    max_iters: int
    time_budget_s: float
    size_timeout_s: float
    init_timeout_s: float
    nccl_log: bool
    fault: dict[str, Any] | None

    def worker_config(self, events_dir: Path) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "sizes": list(self.sizes),
            "warmup": self.warmup,
            "min_iters": self.min_iters,
            "max_iters": self.max_iters,
            "time_budget_s": self.time_budget_s,
            "collective_timeout_s": self.collective_timeout_s,
            "events_dir": str(events_dir),
            "fault": self.fault,
        }

    @property
    def collective_timeout_s(self) -> float:
        """The process group's own timeout: a backstop behind the supervisor's per-size watchdog."""
        return 2 * self.size_timeout_s + 60


def parse_fault(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    match = re.fullmatch(r"(die|hang):(\d+):(\w+)", text.strip())
    if not match:
        raise ProbeUsageError(f"{FAULT_ENV}={text!r}: expected die:RANK:BYTES or hang:RANK:BYTES")
    return {"kind": match.group(1), "rank": int(match.group(2)), "bytes": ar.parse_size(match.group(3))}


def _or_default(value: float | None, default: float) -> Any:
    return default if value is None else value


def settings_from_args(args: argparse.Namespace, backend: str) -> Settings:
    defaults = DEFAULTS[backend]
    try:
        min_bytes = ar.parse_size(args.min_bytes)
        max_bytes = ar.parse_size(args.max_bytes) if args.max_bytes is not None else int(defaults["max_bytes"])
        if min_bytes < 4 or min_bytes & (min_bytes - 1):
            raise ValueError(f"--min-bytes must be a power of two of at least 4 (one float32), got {min_bytes}")
        sizes = ar.sweep_sizes(min_bytes, max_bytes)
        fault = parse_fault(os.environ.get(FAULT_ENV))
    except ValueError as exc:
        raise ProbeUsageError(str(exc)) from exc
    min_iters = int(_or_default(args.min_iters, defaults["min_iters"]))
    max_iters = int(_or_default(args.max_iters, defaults["max_iters"]))
    if min_iters > max_iters:
        raise ProbeUsageError(f"--min-iters {min_iters} is larger than --max-iters {max_iters}")
    return Settings(
        backend=backend,
        sizes=tuple(sizes),
        warmup=int(_or_default(args.warmup, defaults["warmup"])),
        min_iters=min_iters,
        max_iters=max_iters,
        time_budget_s=float(_or_default(args.time_budget_s, defaults["time_budget_s"])),
        size_timeout_s=args.size_timeout_s,
        init_timeout_s=args.init_timeout_s,
        nccl_log=backend == "nccl" and not args.no_nccl_log,
        fault=fault,
    )


def parse_world_sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise ProbeUsageError(f"--world-size {text!r}: expected a number or a comma-separated list") from None
    if not sizes or sizes[0] < 2:
        raise ProbeUsageError(f"--world-size {text!r}: an all-reduce needs at least 2 ranks")
    return sizes


# --- what this host has ------------------------------------------------------------------


@dataclass(frozen=True)
class Host:
    torch_version: str
    distributed: bool
    nccl_available: bool
    gloo_available: bool
    gpu_count: int
    nccl_version: Any
    queried: bool = True  # False: facts for an explicit gloo run, read without importing torch


def discover(backend: str | None) -> Host:
    """torch's distributed backends and the visible GPU count (no CUDA context is created).

    For an explicit gloo run torch is not imported here (the workers import it): on a two-core CI
    machine that import costs seconds, and gloo needs no GPU facts. The workers' ready event then
    supplies what they found.
    """
    if backend == "gloo":
        try:
            version = importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
            version = "not installed"
        return Host(
            torch_version=version,
            distributed=True,
            nccl_available=False,
            gloo_available=True,
            gpu_count=0,
            nccl_version=unavailable("not queried for the gloo backend"),
            queried=False,
        )
    import torch
    import torch.distributed as dist

    distributed = dist.is_available()
    cuda = torch.cuda.is_available()
    nccl_version = (
        attempt(lambda: ".".join(map(str, torch.cuda.nccl.version())))
        if cuda
        else unavailable("torch.cuda.is_available() is False")
    )
    return Host(
        torch_version=torch.__version__,
        distributed=distributed,
        nccl_available=distributed and dist.is_nccl_available(),
        gloo_available=distributed and dist.is_gloo_available(),
        gpu_count=torch.cuda.device_count() if cuda else 0,
        nccl_version=nccl_version,
    )


def default_backend(host: Host) -> str:
    return "nccl" if host.nccl_available and host.gpu_count > 0 else "gloo"


def plan_world_sizes(requested: str | None, backend: str, host: Host, limitations: list[dict[str, str]]) -> list[int]:
    """The world sizes to measure; what cannot be measured here becomes a limitation."""
    wanted = parse_world_sizes(requested) if requested else None
    if backend == "gloo":
        if not host.gloo_available:
            limitations.append(
                {
                    "what": "gloo all-reduce curves",
                    "why": f"torch {host.torch_version} has no gloo backend "
                    "(torch.distributed.is_gloo_available() is False)",
                }
            )
            return []
        return wanted or [2]
    if not host.nccl_available:
        limitations.append(
            {
                "what": "NCCL all-reduce curves (normal and P2P-disabled)",
                "why": f"NCCL is missing: torch {host.torch_version} reports "
                "torch.distributed.is_nccl_available() = False",
            }
        )
    gpus = host.gpu_count
    if gpus < 2:
        limitations.append(
            {
                "what": f"{gpus} visible GPU{'' if gpus == 1 else 's'}: all-reduce needs at least 2",
                "why": f"torch.cuda.device_count() = {gpus}; the normal and P2P-disabled curves need "
                "two ranks on two GPUs, and a one-GPU curve would be simulated, so none is "
                "recorded",
            }
        )
        return []
    if not host.nccl_available:
        return []
    default = sorted({2, 4, gpus}) if gpus >= 4 else [gpus]
    chosen = []
    for n in wanted or default:
        if n > gpus:
            limitations.append({"what": f"world size {n}", "why": f"needs {n} GPUs, {gpus} visible"})
        else:
            chosen.append(n)
    return chosen


# --- environments ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def curve_env(
    base: dict[str, str], curve: str, settings: Settings, spawn: bool
) -> tuple[dict[str, str], dict[str, Any]]:
    """The environment shared by a curve's workers, and a record of what was forced or removed."""
    env = dict(base)
    changed: dict[str, Any] = {}

    def force(name: str, value: str) -> None:
        if env.get(name) not in (None, value):
            changed[name] = {"was": env[name], "now": value}
        env[name] = value

    for name, value in NO_MULTICAST.items():
        force(name, value)
    if curve == "p2p_disabled":
        force("NCCL_P2P_DISABLE", "1")
    elif "NCCL_P2P_DISABLE" in env:
        changed["NCCL_P2P_DISABLE"] = {"was": env.pop("NCCL_P2P_DISABLE"), "now": None}
    env.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # CUDA index == nvidia-smi index
    if settings.nccl_log:
        force("NCCL_DEBUG", "INFO")
        force("NCCL_DEBUG_SUBSYS", NCCL_LOG_SUBSYS)
    if settings.backend == "gloo":
        env.setdefault("OMP_NUM_THREADS", "1")
        if spawn and "GLOO_SOCKET_IFNAME" not in env and Path("/sys/class/net/lo").exists():
            env["GLOO_SOCKET_IFNAME"] = "lo"  # every rank is on this host
    env.pop("TORCHELASTIC_USE_AGENT_STORE", None)  # each curve has its own store (port), not torchrun's
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    return env, changed


def recorded(env: dict[str, str]) -> dict[str, str]:
    """The run's NCCL/gloo/NVLS-related variables (never secrets, never the whole environment)."""
    return {
        k: ("<per-rank file in the probe's temporary directory>" if k == "NCCL_DEBUG_FILE" else v)
        for k, v in sorted(env.items())
        if k.startswith(RECORDED_PREFIXES) and not SECRET.search(k)
    }


def rank_env(
    env: dict[str, str],
    rank: int,
    world: int,
    local_rank: int,
    local_world: int,
    addr: str,
    port: int,
    workdir: Path,
    nccl_log_on: bool,
) -> dict[str, str]:
    out = dict(
        env,
        MASTER_ADDR=addr,
        MASTER_PORT=str(port),
        RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_RANK=str(local_rank),
        LOCAL_WORLD_SIZE=str(local_world),
    )
    if nccl_log_on:
        out["NCCL_DEBUG_FILE"] = str(workdir / f"nccl-rank{rank}.log")
    return out


@dataclass(frozen=True)
class Rendezvous:
    """Who this process is when launched by torchrun or srun."""

    source: str
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    master_addr: str
    master_port: int


def _slurm_tasks_per_node(env: dict[str, str]) -> int | None:
    for name in ("SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE"):
        match = re.match(r"\d+", env.get(name, ""))
        if match:
            return int(match.group(0))
    return None


def rendezvous_from_env(env: dict[str, str], master_addr: str | None, master_port: int | None) -> Rendezvous:
    """torchrun's RANK/WORLD_SIZE/LOCAL_RANK, else Slurm's SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID."""
    try:
        if "RANK" in env and "WORLD_SIZE" in env:
            source = "torchrun" if "TORCHELASTIC_RUN_ID" in env else "environment"
            rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
            local = int(env.get("LOCAL_RANK", "0"))
            local_world = int(env.get("LOCAL_WORLD_SIZE", str(world)))
        elif "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
            source = "slurm"
            rank, world = int(env["SLURM_PROCID"]), int(env["SLURM_NTASKS"])
            local = int(env.get("SLURM_LOCALID", "0"))
            local_world = _slurm_tasks_per_node(env) or world
        else:
            raise ProbeUsageError(
                "--launcher env needs RANK and WORLD_SIZE (set by torchrun) or SLURM_PROCID and "
                "SLURM_NTASKS (set by srun) in the environment"
            )
        port = master_port if master_port is not None else int(env.get("MASTER_PORT", "29500"))
    except ValueError as exc:
        raise ProbeUsageError(f"--launcher env: a rank variable is not an integer: {exc}") from exc
    addr = master_addr or env.get("MASTER_ADDR")
    if not addr:
        raise ProbeUsageError(
            "--launcher env: no rendezvous host. Slurm sets no MASTER_ADDR: pass --master-addr "
            "HOST (e.g. the first of `scontrol show hostnames $SLURM_JOB_NODELIST`)"
        )
    if not 0 <= rank < world or world < 2:
        raise ProbeUsageError(
            f"--launcher env: rank {rank} of world size {world} is not a valid all-reduce rank (needs world size >= 2)"
        )
    return Rendezvous(source, rank, world, local, local_world, addr, port)
