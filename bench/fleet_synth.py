#!/usr/bin/env python3
"""A synthetic fleet run directory for `dossier fleet collect`, made from a real signed bundle.

Each node bundle starts from the documents of a base bundle (default: the dossier measured on the
lent H200, tests/fixtures/h200/dossier-h200.tar.gz), varied per node, and is assembled, its
report.md rendered and signed by the harness's own code (`harness.bundle.assemble.assemble`
over a RunRecord), so it verifies for real. What varies, and how it stays consistent:

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

Library (used by bench/fleet_collect.py and tests/test_fleet_collect.py) and a command:

    python bench/fleet_synth.py OUT_DIR --nodes 1000 [--base BUNDLE] [--workers 2] [--seed 19]
"""

from __future__ import annotations

import argparse
import copy
import json
import multiprocessing
import random
import shutil
import statistics
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import registry  # noqa: E402
from harness.analysis import bandwidth as bw  # noqa: E402
from harness.analysis import roofline as rl  # noqa: E402
from harness.analysis import roofline_figures as rf  # noqa: E402
from harness.analysis.health_contracts import evaluate as health_contracts  # noqa: E402
from harness.bundle import layout  # noqa: E402
from harness.bundle.assemble import assemble  # noqa: E402
from harness.bundle.read import read_all  # noqa: E402
from harness.fleet.script import FleetSpec, render_node_script, render_sbatch  # noqa: E402
from harness.probes import bandwidth as bandwidth_probe  # noqa: E402
from harness.run.provenance import tool_info  # noqa: E402
from harness.run.records import COMPLETED, RunRecord, StepRecord  # noqa: E402
from harness.runners.interface import ProbeRun  # noqa: E402
from harness.signing.keys import SigningKey, generate, load_private  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
H200_BASE = ROOT / "tests" / "fixtures" / "h200" / "dossier-h200.tar.gz"
PLOT_NOTE = "not rendered: a synthetic fleet node made by bench/fleet_synth.py (one render per node would outlast the collect)"
SICKNESSES = ("slow-hbm", "pcie-x8", "throttling", "bad-signature", "missing-bundle")
THERMAL = ("sw_thermal_slowdown", 0x20)


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
    plans = [NodePlan(f"n{i + 1:0{max(width, 4)}d}", hbm=rng.gauss(1, 0.01), gemm=rng.gauss(1, 0.01),
                      clock=1.0, stress=rng.gauss(1, 0.01), transfer=rng.gauss(1, 0.01)) for i in range(count)]
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


# --- varying the documents consistently --------------------------------------------------------

def _point(point: dict[str, Any], kernel: str, factor: float, cache: Any, empty_s: float) -> dict[str, Any]:
    times = [t / factor for t in point["iteration_times_s"]]
    again = bandwidth_probe.point_record(point["size_mib"], point["elements"], kernel, times,
                                         cache if isinstance(cache, int) else None, empty_s)
    return {**point, **again, "warmup_iterations": point["warmup_iterations"]}


def vary_bandwidth(document: dict[str, Any], factor: float) -> dict[str, Any]:
    """Every HBM time / FACTOR; points, plateau, repeats and reference as the probe builds them."""
    doc = copy.deepcopy(document)
    kernel, cache, empty_s = doc["kernel"], doc["cache"]["size_bytes"], doc["launch"]["empty_launch_s"]
    doc["sweep"] = [_point(p, kernel, factor, cache, empty_s) for p in doc["sweep"]]
    points = [{"size_mib": p["size_mib"], "gbps": p["median_gbps"], "marks": p["marks"], "why": p["why"]}
              for p in doc["sweep"]]
    found, top = bw.plateau(points), max(points, key=lambda p: p["gbps"])
    doc["plateau"].update(reached=found["reached"], sizes_mib=found["sizes_mib"] if found["reached"] else [],
                          gbps=found["gbps"], why=found["why"],
                          maximum={**doc["plateau"]["maximum"], "size_mib": top["size_mib"], "gbps": top["gbps"]},
                          off_plateau=bw.explain_off_plateau(points, found["gbps"],
                                                             found["sizes_mib"] if found["reached"] else []))
    repeats = doc["repeats"]
    repeats["runs"] = [_point(r, kernel, factor, cache, empty_s) for r in repeats["runs"]]
    repeats["medians_gbps"] = [r["median_gbps"] for r in repeats["runs"]]
    repeats["spread"] = bw.spread(repeats["medians_gbps"])
    repeats["verdict"] = bw.repeat_verdict(repeats["spread"])
    repeats["trusted"] = repeats["verdict"] == "pass"
    ref = doc["reference"]
    if ref.get("known_good_gbps") and found["gbps"] is not None:
        ref["known_good_ratio"] = found["gbps"] / ref["known_good_gbps"]
    if ref.get("spec_gbps") and found["gbps"] is not None:
        ref["spec_ratio"] = found["gbps"] / ref["spec_gbps"]
    return doc


def vary_roofline(document: dict[str, Any], factor: float, roof_gbps: float | None, clock: float) -> dict[str, Any]:
    """GEMM times / FACTOR, the memory roof ROOF_GBPS (the node's bandwidth median, as `dossier run`
    passes it: '%.6g'), the SM clock x CLOCK; every stated figure recomputed by the analysis."""
    doc = copy.deepcopy(document)
    if roof_gbps is not None and isinstance(doc["roofs"].get("bandwidth_gbps"), (int, float)):
        doc["roofs"]["bandwidth_gbps"] = float(f"{roof_gbps:.6g}")
        if "--bandwidth-gbps" in doc.get("argv", []):
            doc["argv"][doc["argv"].index("--bandwidth-gbps") + 1] = f"{roof_gbps:.6g}"
    roofs = doc["roofs"]
    if not rf._roofs_known(doc):
        return doc
    roofs["ridge_flop_per_byte"] = rl.ridge_flop_per_byte(roofs["peak_tflops"], roofs["bandwidth_gbps"])
    doc["predictions"]["shapes"] = [rf._prediction(doc, p["label"]) for p in doc["predictions"]["shapes"]]
    for shape in rf._measured(doc):
        shape["times_s"] = [t / factor for t in shape["times_s"]]
        shape["median_s"] = statistics.median(shape["times_s"])
        _slow_clock(shape.get("clocks"), clock)
        p = rf._prediction(doc, shape["label"])
        shape.update(achieved_tflops=p["flops"] / shape["median_s"] / 1e12,
                     effective_gbps=p["min_bytes"] / shape["median_s"] / 1e9,
                     fraction_of_attainable=p["flops"] / shape["median_s"] / 1e12 / p["attainable_tflops"])
        shape["explanation"] = rl.explain(p, shape, rl.context_of(doc))
    _restate_fusion(doc)
    head = rf.headlines(doc)
    doc["summary"].update({k: head[k] for k in doc["summary"] if k in head})
    return doc


def _slow_clock(clocks: Any, factor: float) -> None:
    if factor == 1.0 or not isinstance(clocks, dict):
        return
    if isinstance(clocks.get("sm_clock_mhz_samples"), list):
        clocks["sm_clock_mhz_samples"] = [round(s * factor) for s in clocks["sm_clock_mhz_samples"]]
        clocks["sm_clock_mhz_median"] = statistics.median(clocks["sm_clock_mhz_samples"])
    elif isinstance(clocks.get("sm_clock_mhz_median"), (int, float)):
        clocks["sm_clock_mhz_median"] = round(clocks["sm_clock_mhz_median"] * factor)
    if isinstance(clocks.get("clock_event_reasons"), list) and THERMAL[0] not in clocks["clock_event_reasons"]:
        clocks["clock_event_reasons"] = [*clocks["clock_event_reasons"], THERMAL[0]]


def _restate_fusion(doc: dict[str, Any]) -> None:
    fusion = doc.get("fusion")
    if not isinstance(fusion, dict) or not isinstance(fusion.get("comparison"), dict):
        return
    accounting = rl.fusion_accounting(fusion["elements"], fusion["element_bytes"], fusion["unfused_kernels"],
                                      fusion["flops_per_element"])
    timed = dict(zip(("unfused", "fused"), rf.fusion_medians(fusion)))
    rates = {v: {**fusion[v], "median_s": s, "achieved_gbps": accounting[f"{v}_bytes"] / s / 1e9}
             for v, s in timed.items()}
    fusion["comparison"] = rl.fusion_comparison({**fusion, **accounting, **rates}, doc["roofs"]["peak_tflops"],
                                                doc["roofs"]["bandwidth_gbps"])


def vary_health_load(document: dict[str, Any], pcie_width: int | None, clock: float) -> dict[str, Any]:
    """The PCIe link width and SM clock under load; the contracts re-judged from the facts."""
    doc = copy.deepcopy(document)
    for device in doc.get("devices") or []:
        pcie = device.get("pcie")
        if pcie_width is not None and isinstance(pcie, dict) and "current_width" in pcie:
            pcie["current_width"] = pcie_width
        if clock != 1.0:
            clocks = device.get("clocks") or {}
            for key in ("sm_current_mhz", "graphics_current_mhz"):
                if isinstance(clocks.get(key), int):
                    clocks[key] = round(clocks[key] * clock)
            reasons = device.get("clock_event_reasons")
            if isinstance(reasons, dict) and isinstance(reasons.get("mask"), int):
                reasons["mask"] |= THERMAL[1]
                reasons["names"] = sorted(set(reasons.get("names") or []) | {THERMAL[0]})
    load = doc.get("load")
    if clock != 1.0 and isinstance(load, dict):
        for record in load.get("devices") or []:
            for sample in record.get("samples") or []:
                if isinstance(sample.get("sm_clock_mhz"), int):
                    sample["sm_clock_mhz"] = round(sample["sm_clock_mhz"] * clock)
                    sample["clock_event_reasons_mask"] = int(sample.get("clock_event_reasons_mask") or 0) | THERMAL[1]
                    sample["clock_event_reasons"] = sorted(set(sample.get("clock_event_reasons") or []) | {THERMAL[0]})
    if isinstance(doc.get("contracts"), list):
        doc["contracts"] = health_contracts(doc)
    return doc


def vary_stress(document: dict[str, Any], factor: float) -> dict[str, Any]:
    """Every bucket's GEMM times and span / FACTOR (each rate x FACTOR); figures and summary recomputed."""
    from harness.analysis import stress
    doc = copy.deepcopy(document)
    flop = doc["settings"]["flop_per_gemm"]
    for record in doc.get("devices", []):
        for bucket in stress.buckets_of(record):
            bucket["gemm_ms"] = [t / factor for t in bucket["gemm_ms"]]
            bucket["span_ms"] = bucket["span_ms"] / factor
            bucket["figures"] = stress.bucket_figures(bucket, stress.samples_of(record), flop)
    doc["summary"] = stress.headlines(doc)
    return doc


def vary_transfer(document: dict[str, Any], factor: float) -> dict[str, Any]:
    """Every copy time / FACTOR; each series' points, plateau, latency and link, the groups and the
    checks recomputed by harness.analysis.transfer."""
    from harness.analysis import transfer
    doc = copy.deepcopy(document)
    for s in doc.get("series", []):
        for point in s["points"]:
            point["copy_times_s"] = [t / factor for t in point["copy_times_s"]]
    figures = transfer.all_series_figures(doc)
    for s in doc.get("series", []):
        fig = figures[s["id"]]
        by_bytes = {p["bytes"]: p for p in fig["points"]}
        for point in s["points"]:
            again = by_bytes[point["bytes"]]
            point.update(median_s=again["median_s"], gbps=again["gbps"], marks=again["marks"])
        s["plateau"].update({k: fig["plateau"][k] for k in ("reached", "sizes_bytes", "gbps")})
        s["latency"]["median_us"] = fig["latency"]["median_us"]
        s["link"].update({k: fig["link"][k] for k in ("ceiling_gbps", "rate_gbps", "ratio")})
    for group in doc.get("groups", []):
        again = transfer.group_figures(group, figures)
        group["total_plateau_gbps"] = again["total_plateau_gbps"]
        for stated, recomputed in zip(group["per_size"], again["per_size"]):
            stated.update(total_gbps=recomputed["total_gbps"], overlap=recomputed["overlap"])
    for name, rule in (("link_checks", transfer.link_checks), ("p2p_checks", transfer.p2p_checks)):
        if name in doc:
            doc[name] = rule(doc, figures)
    return doc


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
    return ProbeRun(probe=entry["probe"], argv=tuple(entry["argv"]), env=dict(entry["env"] or {}),
                    runner=entry["runner"], image=entry["image"], started_at=entry["started_at"],
                    finished_at=entry["finished_at"], exit_code=entry["exit_code"], timed_out=bool(entry["timed_out"]),
                    stdout=stdout, stderr=stderr, note=entry.get("note"))


def step_record(entry: dict[str, Any], base: Base, documents: dict[str, Any]) -> StepRecord:
    common = dict(step=entry["step"], title=entry["title"], lab_step=entry["lab_step"], kind=entry["kind"],
                  status=entry["status"], schema=entry["schema"], probe=entry.get("probe"),
                  analysis=entry.get("analysis"), plots=None, why=entry.get("why"),
                  inputs=dict(entry.get("inputs") or {}), checkpoint=entry.get("checkpoint"),
                  needs=tuple(entry.get("needs") or ()), function=entry.get("function"),
                  schema_violations=tuple(entry.get("schema_violations") or ()))
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
    return RunRecord(steps=steps, runner=commands["runner"], tool=tool, host=host, options=commands["options"],
                     started_at=commands["started_at"], finished_at=commands["finished_at"])


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
        f"synthetic fleet of {len(nodes)} nodes (bench/fleet_synth.py): no Slurm job ran, no all-reduce step\n")
    submission = {"job_id": job_id, "argv": ["bench/fleet_synth.py", str(output_dir), "--nodes", str(len(nodes))],
                  "run_dir": str(run_dir), "public_key": str(key_path.with_suffix(".pub")),
                  "spec": {"key": str(key_path), "nodes": len(nodes)}, "synthetic": True}
    (run_dir / "submission.json").write_text(json.dumps(submission, sort_keys=True, indent=1) + "\n")


def write_node(run_dir: Path, job_id: str, plan: NodePlan, data: bytes | None) -> None:
    folder = run_dir / "nodes" / plan.name
    folder.mkdir(parents=True, exist_ok=True)
    log = run_dir / "logs" / f"slurm-{job_id}-{plan.name}.out"
    if data is None:  # missing bundle: the node's dossier failed before writing one
        (folder / "exit_code").write_text("3\n")
        log.write_text(f"node {plan.name}: dossier run: step bandwidth failed: the probe crashed (synthetic)\n"
                       "dossier run exit code 3\n")
        return
    (folder / f"{plan.name}.tar.gz").write_bytes(data)
    (folder / "exit_code").write_text("0\n")
    log.write_text(f"node {plan.name}: synthetic bundle made by bench/fleet_synth.py\ndossier run exit code 0\n")


_WORKER: dict[str, Any] = {}


def _init_worker(base_path: str, key_path: str, rogue_path: str) -> None:
    _WORKER.update(base=Base.read(Path(base_path)), key=load_private(Path(key_path)),
                   rogue=load_private(Path(rogue_path)), tool=tool_info())


def _make(plan: NodePlan) -> tuple[NodePlan, bytes | None]:
    if plan.sickness == "missing-bundle":
        return plan, None
    return plan, node_bundle(_WORKER["base"], plan, _WORKER["key"], _WORKER["rogue"], _WORKER["tool"])


def make_fleet(output_dir: Path, plans: list[NodePlan], base_path: Path = H200_BASE, job_id: str = "19000",
               workers: int = 2, distinct: int | None = None, say=print) -> Path:
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
