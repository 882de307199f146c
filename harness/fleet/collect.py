"""`dossier fleet collect`: gather a fleet job's node bundles, verify each, compare the nodes.

Every node's bundle gets the checks of `dossier verify` and the judgement of `dossier accept`
(the same functions, harness/fleet/node.py), in a pool of worker processes that read one bundle
at a time (harness/fleet/pool.py): a thousand nodes take well under a minute on two cores
(bench/RESULTS.md). Only a verified bundle's figures enter the table. A node without a bundle,
whose bundle fails verify, or whose check crashed or killed its worker, is named with the reason
and its log; the others are kept.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import registry
from harness.analysis import fleet as fleet_analysis
from harness.analysis.verdict import Verdict
from harness.errors import UsageError
from harness.fleet import actions, files, pool, slurm
from harness.fleet.metrics import metric_kinds, metric_table
from harness.fleet.node import NodeTask, check_node
from harness.fleet.progress import CollectProgress
from harness.schemas import violations

SUBMISSION = "submission.json"
LOG_TAIL_LINES = 30
NODE_TIMEOUT_S = 300  # one node's verify and acceptance; a worker past it is stopped, the node rejected


@dataclass(frozen=True)
class FleetRun:
    """A submitted fleet's run directory and what was recorded at submission."""

    path: Path
    job_id: str
    submission: dict[str, Any]

    def node_log(self, node: str) -> Path:
        return self.path / "logs" / f"slurm-{self.job_id}-{node}.out"

    def batch_log(self) -> Path:
        return self.path / "logs" / f"batch-{self.job_id}.out"

    def node_bundle(self, node: str) -> Path:
        return self.path / "nodes" / node / f"{node}.tar.gz"


def find_run(output_dir: Path, job_id: str) -> FleetRun:
    """The run directory under OUTPUT_DIR whose submission.json records JOB_ID."""
    for candidate in sorted(output_dir.glob(f"*/{SUBMISSION}")):
        try:
            submission = json.loads(files.read(candidate) or b"")
        except (OSError, ValueError) as exc:
            raise UsageError(
                f"{candidate} cannot be read as a fleet submission ({exc})",
                hint="move the damaged run directory aside, or pass another --output-dir",
            ) from exc
        if isinstance(submission, dict) and str(submission.get("job_id")) == job_id:
            return FleetRun(candidate.parent, job_id, submission)
    raise UsageError(
        f"no fleet run for job {job_id} under {output_dir}",
        hint="pass the --output-dir given to `dossier fleet submit`",
    )


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str | None:
    """The last LINES lines of a log (a regular file only: harness.fleet.files), why it was not read, or None."""
    data, why = files.read_or_why(path)
    if why is not None:
        return f"(not read: {why})"
    return None if data is None else "\n".join(data.decode(errors="replace").splitlines()[-lines:])


def nodes_of(run: FleetRun) -> list[str]:
    """The allocation's nodes, as the job recorded them (else as Slurm still remembers them)."""
    recorded = run.path / "nodelist"
    if os.path.lexists(recorded):
        return slurm.node_names((files.read(recorded) or b"").decode(errors="replace").split(), f"{recorded}")
    fields = slurm.job_fields(run.job_id)
    if fields and fields.get("NodeList") not in (None, "(null)", ""):
        return slurm.hostnames(fields["NodeList"])
    raise UsageError(
        f"job {run.job_id} never started on any node (no {recorded}, and Slurm does not know its nodes)",
        hint=f"see {run.batch_log()} and `scontrol show job {run.job_id}`",
    )


def exit_status(run: FleetRun, node: str) -> int | None:
    data, _ = files.read_or_why(run.path / "nodes" / node / "exit_code", files.RECORD_CAP)
    return _code(data)


def _code(data: bytes | None) -> int | None:
    """An exit status a node wrote (a number on one line), else None: anything else is not one."""
    text = (data or b"").decode(errors="replace").strip()
    return int(text) if re.fullmatch(r"-?[0-9]{1,4}", text) else None


def missing_bundle(run: FleetRun, node: str, result: dict[str, Any]) -> dict[str, Any]:
    """A node that wrote no bundle: failed, with its exit status and the tail of its log."""
    code = result["exit_code"]
    why = (
        f"dossier run exited with code {code} and wrote no bundle"
        if code is not None
        else "no exit status recorded: its dossier step was killed before it finished (step or job "
        "time limit, cancellation, or the node failed)"
    )
    log_tail = tail(run.node_log(node))
    if log_tail is None:  # the step may never have started: the batch log says why
        why += f"; the node wrote no log, see logs/{run.batch_log().name}"
        log_tail = tail(run.batch_log())
    return {
        **result,
        "status": "failed",
        "why": why,
        "log_tail": log_tail,
        "sku": None,
        "metrics": None,
        "acceptance": {"verdict": Verdict.INCOMPLETE, "why": "no bundle"},
    }


def judged(run: FleetRun, node: str, result: dict[str, Any], done: pool.Done) -> dict[str, Any]:
    """A node whose bundle a worker checked: ok (verified), or rejected with why."""
    if done.error is not None:  # the check itself crashed: the node is rejected, the collect goes on
        return {
            **result,
            "status": "rejected",
            "why": f"its bundle could not be checked: {done.error}",
            "log_tail": tail(run.node_log(node)),
            "verify": None,
            "sku": None,
            "metrics": None,
            "acceptance": {"verdict": Verdict.INCOMPLETE, "why": "bundle not checked"},
        }
    checked = done.result
    if checked["status"] != "ok":
        return {
            **result,
            **checked,
            "log_tail": tail(run.node_log(node)),
            "sku": None,
            "metrics": None,
            "acceptance": {"verdict": Verdict.INCOMPLETE, "why": "bundle fails verify"},
        }
    code = result["exit_code"]
    note = {} if code == 0 else {"why": f"bundle written, but dossier run exited with code {code}"}
    return {**result, **checked, **note, "bundle": f"nodes/{node}.tar.gz"}


def judge_nodes(
    run: FleetRun,
    nodes: list[str],
    public_key: Path,
    profile: str | None,
    workers: int,
    check: Callable[[NodeTask], Any] = check_node,
    progress: CollectProgress | None = None,
    allow_formats: tuple[int, ...] = (),
) -> list[dict[str, Any]]:
    """Every node's result, in node order: bundles checked by WORKERS processes, streaming."""
    results: dict[str, dict[str, Any]] = {}
    tasks = []
    for node in nodes:
        result = {"name": node, "exit_code": exit_status(run, node), "log": f"logs/{run.node_log(node).name}"}
        bundle = run.node_bundle(node)
        unread = files.not_regular(bundle) if os.path.lexists(bundle) else None
        if unread is not None:
            results[node] = {**missing_bundle(run, node, result), "why": f"its bundle was not read: {unread}"}
            if progress:
                progress.done("failed")
        elif bundle.exists():
            results[node] = result
            tasks.append(NodeTask(node, str(run.node_bundle(node)), str(public_key.resolve()), profile, allow_formats))
        else:
            results[node] = missing_bundle(run, node, result)
            if progress:
                progress.done("failed")
    for done in pool.run(tasks, check, workers, NODE_TIMEOUT_S, preload=("harness.fleet.node",)):
        name = done.task.name
        results[name] = judged(run, name, results[name], done)
        if progress:
            progress.done(results[name]["status"])
    return [results[node] for node in nodes]


def allreduce_result(run: FleetRun) -> dict[str, Any]:
    """The multi-node all-reduce: rank 0's document, validated, or why there is none."""
    folder = run.path / "allreduce"
    recorded, _ = files.read_or_why(folder / "exit_code", files.RECORD_CAP)
    code = _code(recorded)
    logs = sorted(p.name for p in folder.glob("rank-*.err") if files.not_regular(p) is None) if folder.is_dir() else []
    base = {"exit_code": code, "logs": [f"allreduce/{name}" for name in logs]}
    data, unread = files.read_or_why(folder / "rank-0.out", files.LOG_CAP)
    text = (data or b"").decode(errors="replace").strip()
    if code != 0 or not text:
        why = (
            f"its exit status is not a number ({recorded[:40]!r})"
            if recorded is not None and code is None
            else "the step never ran"
            if code is None
            else f"srun exited with code {code}"
        ) + (f"; rank 0's output not read: {unread}" if unread else "")
        return {**base, "status": "failed", "why": why, "log_tail": tail(folder / "rank-0.err")}
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        return {**base, "status": "failed", "why": f"rank 0 printed non-JSON ({exc.msg})"}
    found = violations("allreduce", document)
    if found:
        return {**base, "status": "failed", "why": f"rank 0's document breaks the allreduce schema: {found[0]}"}
    return {
        **base,
        "status": "ok",
        "document": "raw/allreduce.json",
        "headlines": registry.analysis_module("allreduce").headlines(document),
    }


def summary(nodes: list[dict[str, Any]], flags: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts a reader sees first: nodes by status, acceptance verdicts, SKUs, flagged nodes."""
    return {
        "nodes": len(nodes),
        "status": dict(sorted(Counter(n["status"] for n in nodes).items())),
        "acceptance": dict(sorted(Counter(n["acceptance"]["verdict"] for n in nodes).items())),
        "skus": dict(
            sorted(Counter(n.get("sku") or fleet_analysis.NO_SKU for n in nodes if n["status"] == "ok").items())
        ),
        "flagged_nodes": len({f["node"] for f in flags}),
    }


def fleet_document(
    run: FleetRun, nodes: list[dict[str, Any]], allreduce: dict[str, Any], job_state: str | None
) -> dict[str, Any]:
    """fleet.json: the job, every node, the per-metric per-SKU table and its flags."""
    measured = {n["name"]: n["metrics"] for n in nodes if n["metrics"] is not None}
    table = fleet_analysis.build_table(
        measured, metric_kinds(), {n["name"]: n.get("sku") for n in nodes}, {n["name"]: n.get("stack") for n in nodes}
    )
    flags = fleet_analysis.flags(table)
    nodes = actions.with_actions(nodes, flags)
    return {
        "kind": "rig-dossier fleet",
        "job": {
            "id": run.job_id,
            "state": job_state,
            "nodes": [n["name"] for n in nodes],
            "submission": run.submission,
        },
        "summary": summary(nodes, flags),
        "nodes": nodes,
        "failed_nodes": [n["name"] for n in nodes if n["status"] != "ok"],
        "metrics": metric_table(),
        "outlier_rule": {
            "text": fleet_analysis.RULE_TEXT,
            "relative_threshold": fleet_analysis.RELATIVE_THRESHOLD,
            "robust_z_threshold": fleet_analysis.ROBUST_Z_THRESHOLD,
            "min_nodes": fleet_analysis.MIN_NODES,
        },
        "table": table,
        "flags": flags,
        "outliers": fleet_analysis.outliers(table),
        "allreduce": allreduce,
    }


def job_state(job_id: str, wait_s: float) -> str | None:
    """The job's Slurm state once it has ended (waiting up to WAIT_S); None when Slurm does not know it
    or there is no Slurm client here (the run directory's records are then all there is)."""
    if not slurm.available():
        if wait_s > 0:
            slurm.job_state(job_id)  # raises: waiting needs the Slurm client
        return None
    state = slurm.job_state(job_id)
    if state is not None and state.split("+")[0] in slurm.ACTIVE_STATES:
        if wait_s <= 0:
            raise UsageError(
                f"job {job_id} is still {state}", hint="wait for it (`--wait SECONDS`) or collect it once it has ended"
            )
        state = slurm.wait(job_id, wait_s)
    return state


def check_nodes(
    run: FleetRun,
    nodes: list[str],
    public_key: Path,
    profile: str | None,
    workers: int | None = None,
    check: Callable[[NodeTask], Any] = check_node,
    console: Any = None,
    allow_formats: tuple[int, ...] = (),
) -> list[dict[str, Any]]:
    """NODES' results (all of the job's, or a shard's share), with progress."""
    with CollectProgress(len(nodes), console) as progress:
        return judge_nodes(
            run, nodes, public_key, profile, workers or pool.default_workers(), check, progress, allow_formats
        )


def assemble(run: FleetRun, results: list[dict[str, Any]], state: str | None) -> dict[str, Any]:
    """fleet.json from every node's result (checked here, or by the shards of a sharded collect)."""
    document = fleet_document(run, results, allreduce_result(run), state)
    found = violations("fleet", document)
    if found:  # our own document: a violation is a bug here, never the user's input
        raise AssertionError(f"fleet.json breaks schemas/fleet.schema.json: {found[0]}")
    return document


def collect(
    output_dir: Path,
    job_id: str,
    public_key: Path,
    profile: str | None,
    wait_s: float,
    workers: int | None = None,
    check: Callable[[NodeTask], Any] = check_node,
    console: Any = None,
    allow_formats: tuple[int, ...] = (),
) -> tuple[FleetRun, dict[str, Any]]:
    """Wait for the job to end (up to WAIT_S), then judge every node and the all-reduce."""
    run = find_run(output_dir, job_id)
    state = job_state(job_id, wait_s)
    results = check_nodes(run, nodes_of(run), public_key, profile, workers, check, console, allow_formats)
    return run, assemble(run, results, state)
