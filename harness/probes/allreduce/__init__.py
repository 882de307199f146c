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
import os
from typing import Any

from harness.analysis.allreduce import evidence
from harness.analysis.allreduce import figures as ar
from harness.probes import interconnect
from harness.probes.allreduce.campaign import Campaign, curves_for
from harness.probes.allreduce.setup import (
    FAULT_ENV,
    NO_MULTICAST,
    Host,
    Rendezvous,
    Settings,
    default_backend,
    discover,
    parse_world_sizes,
    plan_world_sizes,
    rendezvous_from_env,
    settings_from_args,
)
from harness.probes.contract import (
    NoDocument,
    Option,
    ProbeUsageError,
    check_options,
    log,
    options_parser,
    positive,
    probe_main,
    real,
    unavailable,
    utc_now,
)
from harness.probes.policy import WORLD_SIZES, at_most, matching, refuse, sizes_at_most, take

NAME = "allreduce"


def readable_size(text: str) -> str | None:
    """A check: TEXT is a size in bytes or binary units (8, 64K, 64M, 1G)."""
    try:
        ar.parse_size(text)
    except ValueError as exc:
        return f"{text}: {exc}"
    return None


OPTIONS = (
    Option(
        ("--world-size",),
        dict(
            metavar="N[,N...]",
            help="ranks per curve; a list measures each (default nccl: 2 and 4 with >= 4 "
            "GPUs, else every visible GPU; gloo: 2; env launcher: WORLD_SIZE)",
        ),
        replay=take(matching(WORLD_SIZES, "world sizes N[,N...]")),
    ),
    Option(
        ("--backend",),
        dict(choices=("nccl", "gloo"), help="default: nccl when CUDA is available, else gloo"),
        replay=take(),
    ),
    Option(
        ("--min-bytes",),
        dict(default="8", help="smallest buffer, a power of two (default 8)"),
        check=readable_size,
        replay=take(sizes_at_most(ar.parse_size, 64 * 2**30)),
    ),
    Option(
        ("--max-bytes",),
        dict(help="largest buffer, binary units: 64M, 1G (default 1G for nccl, 32M for gloo)"),
        check=readable_size,
        replay=take(sizes_at_most(ar.parse_size, 64 * 2**30)),
    ),
    Option(
        ("--launcher",),
        dict(
            choices=("spawn", "env"),
            default="spawn",
            help="spawn: start one process per rank here; env: this process is a rank started "
            "by torchrun or srun (default spawn)",
        ),
        host=False,
        replay=take(matching("spawn", "spawn (env needs the launcher of their cluster)")),
    ),
    Option(
        ("--master-addr",),
        dict(help="env launcher: rendezvous host when MASTER_ADDR is not set (Slurm sets none)"),
        host=False,
        replay=refuse("the rendezvous host of their cluster"),
    ),
    Option(
        ("--master-port",),
        dict(
            type=int,
            help="env launcher: rendezvous base port when MASTER_PORT is not set "
            "(default 29500); curve k uses port + 1 + k",
        ),
        host=False,
        replay=refuse("a port of their rendezvous host"),
    ),
    Option(
        ("--time-budget-s",),
        dict(type=real, help="timed seconds per size, which sets the iteration count (default 0.2 nccl, 0.05 gloo)"),
        check=positive,
        replay=take(at_most(60, "s")),
    ),
    Option(
        ("--warmup",),
        dict(type=int, help="warm-up calls per size (default 5 nccl, 2 gloo)"),
        check=positive,
        replay=take(at_most(10_000)),
    ),
    Option(
        ("--min-iters",),
        dict(type=int, help="fewest timed calls per size (default 5 nccl, 3 gloo)"),
        check=positive,
        replay=take(at_most(1_000_000)),
    ),
    Option(
        ("--max-iters",),
        dict(type=int, help="most timed calls per size (default 1000 nccl, 50 gloo)"),
        check=positive,
        replay=take(at_most(1_000_000)),
    ),
    Option(
        ("--size-timeout-s",),
        dict(
            type=real,
            default=120.0,
            help="kill the workers when one size makes no progress for this long (default 120)",
        ),
        check=positive,
        replay=take(at_most(3600, "s")),
    ),
    Option(
        ("--init-timeout-s",),
        dict(
            type=real,
            default=300.0,
            help="kill the workers when they have not all joined after this long (default 300)",
        ),
        check=positive,
        replay=take(at_most(3600, "s")),
    ),
    Option(
        ("--no-nccl-log",),
        dict(action="store_true", help="do not set NCCL_DEBUG=INFO (the algorithm NCCL chose is then not recorded)"),
        replay=take(),
    ),
)


def build_parser() -> argparse.ArgumentParser:
    return options_parser(NAME, __doc__, OPTIONS)


# --- the document ------------------------------------------------------------------------


def sizing_sentence(settings: Settings, world_sizes: list[int], host_note: str) -> str:
    sizes = settings.sizes
    method = "CUDA events around each call" if settings.backend == "nccl" else "perf_counter around each blocking call"
    ci = (
        " gloo defaults are sized for CI on two CPU cores (up to 32 MiB, 0.05 s per size, at most 50 calls)."
        if settings.backend == "gloo"
        else ""
    )
    return (
        f"{host_note} Backend {settings.backend}, world sizes {', '.join(map(str, world_sizes)) or 'none'}, "
        f"{len(curves_for(settings.backend))} curve(s) each in fresh processes; {len(sizes)} float32 buffer sizes "
        f"{ar.format_size(sizes[0])}..{ar.format_size(sizes[-1])} in powers of two. Per size: exact-sum check, "
        f"{settings.warmup} warm-up calls, then as many timed in-place calls as fit in {settings.time_budget_s:g} s "
        f"at the warm-up median (between {settings.min_iters} and {settings.max_iters}, agreed across ranks), "
        f"timed by {method}; the median per rank, the maximum over ranks; a second exact-sum check.{ci}"
    )


def rendezvous_of(args: argparse.Namespace) -> Rendezvous | None:
    """The launcher's rendezvous (--launcher env), or None: this process spawns every rank."""
    if args.launcher == "env":
        return rendezvous_from_env(dict(os.environ), args.master_addr, args.master_port)
    if args.master_addr or args.master_port:
        raise ProbeUsageError("--master-addr/--master-port only apply with --launcher env")
    return None


def world_sizes_of(
    args: argparse.Namespace, backend: str, host: Host, rendezvous: Rendezvous | None, limitations: list[dict[str, str]]
) -> list[int]:
    """The world sizes to measure: the launcher's, or what this host's GPUs allow (limitations noted)."""
    if rendezvous is None:
        return plan_world_sizes(args.world_size, backend, host, limitations)
    if args.world_size and parse_world_sizes(args.world_size) != [rendezvous.world_size]:
        raise ProbeUsageError(
            f"--world-size {args.world_size} differs from the launcher's world size {rendezvous.world_size}"
        )
    if backend == "nccl" and not (host.nccl_available and host.gpu_count >= 1):
        limitations.append(
            {
                "what": "NCCL all-reduce curves",
                "why": f"this rank sees {host.gpu_count} GPU(s) and NCCL available = {host.nccl_available}",
            }
        )
        return []
    return [rendezvous.world_size]


def written_prediction(world_sizes: list[int]) -> dict[str, Any] | None:
    """The ring model's prediction across two world sizes, written down before anything is measured."""
    if len(world_sizes) < 2:
        return None
    prediction = {"written_at": utc_now(), **ar.ring_prediction(world_sizes)}
    log(
        f"allreduce: prediction written before measuring at {prediction['written_at']}: multipliers "
        f"{prediction['multipliers']}, algbw ratio vs n={prediction['baseline_world_size']} "
        f"{prediction['predicted_algbw_ratio']}"
    )
    return prediction


def measure(args: argparse.Namespace) -> dict[str, Any]:
    check_options(args, OPTIONS)
    rendezvous = rendezvous_of(args)
    host = discover(args.backend)
    backend = args.backend or default_backend(host)
    settings = settings_from_args(args, backend)
    limitations: list[dict[str, str]] = []
    world_sizes = world_sizes_of(args, backend, host, rendezvous, limitations)
    prediction = written_prediction(world_sizes)
    # every visible GPU's evidence, also when too few GPUs for a curve (it says what the host has);
    # only the rank that reports gathers it
    reports = rendezvous is None or rendezvous.rank == 0
    topology = interconnect.gather(host.gpu_count if backend == "nccl" else 0) if reports else {}
    campaign = Campaign(settings, world_sizes, rendezvous)
    runs = campaign.run_all()
    if not reports:
        failed = [r for r in runs if r["failure"]]
        raise NoDocument(1 if failed else 0, "; ".join(r["failure"]["message"] for r in failed))
    limitations += run_limitations(runs, settings, world_sizes, prediction)
    document = {
        "backend": backend,
        "launcher": args.launcher,
        "rendezvous": _rendezvous_record(rendezvous),
        "world_sizes": world_sizes,
        "dtype": "float32",
        "sizes_bytes": list(settings.sizes),
        "host": _host_record(host, campaign),
        "timing": _timing_record(settings),
        "bus_factor": {"formula": ar.BUS_FACTOR_FORMULA, "source": ar.BUS_FACTOR_SOURCE},
        "nvls": evidence.nvls_record(runs, NO_MULTICAST),
        "prediction": prediction,
        "ring_comparison": (
            ar.ring_comparison(prediction, runs)
            if prediction
            else unavailable("one world size measured: the ring multiplier needs two (>= 4 GPUs)")
        ),
        "topology": topology,
        "explanations": evidence.explanations(runs, topology),
        "runs": runs,
        "test_hooks": {"fault": settings.fault} if settings.fault else {},
        "limitations": limitations,
    }
    document["sizing"] = sizing_sentence(settings, world_sizes, _host_note(host, backend))
    return document


def _host_record(host: Host, campaign: Campaign) -> dict[str, Any]:
    return {
        "torch_version": host.torch_version,
        "nccl_version": host.nccl_version,
        "visible_gpus": host.gpu_count if host.queried else unavailable("not queried for gloo"),
        "nccl_available": host.nccl_available if host.queried else unavailable("not queried for gloo"),
        "gloo_available": host.gloo_available,
        "device_name": (campaign.ready or {}).get("device_name") or unavailable("no rank joined"),
    }


def _host_note(host: Host, backend: str) -> str:
    if not host.queried:
        return f"Backend gloo asked for explicitly (GPUs not queried), torch {host.torch_version}."
    return (
        f"Found {host.gpu_count} visible GPU(s), torch {host.torch_version}, NCCL "
        f"{'available' if host.nccl_available else 'missing'}."
    )


def _rendezvous_record(rendezvous: Rendezvous | None) -> dict[str, Any]:
    if rendezvous is None:
        return {
            "source": "spawn",
            "master_addr": "127.0.0.1",
            "note": "a free local port per curve; RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE set per worker",
        }
    return {
        "source": rendezvous.source,
        "master_addr": rendezvous.master_addr,
        "note": f"curve k rendezvouses on port {rendezvous.master_port} + 1 + k",
        "base_port": rendezvous.master_port,
    }


def _timing_record(settings: Settings) -> dict[str, Any]:
    return {
        "method": "cuda_events" if settings.backend == "nccl" else "perf_counter",
        "statistic": "median over timed calls per rank, then the maximum over ranks",
        "warmup_iterations": settings.warmup,
        "min_iterations": settings.min_iters,
        "max_iterations": settings.max_iters,
        "time_budget_s": settings.time_budget_s,
        "size_timeout_s": settings.size_timeout_s,
        "init_timeout_s": settings.init_timeout_s,
        "collective_timeout_s": settings.collective_timeout_s,
        "in_place": True,
        "verification": "exact sum of a rank-dependent pattern, (rank+1)*(1 + i mod 5), before and after the "
        "timed calls; timed calls run on a zeroed buffer so repeated in-place sums stay finite",
    }


def run_limitations(
    runs: list[dict[str, Any]], settings: Settings, world_sizes: list[int], prediction: dict[str, Any] | None
) -> list[dict[str, str]]:
    out = []
    if settings.backend == "gloo":
        out.append(
            {
                "what": "P2P-disabled control curve",
                "why": "not applicable to gloo: NCCL_P2P_DISABLE only changes NCCL's GPU transports; gloo moves "
                "CPU tensors over TCP sockets, with no peer-to-peer path to disable",
            }
        )
    if settings.backend == "nccl" and not settings.nccl_log and runs:
        out.append({"what": "NCCL algorithm per size", "why": "NCCL debug logging turned off by --no-nccl-log"})
    if world_sizes and prediction is None:
        out.append(
            {
                "what": "ring traffic multiplier comparison (world sizes 2 and 4)",
                "why": f"only world size {world_sizes[0]} measured"
                + ("; needs >= 4 GPUs" if settings.backend == "nccl" else ""),
            }
        )
    for run in runs:
        failure = run.get("failure")
        if failure:
            done = [p["bytes"] for p in run["points"]]
            kept = f"{len(done)} point(s) up to {ar.format_size(max(done))} kept" if done else "no point kept"
            out.append(
                {
                    "what": f"{run['curve']} curve at world size {run['world_size']} stopped early ({kept})",
                    "why": failure["message"],
                }
            )
    if settings.fault:
        out.append(
            {
                "what": f"test hook {FAULT_ENV} active",
                "why": f"rank {settings.fault['rank']} was made to {settings.fault['kind']} at "
                f"{settings.fault['bytes']} bytes on purpose",
            }
        )
    return out


if __name__ == "__main__":
    raise SystemExit(probe_main(NAME, build_parser, measure))
