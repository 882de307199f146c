"""M1T4: all-reduce curves (normal and NCCL_P2P_DISABLE=1 control), knees, topology evidence.

`python -m harness.probes.allreduce [--world-size 2,4] [--backend nccl|gloo] [--min-bytes 8]
 [--max-bytes 1G] [--launcher spawn|env]`

- spawn (default): this process supervises one worker process per rank on this host, with a
  torchrun-compatible environment (MASTER_ADDR=127.0.0.1, a free MASTER_PORT, RANK, WORLD_SIZE,
  LOCAL_RANK, LOCAL_WORLD_SIZE). Every curve runs in fresh processes.
- env: this process is one rank already launched by torchrun or srun. It supervises one worker
  for its own rank per curve; rank 0 prints the document, the other ranks print nothing.

Workers always run with NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NVSHMEM_DISABLE_NVLS=1: NVLink multicast is never used (it can put a shared host's GPUs out of
service). The formulas and fits live in harness/analysis/allreduce.py.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.analysis import allreduce as ar
from harness.analysis import allreduce_evidence as evidence
from harness.analysis import nccl_log
from harness.probes import _interconnect
from harness.probes._collective_supervisor import Launch, Supervisor
from harness.probes.contract import (NoDocument, Option, ProbeUsageError, add_options, attempt, check_options, log,
                                     positive, probe_main, progress, unavailable, utc_now)

NAME = "allreduce"
FAULT_ENV = "RIG_DOSSIER_ALLREDUCE_FAULT"  # test hook: "die:RANK:BYTES" or "hang:RANK:BYTES"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
NCCL_LOG_SUBSYS = "INIT,TUNING"
RECORDED_PREFIXES = ("NCCL_", "TORCH_NCCL_", "TORCH_SYMM_MEM_", "NVSHMEM_", "GLOO_", "CUDA_DEVICE_ORDER",
                     "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS")
SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|(^|_)KEY($|_)", re.I)

# Per backend: the default largest size and how long each size is timed. gloo is what CI runs on
# two CPU cores, so its defaults stay small.
DEFAULTS = {
    "nccl": {"max_bytes": 2**30, "warmup": 5, "min_iters": 5, "max_iters": 1000, "time_budget_s": 0.2},
    "gloo": {"max_bytes": 32 * 2**20, "warmup": 2, "min_iters": 3, "max_iters": 50, "time_budget_s": 0.05},
}


def readable_size(text: str) -> str | None:
    """A check: TEXT is a size in bytes or binary units (8, 64K, 64M, 1G)."""
    try:
        ar.parse_size(text)
    except ValueError as exc:
        return f"{text}: {exc}"
    return None


OPTIONS = (
    Option(("--world-size",), dict(metavar="N[,N...]",
                                   help="ranks per curve; a list measures each (default nccl: 2 and 4 with >= 4 "
                                        "GPUs, else every visible GPU; gloo: 2; env launcher: WORLD_SIZE)")),
    Option(("--backend",), dict(choices=("nccl", "gloo"), help="default: nccl when CUDA is available, else gloo")),
    Option(("--min-bytes",), dict(default="8", help="smallest buffer, a power of two (default 8)"),
           check=readable_size),
    Option(("--max-bytes",), dict(help="largest buffer, binary units: 64M, 1G (default 1G for nccl, 32M for gloo)"),
           check=readable_size),
    Option(("--launcher",), dict(choices=("spawn", "env"), default="spawn",
                                 help="spawn: start one process per rank here; env: this process is a rank started "
                                      "by torchrun or srun (default spawn)"), host=False),
    Option(("--master-addr",), dict(help="env launcher: rendezvous host when MASTER_ADDR is not set (Slurm sets "
                                         "none)"), host=False),
    Option(("--master-port",), dict(type=int, help="env launcher: rendezvous base port when MASTER_PORT is not set "
                                                   "(default 29500); curve k uses port + 1 + k"), host=False),
    Option(("--time-budget-s",), dict(type=float, help="timed seconds per size, which sets the iteration count "
                                                       "(default 0.2 nccl, 0.05 gloo)"), check=positive),
    Option(("--warmup",), dict(type=int, help="warm-up calls per size (default 5 nccl, 2 gloo)"), check=positive),
    Option(("--min-iters",), dict(type=int, help="fewest timed calls per size (default 5 nccl, 3 gloo)"),
           check=positive),
    Option(("--max-iters",), dict(type=int, help="most timed calls per size (default 1000 nccl, 50 gloo)"),
           check=positive),
    Option(("--size-timeout-s",), dict(type=float, default=120.0,
                                       help="kill the workers when one size makes no progress for this long "
                                            "(default 120)"), check=positive),
    Option(("--init-timeout-s",), dict(type=float, default=300.0,
                                       help="kill the workers when they have not all joined after this long "
                                            "(default 300)"), check=positive),
    Option(("--no-nccl-log",), dict(action="store_true",
                                    help="do not set NCCL_DEBUG=INFO (the algorithm NCCL chose is then not recorded)")),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness.probes.allreduce", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_options(parser, OPTIONS)
    return parser


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
        return {"backend": self.backend, "sizes": list(self.sizes), "warmup": self.warmup,
                "min_iters": self.min_iters, "max_iters": self.max_iters, "time_budget_s": self.time_budget_s,
                "collective_timeout_s": self.collective_timeout_s, "events_dir": str(events_dir),
                "fault": self.fault}

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
        max_bytes = ar.parse_size(args.max_bytes) if args.max_bytes is not None else defaults["max_bytes"]
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
    return Settings(backend=backend, sizes=tuple(sizes),
                    warmup=int(_or_default(args.warmup, defaults["warmup"])),
                    min_iters=min_iters, max_iters=max_iters,
                    time_budget_s=float(_or_default(args.time_budget_s, defaults["time_budget_s"])),
                    size_timeout_s=args.size_timeout_s, init_timeout_s=args.init_timeout_s,
                    nccl_log=backend == "nccl" and not args.no_nccl_log, fault=fault)


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
        return Host(torch_version=version, distributed=True, nccl_available=False, gloo_available=True,
                    gpu_count=0, nccl_version=unavailable("not queried for the gloo backend"),
                    queried=False)
    import torch
    import torch.distributed as dist

    distributed = dist.is_available()
    cuda = torch.cuda.is_available()
    nccl_version = attempt(lambda: ".".join(map(str, torch.cuda.nccl.version()))) if cuda else \
        unavailable("torch.cuda.is_available() is False")
    return Host(torch_version=torch.__version__, distributed=distributed,
                nccl_available=distributed and dist.is_nccl_available(),
                gloo_available=distributed and dist.is_gloo_available(),
                gpu_count=torch.cuda.device_count() if cuda else 0, nccl_version=nccl_version)


def default_backend(host: Host) -> str:
    return "nccl" if host.nccl_available and host.gpu_count > 0 else "gloo"


def plan_world_sizes(requested: str | None, backend: str, host: Host,
                     limitations: list[dict[str, str]]) -> list[int]:
    """The world sizes to measure; what cannot be measured here becomes a limitation."""
    wanted = parse_world_sizes(requested) if requested else None
    if backend == "gloo":
        if not host.gloo_available:
            limitations.append({"what": "gloo all-reduce curves",
                                "why": f"torch {host.torch_version} has no gloo backend "
                                       "(torch.distributed.is_gloo_available() is False)"})
            return []
        return wanted or [2]
    if not host.nccl_available:
        limitations.append({"what": "NCCL all-reduce curves (normal and P2P-disabled)",
                            "why": f"NCCL is missing: torch {host.torch_version} reports "
                                   "torch.distributed.is_nccl_available() = False"})
    gpus = host.gpu_count
    if gpus < 2:
        limitations.append({"what": f"{gpus} visible GPU{'' if gpus == 1 else 's'}: all-reduce needs at least 2",
                            "why": f"torch.cuda.device_count() = {gpus}; the normal and P2P-disabled curves need "
                                   "two ranks on two GPUs, and a one-GPU curve would be simulated, so none is "
                                   "recorded"})
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


def curve_env(base: dict[str, str], curve: str, settings: Settings, spawn: bool) -> tuple[dict[str, str], dict[str, Any]]:
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
    return {k: ("<per-rank file in the probe's temporary directory>" if k == "NCCL_DEBUG_FILE" else v)
            for k, v in sorted(env.items()) if k.startswith(RECORDED_PREFIXES) and not SECRET.search(k)}


def rank_env(env: dict[str, str], rank: int, world: int, local_rank: int, local_world: int,
             addr: str, port: int, workdir: Path, nccl_log_on: bool) -> dict[str, str]:
    out = dict(env, MASTER_ADDR=addr, MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
               LOCAL_RANK=str(local_rank), LOCAL_WORLD_SIZE=str(local_world))
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
            raise ProbeUsageError("--launcher env needs RANK and WORLD_SIZE (set by torchrun) or SLURM_PROCID and "
                                  "SLURM_NTASKS (set by srun) in the environment")
        port = master_port if master_port is not None else int(env.get("MASTER_PORT", "29500"))
    except ValueError as exc:
        raise ProbeUsageError(f"--launcher env: a rank variable is not an integer: {exc}") from exc
    addr = master_addr or env.get("MASTER_ADDR")
    if not addr:
        raise ProbeUsageError("--launcher env: no rendezvous host. Slurm sets no MASTER_ADDR: pass --master-addr "
                              "HOST (e.g. the first of `scontrol show hostnames $SLURM_JOB_NODELIST`)")
    if not 0 <= rank < world or world < 2:
        raise ProbeUsageError(f"--launcher env: rank {rank} of world size {world} is not a valid all-reduce rank "
                              "(needs world size >= 2)")
    return Rendezvous(source, rank, world, local, local_world, addr, port)


# --- running the curves ------------------------------------------------------------------

def curves_for(backend: str) -> tuple[str, ...]:
    return ar.CURVES if backend == "nccl" else ("normal",)


class Campaign:
    """Runs every (world size, curve) in fresh processes and keeps what each produced."""

    def __init__(self, settings: Settings, world_sizes: list[int], rendezvous: Rendezvous | None) -> None:
        self.settings, self.world_sizes, self.rendezvous = settings, world_sizes, rendezvous
        self.curves = curves_for(settings.backend)
        self.total_points = len(world_sizes) * len(self.curves) * len(settings.sizes)
        self.done_points = 0
        self.ready: dict[str, Any] | None = None

    def run_all(self) -> list[dict[str, Any]]:
        runs = []
        for world in self.world_sizes:
            for curve in self.curves:
                runs.append(self.run_one(world, curve, len(runs)))
        return runs

    def _launches(self, env: dict[str, str], world: int, run_index: int, workdir: Path) -> list[Launch]:
        log_on = self.settings.nccl_log
        rv = self.rendezvous
        if rv is None:
            port = free_port()
            return [Launch(r, rank_env(env, r, world, r, world, "127.0.0.1", port, workdir, log_on))
                    for r in range(world)]
        port = rv.master_port + 1 + run_index  # a fresh store per curve: no stale keys, no port reuse
        return [Launch(rv.rank, rank_env(env, rv.rank, world, rv.local_rank, rv.local_world_size, rv.master_addr,
                                         port, workdir, log_on))]

    def run_one(self, world: int, curve: str, run_index: int) -> dict[str, Any]:
        env, changed = curve_env(dict(os.environ), curve, self.settings, spawn=self.rendezvous is None)
        workdir = Path(tempfile.mkdtemp(prefix=f"allreduce-{curve}-n{world}-"))
        started = utc_now()
        log(f"allreduce: {curve} curve, world size {world}, {len(self.settings.sizes)} sizes (fresh processes)")

        def on_point(point: dict[str, Any]) -> None:
            self.done_points += 1
            progress(self.done_points, self.total_points, f"{curve} n={world} {ar.format_size(point['bytes'])}")

        try:
            supervised = Supervisor(self.settings.worker_config(workdir), self._launches(env, world, run_index, workdir),
                                    workdir, self.settings.size_timeout_s, self.settings.init_timeout_s,
                                    on_point).run()
            log_text = self._nccl_log_text(workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        self.ready = self.ready or supervised.ready
        if supervised.failure:
            log(f"allreduce: {curve} n={world} failed: {supervised.failure['message']}")
        return assemble_run(world, curve, started, utc_now(), env, changed, supervised.points,
                            supervised.failure, log_text, self.settings)

    def _nccl_log_text(self, workdir: Path) -> Any:
        if self.settings.backend != "nccl":
            return unavailable("backend gloo: NCCL's algorithm choice does not apply")
        if not self.settings.nccl_log:
            return unavailable("NCCL debug logging turned off by --no-nccl-log")
        if self.rendezvous is not None and self.rendezvous.rank != 0:
            return unavailable("only rank 0's NCCL log names the algorithm")
        path = workdir / "nccl-rank0.log"
        if not path.exists():
            return unavailable(f"NCCL wrote no debug file {path.name} despite NCCL_DEBUG=INFO and NCCL_DEBUG_FILE")
        return path.read_text(encoding="utf-8", errors="replace")


def assemble_run(world: int, curve: str, started: str, finished: str, env: dict[str, str], changed: dict[str, Any],
                 raw_points: list[dict[str, Any]], failure: dict[str, Any] | None, log_text: Any,
                 settings: Settings) -> dict[str, Any]:
    """One run's JSON: its points with derived figures and NCCL's algorithm, fit, plateau, failure."""
    parsed = nccl_log.parse(log_text) if isinstance(log_text, str) else None
    points = []
    for raw in sorted(raw_points, key=lambda p: p["bytes"]):
        point = dict(raw, verified=True, **ar.point_figures(raw, world))
        if parsed is None:
            point["nccl_algorithm"] = log_text
        elif raw["bytes"] in parsed["algorithms_by_bytes"]:
            point["nccl_algorithm"] = parsed["algorithms_by_bytes"][raw["bytes"]]
        else:
            point["nccl_algorithm"] = unavailable(f"no 'AllReduce: {raw['bytes']} Bytes -> Algo' line in rank 0's "
                                                  "NCCL INFO log for this size")
        points.append(point)
    run: dict[str, Any] = {"world_size": world, "curve": curve, "started_at": started, "finished_at": finished,
                           "environment": recorded(env), "environment_changes": changed,
                           "status": "failed" if failure else "completed", "points": points, "failure": failure}
    figures = ar.curve_figures(run)
    run["fit"] = ({"alpha_us": figures["alpha_us"], "beta_gbps": figures["beta_gbps"],
                   "beta_bus_gbps": figures["beta_bus_gbps"], "knee_bytes": figures["knee_bytes"],
                   "rel_rms_residual": figures["fit_rel_rms_residual"], "method": ar.FIT_METHOD}
                  if figures["knee_bytes"] is not None else unavailable(figures["fit_reason"] or "no points"))
    run["half_plateau"] = ({"half_plateau_bytes": figures["half_plateau_bytes"],
                            "plateau_busbw_gbps": figures["plateau_busbw_gbps"],
                            "plateau_sizes_bytes": figures["plateau_sizes_bytes"]}
                           if figures["half_plateau_bytes"] is not None
                           else unavailable(figures["plateau_reason"] or "no points"))
    run["busbw_at_max_gbps"] = figures["busbw_at_max_gbps"] if points else unavailable("no point measured")
    if parsed is not None:
        run["nccl"] = {"transports": parsed["transports"], "nvls_support": parsed["nvls_support"],
                       "algorithms_seen": sorted({label for b, seen in parsed["algorithms_by_bytes"].items()
                                                  if b in settings.sizes for label in seen})}
    else:
        run["nccl"] = log_text
    return run


# --- the document ------------------------------------------------------------------------

def sizing_sentence(settings: Settings, world_sizes: list[int], host_note: str) -> str:
    sizes = settings.sizes
    method = "CUDA events around each call" if settings.backend == "nccl" else "perf_counter around each blocking call"
    ci = (" gloo defaults are sized for CI on two CPU cores (up to 32 MiB, 0.05 s per size, at most 50 calls)."
          if settings.backend == "gloo" else "")
    return (f"{host_note} Backend {settings.backend}, world sizes {', '.join(map(str, world_sizes)) or 'none'}, "
            f"{len(curves_for(settings.backend))} curve(s) each in fresh processes; {len(sizes)} float32 buffer sizes "
            f"{ar.format_size(sizes[0])}..{ar.format_size(sizes[-1])} in powers of two. Per size: exact-sum check, "
            f"{settings.warmup} warm-up calls, then as many timed in-place calls as fit in {settings.time_budget_s:g} s "
            f"at the warm-up median (between {settings.min_iters} and {settings.max_iters}, agreed across ranks), "
            f"timed by {method}; the median per rank, the maximum over ranks; a second exact-sum check.{ci}")


def measure(args: argparse.Namespace) -> dict[str, Any]:
    check_options(args, OPTIONS)
    if args.launcher == "env":
        rendezvous = rendezvous_from_env(dict(os.environ), args.master_addr, args.master_port)
    else:
        if args.master_addr or args.master_port:
            raise ProbeUsageError("--master-addr/--master-port only apply with --launcher env")
        rendezvous = None
    host = discover(args.backend)
    backend = args.backend or default_backend(host)
    settings = settings_from_args(args, backend)
    limitations: list[dict[str, str]] = []
    if rendezvous is not None:
        if args.world_size and parse_world_sizes(args.world_size) != [rendezvous.world_size]:
            raise ProbeUsageError(f"--world-size {args.world_size} differs from the launcher's world size "
                                  f"{rendezvous.world_size}")
        world_sizes = [rendezvous.world_size]
        if backend == "nccl" and not (host.nccl_available and host.gpu_count >= 1):
            world_sizes = []
            limitations.append({"what": "NCCL all-reduce curves",
                                "why": f"this rank sees {host.gpu_count} GPU(s) and NCCL available = "
                                       f"{host.nccl_available}"})
    else:
        world_sizes = plan_world_sizes(args.world_size, backend, host, limitations)

    prediction = None
    if len(world_sizes) >= 2:
        prediction = {"written_at": utc_now(), **ar.ring_prediction(world_sizes)}
        log(f"allreduce: prediction written before measuring at {prediction['written_at']}: multipliers "
            f"{prediction['multipliers']}, algbw ratio vs n={prediction['baseline_world_size']} "
            f"{prediction['predicted_algbw_ratio']}")
    # every visible GPU's evidence, also when too few GPUs for a curve (it says what the host has);
    # only the rank that reports gathers it
    reports = rendezvous is None or rendezvous.rank == 0
    topology = _interconnect.gather(host.gpu_count if backend == "nccl" else 0) if reports else {}
    campaign = Campaign(settings, world_sizes, rendezvous)
    runs = campaign.run_all()

    if rendezvous is not None and rendezvous.rank != 0:
        failed = [r for r in runs if r["failure"]]
        raise NoDocument(1 if failed else 0, "; ".join(r["failure"]["message"] for r in failed))
    limitations += run_limitations(runs, settings, world_sizes, prediction)
    document = {
        "backend": backend, "launcher": args.launcher,
        "rendezvous": _rendezvous_record(rendezvous),
        "world_sizes": world_sizes, "dtype": "float32",
        "sizes_bytes": list(settings.sizes),
        "host": {"torch_version": host.torch_version, "nccl_version": host.nccl_version,
                 "visible_gpus": host.gpu_count if host.queried else unavailable("not queried for gloo"),
                 "nccl_available": host.nccl_available if host.queried else unavailable("not queried for gloo"),
                 "gloo_available": host.gloo_available,
                 "device_name": (campaign.ready or {}).get("device_name") or unavailable("no rank joined")},
        "timing": _timing_record(settings),
        "bus_factor": {"formula": ar.BUS_FACTOR_FORMULA, "source": ar.BUS_FACTOR_SOURCE},
        "nvls": evidence.nvls_record(runs, NO_MULTICAST),
        "prediction": prediction,
        "ring_comparison": (ar.ring_comparison(prediction, runs) if prediction
                            else unavailable("one world size measured: the ring multiplier needs two (>= 4 GPUs)")),
        "topology": topology,
        "explanations": evidence.explanations(runs, topology),
        "runs": runs,
        "test_hooks": {"fault": settings.fault} if settings.fault else {},
        "limitations": limitations,
    }
    document["sizing"] = sizing_sentence(settings, world_sizes, _host_note(host, backend))
    return document


def _host_note(host: Host, backend: str) -> str:
    if not host.queried:
        return f"Backend gloo asked for explicitly (GPUs not queried), torch {host.torch_version}."
    return (f"Found {host.gpu_count} visible GPU(s), torch {host.torch_version}, NCCL "
            f"{'available' if host.nccl_available else 'missing'}.")


def _rendezvous_record(rendezvous: Rendezvous | None) -> dict[str, Any]:
    if rendezvous is None:
        return {"source": "spawn", "master_addr": "127.0.0.1",
                "note": "a free local port per curve; RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE set per worker"}
    return {"source": rendezvous.source, "master_addr": rendezvous.master_addr,
            "note": f"curve k rendezvouses on port {rendezvous.master_port} + 1 + k",
            "base_port": rendezvous.master_port}


def _timing_record(settings: Settings) -> dict[str, Any]:
    return {"method": "cuda_events" if settings.backend == "nccl" else "perf_counter",
            "statistic": "median over timed calls per rank, then the maximum over ranks",
            "warmup_iterations": settings.warmup, "min_iterations": settings.min_iters,
            "max_iterations": settings.max_iters, "time_budget_s": settings.time_budget_s,
            "size_timeout_s": settings.size_timeout_s, "init_timeout_s": settings.init_timeout_s,
            "collective_timeout_s": settings.collective_timeout_s,
            "in_place": True,
            "verification": "exact sum of a rank-dependent pattern, (rank+1)*(1 + i mod 5), before and after the "
                            "timed calls; timed calls run on a zeroed buffer so repeated in-place sums stay finite"}


def run_limitations(runs: list[dict[str, Any]], settings: Settings, world_sizes: list[int],
                    prediction: dict[str, Any] | None) -> list[dict[str, str]]:
    out = []
    if settings.backend == "gloo":
        out.append({"what": "P2P-disabled control curve",
                    "why": "not applicable to gloo: NCCL_P2P_DISABLE only changes NCCL's GPU transports; gloo moves "
                           "CPU tensors over TCP sockets, with no peer-to-peer path to disable"})
    if settings.backend == "nccl" and not settings.nccl_log and runs:
        out.append({"what": "NCCL algorithm per size", "why": "NCCL debug logging turned off by --no-nccl-log"})
    if world_sizes and prediction is None:
        out.append({"what": "ring traffic multiplier comparison (world sizes 2 and 4)",
                    "why": f"only world size {world_sizes[0]} measured"
                           + ("; needs >= 4 GPUs" if settings.backend == "nccl" else "")})
    for run in runs:
        failure = run.get("failure")
        if failure:
            done = [p["bytes"] for p in run["points"]]
            kept = f"{len(done)} point(s) up to {ar.format_size(max(done))} kept" if done else "no point kept"
            out.append({"what": f"{run['curve']} curve at world size {run['world_size']} stopped early ({kept})",
                        "why": failure["message"]})
    if settings.fault:
        out.append({"what": f"test hook {FAULT_ENV} active",
                    "why": f"rank {settings.fault['rank']} was made to {settings.fault['kind']} at "
                           f"{settings.fault['bytes']} bytes on purpose"})
    return out


if __name__ == "__main__":
    raise SystemExit(probe_main(NAME, build_parser, measure))
