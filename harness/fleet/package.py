"""The fleet bundle's members: fleet.json and fleet.md, the job as submitted, every log, the
verified node bundles and the all-reduce document. Signed by `harness.fleet.sealing`.

Layout:
  fleet.json, fleet.md            the comparison (schemas/fleet.schema.json) and its report
  fleet.csv, plots/METRIC.png|svg the full per-node table, and each headline rate's distribution
  job/fleet.sbatch, job/node.sh, job/submission.json, job/nodelist   what ran
  logs/batch-JOB.out, logs/slurm-JOB-NODE.out   the batch log and every node's log
  nodes/NODE.tar.gz               each node's own signed bundle (verified before it was put here)
  raw/allreduce.json, allreduce/rank-T.err      the multi-node all-reduce
  baseline/SKU.profile.json       with --baseline-out: each signed profile made from the healthy nodes
  attestation.intoto.json         DSSE envelope over the in-toto statement of all of the above
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness import __version__
from harness.fleet import files
from harness.fleet.archive import FileMember
from harness.fleet.collect import FleetRun
from harness.fleet.node import not_accepted
from harness.schemas import violations

JOB_FILES = ("fleet.sbatch", "node.sh", "submission.json", "nodelist")


def json_bytes(value: Any) -> bytes:
    return (json.dumps(value, allow_nan=False, sort_keys=True, indent=1) + "\n").encode()


def _read_if(path: Path) -> bytes | None:
    """A regular file's bytes (never through a link, never a FIFO or device: harness.fleet.files), else None."""
    return files.read_or_why(path)[0]


def fleet_files(run: FleetRun, document: dict[str, Any], rendered: dict[str, bytes]) -> dict[str, bytes | FileMember]:
    """Every member but the attestation: RENDERED (fleet.md, fleet.csv, plots) and fleet.json in
    memory, the logs and job files read, each verified node bundle streamed from disk at the size
    and sha256 it was verified at."""
    files: dict[str, bytes | FileMember] = {"fleet.json": json_bytes(document), **rendered}
    candidates = {f"job/{name}": run.path / name for name in JOB_FILES}
    candidates[f"logs/{run.batch_log().name}"] = run.batch_log()
    for node in document["nodes"]:
        candidates[node["log"]] = run.path / node["log"]
        if node["status"] == "ok":
            files[node["bundle"]] = FileMember(run.node_bundle(node["name"]), node["size"], node["sha256"])
    for log in document["allreduce"]["logs"]:
        candidates[log] = run.path / log
    if document["allreduce"]["status"] == "ok":
        candidates["raw/allreduce.json"] = run.path / "allreduce" / "rank-0.out"
    for name, path in candidates.items():
        data = _read_if(path)
        if data is not None:
            files[name] = data
    return files


def add_baseline(document: dict[str, Any], record: dict[str, Any]) -> None:
    """fleet.json's `baseline`: the profiles made from the healthy nodes (harness.fleet.baseline)."""
    document["baseline"] = record
    found = violations("fleet", document)
    if found:  # our own document: a violation is a bug here, never the user's input
        raise AssertionError(f"fleet.json breaks schemas/fleet.schema.json: {found[0]}")


def predicate(document: dict[str, Any]) -> dict[str, Any]:
    """What the fleet attestation records: the job, each node's status and bundle, the outliers (and,
    where asked, the baseline profiles made from the healthy nodes)."""
    found = {
        "tool": {"name": "rig-dossier", "version": __version__},
        "job_id": document["job"]["id"],
        "nodes": [
            {"name": n["name"], "status": n["status"], "bundle": n.get("bundle"), "sha256": n.get("sha256")}
            for n in document["nodes"]
        ],
        "outliers": document["outliers"],
        "acceptance_failed": sorted(n["name"] for n in document["nodes"] if not_accepted(n)),
    }
    if "baseline" in document:
        found["baseline_profiles"] = [
            {k: made[k] for k in ("sku", "member", "sha256", "nodes")} for made in document["baseline"]["profiles"]
        ]
    return found
