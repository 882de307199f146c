"""`dossier fleet collect`: gather a fleet job's node bundles, verify each, compare the nodes.

Every node's bundle is checked by `dossier verify` (its own process, the same check a colleague
would run); only a verified bundle's figures enter the table. A node without a bundle, or whose
bundle fails verify, is named with the reason and its log; the others are kept.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import registry
from harness.analysis import fleet as fleet_analysis
from harness.bundle.read import read_members
from harness.errors import UsageError
from harness.fleet import slurm
from harness.fleet.metrics import node_metrics
from harness.schemas import violations

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SUBMISSION = "submission.json"
LOG_TAIL_LINES = 30
VERIFY_TIMEOUT_S = 300
ACCEPT_TIMEOUT_S = 300


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
            submission = json.loads(candidate.read_bytes())
        except (OSError, ValueError) as exc:
            raise UsageError(f"{candidate} cannot be read as a fleet submission ({exc})",
                             hint="move the damaged run directory aside, or pass another --output-dir") from exc
        if isinstance(submission, dict) and str(submission.get("job_id")) == job_id:
            return FleetRun(candidate.parent, job_id, submission)
    raise UsageError(f"no fleet run for job {job_id} under {output_dir}",
                     hint="pass the --output-dir given to `dossier fleet submit`")


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str | None:
    if not path.exists():
        return None
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def nodes_of(run: FleetRun) -> list[str]:
    """The allocation's nodes, as the job recorded them (else as Slurm still remembers them)."""
    recorded = run.path / "nodelist"
    if recorded.exists():
        return recorded.read_text().split()
    fields = slurm.job_fields(run.job_id)
    if fields and fields.get("NodeList") not in (None, "(null)", ""):
        return slurm.hostnames(fields["NodeList"])
    raise UsageError(f"job {run.job_id} never started on any node (no {recorded}, and Slurm does not "
                     "know its nodes)", hint=f"see {run.batch_log()} and `scontrol show job {run.job_id}`")


def _harness_command(*argv: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
    """`python -m harness ARGV` in its own process, importing this very harness (as the local runner does)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "harness", *argv], capture_output=True, text=True,
                          timeout=timeout_s, check=False, env=env)


def verify_bundle(bundle: Path, public_key: Path) -> dict[str, Any]:
    """`dossier verify BUNDLE --key PUB --json`, in its own process: passed, exit code, its report."""
    done = _harness_command("verify", str(bundle), "--key", str(public_key), "--json", timeout_s=VERIFY_TIMEOUT_S)
    try:
        report: Any = json.loads(done.stdout)
    except json.JSONDecodeError:
        report = done.stdout.strip()
    return {"passed": done.returncode == 0, "exit_code": done.returncode, "report": report,
            "failures": verify_failures(report, done.stderr), "stderr": done.stderr.strip()}


def verify_failures(report: Any, stderr: str) -> list[str]:
    """One line per failed check: from `--json`'s checks where it has them, else verify's own lines."""
    checks = report.get("checks") if isinstance(report, dict) else None
    if isinstance(checks, list):
        return [f"{c.get('subject')}: {c.get('check')}: {c.get('detail')}"
                for c in checks if isinstance(c, dict) and not c.get("ok")]
    return [line for line in (str(report) + "\n" + stderr).splitlines() if line.strip()]


def read_raw(bundle: Path) -> dict[str, Any]:
    """probe/step name -> raw document, from a bundle that passed verify."""
    members = read_members(bundle, lambda n: n.startswith("raw/") and n.endswith(".json"))
    return {name.removeprefix("raw/").removesuffix(".json"): json.loads(m.data)
            for name, m in members.items() if m.data is not None}


def node_skus(raw: dict[str, Any]) -> list[str]:
    """The catalogue SKUs health identified on the node (empty on a CPU-only node)."""
    if "health" not in raw:
        return []
    devices = registry.analysis_module("health").headlines(raw["health"]).get("devices") or []
    return sorted({d["sku_id"] for d in devices if isinstance(d, dict) and d.get("sku_id")})


def acceptance(bundle: Path, raw: dict[str, Any], profile: str | None) -> dict[str, Any]:
    """`dossier accept BUNDLE --profile SKU`, where a profile applies."""
    skus = [profile] if profile else node_skus(raw)
    if len(skus) != 1:
        why = ("no catalogue SKU was identified on this node (CPU-only or unknown GPU); pass --profile"
               if not skus else f"the node has several SKUs ({', '.join(skus)}); pass --profile")
        return {"verdict": "not run", "why": why}
    done = _harness_command("accept", str(bundle), "--profile", skus[0], timeout_s=ACCEPT_TIMEOUT_S)
    verdict = {0: "pass", 1: "fail"}.get(done.returncode, "error")
    return {"verdict": verdict, "profile": skus[0], "exit_code": done.returncode,
            "output_tail": "\n".join((done.stdout + done.stderr).splitlines()[-LOG_TAIL_LINES:])}


def exit_status(run: FleetRun, node: str) -> int | None:
    path = run.path / "nodes" / node / "exit_code"
    text = path.read_text().strip() if path.exists() else ""
    return int(text) if text.lstrip("-").isdigit() else None


def node_result(run: FleetRun, node: str, public_key: Path, profile: str | None) -> dict[str, Any]:
    """One node: its status and why, its log, and (when verified) its metrics and acceptance."""
    code = exit_status(run, node)
    bundle = run.node_bundle(node)
    result: dict[str, Any] = {"name": node, "exit_code": code, "log": f"logs/{run.node_log(node).name}"}
    if not bundle.exists():
        why = (f"dossier run exited with code {code} and wrote no bundle" if code is not None else
               "no exit status recorded: its dossier step was killed before it finished (step or job "
               "time limit, cancellation, or the node failed)")
        log_tail = tail(run.node_log(node))
        if log_tail is None:  # the step may never have started: the batch log says why
            why += f"; the node wrote no log, see logs/{run.batch_log().name}"
            log_tail = tail(run.batch_log())
        return {**result, "status": "failed", "why": why, "log_tail": log_tail,
                "metrics": None, "acceptance": {"verdict": "not run", "why": "no bundle"}}
    verified = verify_bundle(bundle, public_key)
    result.update(bundle=f"nodes/{node}.tar.gz", verify=verified)
    if not verified["passed"]:
        return {**result, "status": "rejected", "why": "its bundle fails `dossier verify`",
                "log_tail": tail(run.node_log(node)), "metrics": None,
                "acceptance": {"verdict": "not run", "why": "bundle fails verify"}}
    raw = read_raw(bundle)
    note = {} if code == 0 else {"why": f"bundle written, but dossier run exited with code {code}"}
    return {**result, **note, "status": "ok", "metrics": node_metrics(raw),
            "acceptance": acceptance(bundle, raw, profile)}


def allreduce_result(run: FleetRun) -> dict[str, Any]:
    """The multi-node all-reduce: rank 0's document, validated, or why there is none."""
    folder = run.path / "allreduce"
    code_file = folder / "exit_code"
    code = int(code_file.read_text().strip()) if code_file.exists() else None
    logs = sorted(p.name for p in folder.glob("rank-*.err")) if folder.exists() else []
    base = {"exit_code": code, "logs": [f"allreduce/{name}" for name in logs]}
    stdout = folder / "rank-0.out"
    text = stdout.read_text().strip() if stdout.exists() else ""
    if code != 0 or not text:
        why = "the step never ran" if code is None else f"srun exited with code {code}"
        return {**base, "status": "failed", "why": why, "log_tail": tail(folder / "rank-0.err")}
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        return {**base, "status": "failed", "why": f"rank 0 printed non-JSON ({exc.msg})"}
    found = violations("allreduce", document)
    if found:
        return {**base, "status": "failed", "why": f"rank 0's document breaks the allreduce schema: {found[0]}"}
    return {**base, "status": "ok", "document": "raw/allreduce.json",
            "headlines": registry.analysis_module("allreduce").headlines(document)}


def fleet_document(run: FleetRun, nodes: list[dict[str, Any]], allreduce: dict[str, Any],
                   job_state: str | None) -> dict[str, Any]:
    """fleet.json: the job, every node, the per-metric table and its outliers."""
    measured = {n["name"]: n["metrics"] for n in nodes if n["metrics"] is not None}
    rates = registry.fleet_metrics()
    table = fleet_analysis.build_table(measured, [m.name for _, m in rates])
    return {
        "kind": "rig-dossier fleet",
        "job": {"id": run.job_id, "state": job_state, "nodes": [n["name"] for n in nodes],
                "submission": run.submission},
        "nodes": nodes,
        "failed_nodes": [n["name"] for n in nodes if n["status"] != "ok"],
        "metrics": {m.name: {"unit": m.unit, "probe": probe, "description": m.description} for probe, m in rates},
        "outlier_rule": {"text": fleet_analysis.RULE_TEXT, "relative_threshold": fleet_analysis.RELATIVE_THRESHOLD,
                         "robust_z_threshold": fleet_analysis.ROBUST_Z_THRESHOLD,
                         "min_nodes": fleet_analysis.MIN_NODES},
        "table": table,
        "outliers": fleet_analysis.outliers(table),
        "allreduce": allreduce,
    }


def collect(output_dir: Path, job_id: str, public_key: Path, profile: str | None,
            wait_s: float) -> tuple[FleetRun, dict[str, Any]]:
    """Wait for the job to end (up to WAIT_S), then judge every node and the all-reduce."""
    run = find_run(output_dir, job_id)
    state = slurm.job_state(job_id)
    if state is not None and state.split("+")[0] in slurm.ACTIVE_STATES:
        if wait_s <= 0:
            raise UsageError(f"job {job_id} is still {state}",
                             hint="wait for it (`--wait SECONDS`) or collect it once it has ended")
        state = slurm.wait(job_id, wait_s)
    nodes = [node_result(run, node, public_key, profile) for node in nodes_of(run)]
    document = fleet_document(run, nodes, allreduce_result(run), state)
    found = violations("fleet", document)
    if found:  # our own document: a violation is a bug here, never the user's input
        raise AssertionError(f"fleet.json breaks schemas/fleet.schema.json: {found[0]}")
    return run, document
