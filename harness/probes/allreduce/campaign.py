"""Running the all-reduce curves: each curve in fresh worker processes under the supervisor, and
each run's record (points with derived figures, NCCL's algorithm per size, fit, plateau)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.analysis.allreduce import figures as ar
from harness.analysis.allreduce import nccl_log
from harness.probes.allreduce.setup import Rendezvous, Settings, curve_env, free_port, rank_env, recorded
from harness.probes.collective.supervisor import Launch, Supervisor
from harness.probes.contract import log, progress, unavailable, utc_now
from harness.probes.scratch import scratch

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
        runs: list[dict[str, Any]] = []
        for world in self.world_sizes:
            for curve in self.curves:
                runs.append(self.run_one(world, curve, len(runs)))
        return runs

    def _launches(self, env: dict[str, str], world: int, run_index: int, workdir: Path) -> list[Launch]:
        log_on = self.settings.nccl_log
        rv = self.rendezvous
        if rv is None:
            port = free_port()
            return [
                Launch(r, rank_env(env, r, world, r, world, "127.0.0.1", port, workdir, log_on)) for r in range(world)
            ]
        port = rv.master_port + 1 + run_index  # a fresh store per curve: no stale keys, no port reuse
        return [
            Launch(
                rv.rank,
                rank_env(
                    env, rv.rank, world, rv.local_rank, rv.local_world_size, rv.master_addr, port, workdir, log_on
                ),
            )
        ]

    def run_one(self, world: int, curve: str, run_index: int) -> dict[str, Any]:
        env, changed = curve_env(dict(os.environ), curve, self.settings, spawn=self.rendezvous is None)
        started = utc_now()
        log(f"allreduce: {curve} curve, world size {world}, {len(self.settings.sizes)} sizes (fresh processes)")

        def on_point(point: dict[str, Any]) -> None:
            self.done_points += 1
            progress(self.done_points, self.total_points, f"{curve} n={world} {ar.format_size(point['bytes'])}")

        with scratch(f"allreduce-{curve}-n{world}-", "allreduce-") as folder:
            workdir = Path(folder)
            supervised = Supervisor(
                self.settings.worker_config(workdir),
                self._launches(env, world, run_index, workdir),
                workdir,
                self.settings.size_timeout_s,
                self.settings.init_timeout_s,
                on_point,
            ).run()
            log_text = self._nccl_log_text(workdir)
        self.ready = self.ready or supervised.ready
        if supervised.failure:
            log(f"allreduce: {curve} n={world} failed: {supervised.failure['message']}")
        return assemble_run(
            world,
            curve,
            started,
            utc_now(),
            env,
            changed,
            supervised.points,
            supervised.failure,
            log_text,
            self.settings,
        )

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


def assemble_run(
    world: int,
    curve: str,
    started: str,
    finished: str,
    env: dict[str, str],
    changed: dict[str, Any],
    raw_points: list[dict[str, Any]],
    failure: dict[str, Any] | None,
    log_text: Any,
    settings: Settings,
) -> dict[str, Any]:
    """One run's JSON: its points with derived figures and NCCL's algorithm, fit, plateau, failure."""
    parsed = nccl_log.parse(log_text) if isinstance(log_text, str) else None
    points = _points(world, raw_points, log_text, parsed)
    run: dict[str, Any] = {
        "world_size": world,
        "curve": curve,
        "started_at": started,
        "finished_at": finished,
        "environment": recorded(env),
        "environment_changes": changed,
        "status": "failed" if failure else "completed",
        "points": points,
        "failure": failure,
    }
    figures = ar.curve_figures(run)
    run["fit"] = (
        {
            "alpha_us": figures["alpha_us"],
            "beta_gbps": figures["beta_gbps"],
            "beta_bus_gbps": figures["beta_bus_gbps"],
            "knee_bytes": figures["knee_bytes"],
            "rel_rms_residual": figures["fit_rel_rms_residual"],
            "method": ar.FIT_METHOD,
        }
        if figures["knee_bytes"] is not None
        else unavailable(figures["fit_reason"] or "no points")
    )
    run["half_plateau"] = (
        {
            "half_plateau_bytes": figures["half_plateau_bytes"],
            "plateau_busbw_gbps": figures["plateau_busbw_gbps"],
            "plateau_sizes_bytes": figures["plateau_sizes_bytes"],
        }
        if figures["half_plateau_bytes"] is not None
        else unavailable(figures["plateau_reason"] or "no points")
    )
    run["busbw_at_max_gbps"] = figures["busbw_at_max_gbps"] if points else unavailable("no point measured")
    run["nccl"] = _nccl(parsed, settings) if parsed is not None else log_text
    return run


def _points(
    world: int, raw_points: list[dict[str, Any]], log_text: Any, parsed: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The run's points by size, each with its derived figures and the algorithm rank 0's NCCL log names
    for its size (LOG_TEXT itself, unavailable, when there is no log to parse)."""
    points = []
    for raw in sorted(raw_points, key=lambda p: p["bytes"]):
        point = dict(raw, verified=True, **ar.point_figures(raw, world))
        if parsed is None:
            point["nccl_algorithm"] = log_text
        elif raw["bytes"] in parsed["algorithms_by_bytes"]:
            point["nccl_algorithm"] = parsed["algorithms_by_bytes"][raw["bytes"]]
        else:
            point["nccl_algorithm"] = unavailable(
                f"no 'AllReduce: {raw['bytes']} Bytes -> Algo' line in rank 0's NCCL INFO log for this size"
            )
        points.append(point)
    return points


def _nccl(parsed: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """What rank 0's NCCL log says of the run: its transports, NVLS support and the algorithms seen at
    the sizes asked for."""
    return {
        "transports": parsed["transports"],
        "nvls_support": parsed["nvls_support"],
        "algorithms_seen": sorted(
            {label for b, seen in parsed["algorithms_by_bytes"].items() if b in settings.sizes for label in seen}
        ),
    }
