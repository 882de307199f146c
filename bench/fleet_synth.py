#!/usr/bin/env python3
"""A synthetic fleet run directory for `dossier fleet collect`, made from a real signed bundle.

Each node bundle starts from the documents of a base bundle (default: the dossier measured on the
lent H200, tests/fixtures/h200/dossier-h200.tar.gz), varied per node, and is assembled, its
report.md rendered and signed by the harness's own code (`harness.run.assemble.assemble`
over a RunRecord), so it verifies for real. What varies, and how it stays consistent
(bench/fleet_vary.py):

  - bandwidth: every per-iteration time divided by the node's HBM factor, each point rebuilt by
    the probe's own `point_record`, the plateau, repeats and reference ratios by the analysis
    functions the probe calls;
  - roofline steps: every GEMM's per-call times divided by the node's GEMM factor; the memory roof
    follows the node's own bandwidth median (as `dossier run` feeds it), and the predictions,
    rates, explanations, fusion comparison and summary are recomputed by harness.analysis.roofline;
  - health under load: the PCIe link width and the SM clock samples (a throttling GPU runs at a
    lower clock with a thermal slowdown reason); the contracts are re-judged by the health
    analysis and derived/health-diff.json recomputed by its host function;
  - stress and transfer, where the base bundle has those steps: their raw times (or GEMM counts)
    scaled and their stated figures recomputed by their analysis modules;
  - every other step is carried unchanged (said so on stderr).

Sick nodes: slow HBM (x0.80), a PCIe link at x8 under load, a throttling GPU (SM clock x0.70,
GEMM x0.72, thermal slowdown), a bad signature (signed by another key), a missing bundle (its
dossier step exited 3 and wrote none). Plots are not rendered in the synthetic bundles (each
step's plot_note says so): a matplotlib render per node would take longer than the collect.

Library (used by bench/fleet_collect.py and tests/fleet/test_fleet_collect.py) and a command:

    python bench/fleet_synth.py OUT_DIR --nodes 1000 [--base BUNDLE] [--workers 2] [--seed 19]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import shutil
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.fleet_vary import vary_bandwidth, vary_health_load, vary_roofline, vary_stress, vary_transfer
from harness import registry
from harness.analysis.bandwidth import figures as bw
from harness.bundle import layout
from harness.bundle.read import read_all
from harness.fleet.script import FleetSpec, render_node_script, render_sbatch
from harness.run.assemble import assemble
from harness.run.provenance import tool_info
from harness.run.records import COMPLETED, RunRecord, StepRecord
from harness.runners.interface import ProbeRun
from harness.signing.keys import SigningKey, generate, load_private

ROOT = Path(__file__).resolve().parents[1]
H200_BASE = ROOT / "tests" / "fixtures" / "h200" / "dossier-h200.tar.gz"
PLOT_NOTE = (
    "not rendered: a synthetic fleet node made by bench/fleet_synth.py (one render per node would outlast the collect)"
)
SICKNESSES = ("slow-hbm", "pcie-x8", "throttling", "bad-signature", "missing-bundle")


@dataclass(frozen=True)
class NodePlan:
    """What one synthetic node measured, as factors on the base bundle's figures."""

    name: str
    hbm: float = 1.0  # every HBM rate x this (per-iteration times / this)
    gemm: float = 1.0  # every GEMM rate x this
    clock: float = 1.0  # SM clock under load x this (with a thermal slowdown reason when < 1)
    pcie_width: int | None = None  # the PCIe link width under load (None: as measured)
    stress: float = 1.0
    transfer: float = 1.0
    sickness: str | None = None


def fleet_plan(count: int, seed: int = 19, sick: Iterable[str] = SICKNESSES) -> list[NodePlan]:
    """COUNT nodes n0001.. with a ~1 % spread in every rate; one node per sickness, spread out."""
    rng = random.Random(seed)
    width = len(str(count))
    plans = [
        NodePlan(
            f"n{i + 1:0{max(width, 4)}d}",
            hbm=rng.gauss(1, 0.01),
            gemm=rng.gauss(1, 0.01),
            clock=1.0,
            stress=rng.gauss(1, 0.01),
            transfer=rng.gauss(1, 0.01),
        )
        for i in range(count)
    ]
    sick = list(sick)
    for k, sickness in enumerate(sick):
        i = (k + 1) * count // (len(sick) + 1)
        plans[i] = make_sick(plans[i], sickness)
    return plans


def make_sick(plan: NodePlan, sickness: str) -> NodePlan:
    changes: dict[str, Any] = {"sickness": sickness}
    if sickness == "slow-hbm":
        changes["hbm"] = 0.80
    elif sickness == "pcie-x8":
        changes.update(pcie_width=8, transfer=0.5)
    elif sickness == "throttling":
        changes.update(clock=0.70, gemm=0.72, stress=0.72)
    elif sickness not in SICKNESSES:
        raise ValueError(f"unknown sickness {sickness!r} ({', '.join(SICKNESSES)})")
    return replace(plan, **changes)


# --- the base bundle ---------------------------------------------------------------------------


@dataclass
class Base:
    """The base bundle's commands.json, environment.json, documents and logs."""

    files: dict[str, bytes]
    commands: dict[str, Any]
    environment: dict[str, Any]
    documents: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> Base:
        files = read_all(path)
        commands = json.loads(files[layout.COMMANDS])
        base = cls(files, commands, json.loads(files[layout.ENVIRONMENT]))
        for entry in commands["steps"]:
            if entry.get("status") == COMPLETED and entry.get("output"):
                base.documents[entry["step"]] = json.loads(files[entry["output"]])
        return base

    def analysis_of(self, step: str) -> str | None:
        return next((e.get("analysis") for e in self.commands["steps"] if e["step"] == step), None)


def varied_documents(base: Base, plan: NodePlan) -> tuple[dict[str, Any], list[str]]:
    """The node's probe documents (step -> document) and the steps carried unchanged."""
    documents, carried = {}, []
    median = None
    for step, document in base.documents.items():
        analysis = base.analysis_of(step)
        if step == "bandwidth":
            documents[step] = vary_bandwidth(document, plan.hbm)
            median = bw.headlines(documents[step])["repeat_median_gbps"]
        elif analysis == "health" and step != "health":
            documents[step] = vary_health_load(document, plan.pcie_width, plan.clock)
        elif analysis == "stress":
            documents[step] = vary_stress(document, plan.stress)
        elif analysis == "transfer":
            documents[step] = vary_transfer(document, plan.transfer)
        elif analysis is None or analysis == "roofline":
            continue  # host documents are recomputed; roofline steps follow the bandwidth median
        else:
            documents[step], carried = document, carried + [step]
    for step, document in base.documents.items():
        if base.analysis_of(step) == "roofline":
            documents[step] = vary_roofline(document, plan.gemm, median, plan.clock)
    return documents, carried


def check_documents(documents: dict[str, Any], base: Base) -> list[str]:
    """What verify would say of the varied documents' figures (empty when consistent)."""
    found = []
    for step, document in documents.items():
        analysis = base.analysis_of(step)
        if analysis:
            found += [f"{step}: {p}" for p in registry.analysis_module(analysis).discrepancies(document)]
    return found


# --- records and bundles -----------------------------------------------------------------------


def _stdout(document: Any) -> bytes:
    return (json.dumps(document, allow_nan=False, sort_keys=True) + "\n").encode()


def _run(entry: dict[str, Any], stdout: bytes, stderr: bytes) -> ProbeRun:
    return ProbeRun(
        probe=entry["probe"],
        argv=tuple(entry["argv"]),
        env=dict(entry["env"] or {}),
        runner=entry["runner"],
        image=entry["image"],
        started_at=entry["started_at"],
        finished_at=entry["finished_at"],
        exit_code=entry["exit_code"],
        timed_out=bool(entry["timed_out"]),
        stdout=stdout,
        stderr=stderr,
        note=entry.get("note"),
    )


def step_record(entry: dict[str, Any], base: Base, documents: dict[str, Any]) -> StepRecord:
    common = dict(
        step=entry["step"],
        title=entry["title"],
        lab_step=entry["lab_step"],
        kind=entry["kind"],
        status=entry["status"],
        schema=entry["schema"],
        probe=entry.get("probe"),
        analysis=entry.get("analysis"),
        plots=None,
        why=entry.get("why"),
        inputs=dict(entry.get("inputs") or {}),
        checkpoint=entry.get("checkpoint"),
        needs=tuple(entry.get("needs") or ()),
        function=entry.get("function"),
        schema_violations=tuple(entry.get("schema_violations") or ()),
    )
    if entry["status"] == COMPLETED:
        common.update(plot_files={}, plot_note=PLOT_NOTE)
    step, document = entry["step"], documents.get(entry["step"])
    if entry["kind"] == "host":
        if entry["status"] == COMPLETED:
            result = registry.host_function(entry["function"])(*[documents[n] for n in entry["needs"]])
            document = json.loads(json.dumps(result, allow_nan=False, sort_keys=True))
            documents[step] = document
        return StepRecord(**common, document=document)
    if "bandwidth_gbps" in common["inputs"] and "bandwidth" in documents:
        common["inputs"]["bandwidth_gbps"] = bw.headlines(documents["bandwidth"])["repeat_median_gbps"]
    stderr = base.files.get(entry.get("stderr") or "", b"")
    if entry["status"] == COMPLETED:
        return StepRecord(**common, document=document, run=_run(entry, _stdout(document), stderr))
    stdout = base.files.get(entry.get("stdout") or "", b"")
    return StepRecord(**common, run=_run(entry, stdout, stderr) if entry.get("argv") else None)


def node_record(base: Base, plan: NodePlan, tool: dict[str, Any]) -> RunRecord:
    documents, _ = varied_documents(base, plan)
    steps = tuple(step_record(entry, base, documents) for entry in base.commands["steps"])
    commands = base.commands
    host = {**base.environment["host"], "hostname": plan.name}
    return RunRecord(
        steps=steps,
        runner=commands["runner"],
        tool=tool,
        host=host,
        options=commands["options"],
        started_at=commands["started_at"],
        finished_at=commands["finished_at"],
    )


def node_bundle(base: Base, plan: NodePlan, key: SigningKey, rogue: SigningKey, tool: dict[str, Any]) -> bytes:
    return assemble(node_record(base, plan, tool), rogue if plan.sickness == "bad-signature" else key)


# --- the run directory -------------------------------------------------------------------------


def write_layout(run_dir: Path, job_id: str, nodes: list[str], key_path: Path, output_dir: Path) -> None:
    """What `dossier fleet submit` and its job leave before the nodes write: the scripts, the
    submission record, the node list, the logs and allreduce folders."""
    spec = FleetSpec(nodes=len(nodes), run_dir=run_dir, key=key_path, python=sys.executable, pythonpath=str(ROOT))
    for sub in ("logs", "nodes", "allreduce"):
        (run_dir / sub).mkdir(parents=True, exist_ok=True)
    (run_dir / "node.sh").write_text(render_node_script(spec))
    (run_dir / "fleet.sbatch").write_text(render_sbatch(spec))
    (run_dir / "nodelist").write_text("\n".join(nodes) + "\n")
    (run_dir / "logs" / f"batch-{job_id}.out").write_text(
        f"synthetic fleet of {len(nodes)} nodes (bench/fleet_synth.py): no Slurm job ran, no all-reduce step\n"
    )
    submission = {
        "job_id": job_id,
        "argv": ["bench/fleet_synth.py", str(output_dir), "--nodes", str(len(nodes))],
        "run_dir": str(run_dir),
        "public_key": str(key_path.with_suffix(".pub")),
        "spec": {"key": str(key_path), "nodes": len(nodes)},
        "synthetic": True,
    }
    (run_dir / "submission.json").write_text(json.dumps(submission, sort_keys=True, indent=1) + "\n")


def write_node(run_dir: Path, job_id: str, plan: NodePlan, data: bytes | None) -> None:
    folder = run_dir / "nodes" / plan.name
    folder.mkdir(parents=True, exist_ok=True)
    log = run_dir / "logs" / f"slurm-{job_id}-{plan.name}.out"
    if data is None:  # missing bundle: the node's dossier failed before writing one
        (folder / "exit_code").write_text("3\n")
        log.write_text(
            f"node {plan.name}: dossier run: step bandwidth failed: the probe crashed (synthetic)\n"
            "dossier run exit code 3\n"
        )
        return
    (folder / f"{plan.name}.tar.gz").write_bytes(data)
    (folder / "exit_code").write_text("0\n")
    log.write_text(f"node {plan.name}: synthetic bundle made by bench/fleet_synth.py\ndossier run exit code 0\n")


_WORKER: dict[str, Any] = {}


def _init_worker(base_path: str, key_path: str, rogue_path: str) -> None:
    _WORKER.update(
        base=Base.read(Path(base_path)),
        key=load_private(Path(key_path)),
        rogue=load_private(Path(rogue_path)),
        tool=tool_info(),
    )


def _make(plan: NodePlan) -> tuple[NodePlan, bytes | None]:
    if plan.sickness == "missing-bundle":
        return plan, None
    return plan, node_bundle(_WORKER["base"], plan, _WORKER["key"], _WORKER["rogue"], _WORKER["tool"])


def make_fleet(
    output_dir: Path,
    plans: list[NodePlan],
    base_path: Path = H200_BASE,
    job_id: str = "19000",
    workers: int = 2,
    distinct: int | None = None,
    say=print,
) -> Path:
    """Write a fleet run directory under OUTPUT_DIR for PLANS; returns it. Keys in OUTPUT_DIR/keys.

    DISTINCT (tests): make only that many healthy bundles and copy them to the other healthy nodes
    (sick nodes always get their own), so a 50-node fleet takes seconds."""
    base = Base.read(base_path)
    problems = check_documents(varied_documents(base, replace(plans[0], hbm=0.97, gemm=0.98))[0], base)
    if problems:
        raise SystemExit("the varied documents would not verify:\n  " + "\n  ".join(problems[:10]))
    _, carried = varied_documents(base, plans[0])
    if carried:
        say(f"fleet_synth: carried unchanged from {base_path.name}: {', '.join(carried)}")
    key_path, _ = generate(output_dir / "keys")
    rogue_path, _ = generate(output_dir / "rogue-key")
    run_dir = output_dir / "fleet-synthetic"
    write_layout(run_dir, job_id, [p.name for p in plans], key_path, output_dir)
    healthy_names = [p.name for p in plans if not p.sickness]
    own = set(healthy_names if distinct is None else healthy_names[:distinct])
    todo = [p for p in plans if p.sickness or p.name in own]
    started = time.perf_counter()
    made: dict[str, bytes | None] = {}
    context = multiprocessing.get_context("forkserver")
    with context.Pool(workers, _init_worker, (str(base_path), str(key_path), str(rogue_path))) as pool:
        for i, (plan, data) in enumerate(pool.imap_unordered(_make, todo, chunksize=4), 1):
            write_node(run_dir, job_id, plan, data)
            made[plan.name] = data
            if i % 100 == 0 or i == len(todo):
                say(f"fleet_synth: {i}/{len(todo)} bundles ({time.perf_counter() - started:.0f} s)")
    healthy = [made[p.name] for p in todo if not p.sickness]
    for i, plan in enumerate(p for p in plans if p.name not in made):
        write_node(run_dir, job_id, plan, healthy[i % len(healthy)])
    return run_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output_dir", type=Path)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--base", type=Path, default=H200_BASE)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args(argv)
    if args.output_dir.exists():
        shutil.rmtree(args.output_dir)
    run_dir = make_fleet(args.output_dir, fleet_plan(args.nodes, args.seed), args.base, workers=args.workers)
    print(run_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
