"""Shared by the fleet tests: a synthetic fleet made by bench/fleet_synth.py, and node checks that
crash their worker for one node (a real SIGKILL, a real exception) to show the collect survives."""

from __future__ import annotations

import dataclasses
import os
import signal
from pathlib import Path

from bench import fleet_synth
from harness.fleet.node import NodeTask, check_node

JOB = "19000"
KILLED, RAISING = "n0003", "n0004"  # the nodes whose check kills or breaks its worker


def synthetic_fleet(out: Path, count: int = 50) -> tuple[Path, list[fleet_synth.NodePlan]]:
    """COUNT nodes under OUT, one of each sickness; only 6 healthy bundles made, copied to the rest."""
    plans = fleet_synth.fleet_plan(count)
    fleet_synth.make_fleet(out, plans, distinct=6, workers=2, say=lambda line: None)
    return out, plans


FAST = 1.13  # the GEMM factor of baseline_fleet's fast node: faster is no acceptance failure, but it stands apart


def baseline_fleet(out: Path, count: int = 12) -> tuple[Path, list[fleet_synth.NodePlan]]:
    """COUNT nodes under OUT, one of each sickness, every bundle its own (a baseline takes each bundle once), and
    the last healthy node's GEMMs FAST x the others': it passes acceptance, and is flagged as an outlier (its HBM
    could not be as much faster: the H200's datasheet bandwidth is 1.12 x the base bundle's, and verify refuses more)."""
    plans = fleet_synth.fleet_plan(count)
    last = max(i for i, p in enumerate(plans) if not p.sickness)
    plans[last] = dataclasses.replace(plans[last], gemm=FAST)
    fleet_synth.make_fleet(out, plans, workers=2, say=lambda line: None)
    return out, plans


def crashing_check(task: NodeTask):
    """check_node, except that KILLED's worker is killed by the OS signal and RAISING's check raises."""
    if task.name == KILLED:
        os.kill(os.getpid(), signal.SIGKILL)
    if task.name == RAISING:
        raise MemoryError("cannot allocate the decompression buffer")
    return check_node(task)
