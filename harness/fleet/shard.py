"""Sharded collects: `fleet collect JOBID --shard I/N` checks one share of the job's nodes and writes a
signed partial result; `fleet merge JOBID` checks the N partials and joins them into the one fleet
bundle, the same bytes an unsharded collect writes.

A share is contiguous: nodes [I*n/N, (I+1)*n/N) of the job's node list. A partial is a DSSE
envelope (OUTPUT_DIR/fleet-JOBID.shards/shard-I-of-N.intoto.json) over an in-toto statement whose
subjects are the node bundles it verified (by sha256) and the job's node list, and whose
predicate holds each node's result, exactly what an unsharded collect keeps per node. The merge
trusts a partial only when its signature verifies with the fleet's public key, it names this run
directory, job and node list, and the N partials cover the nodes once each; the node bundles are
hashed again when the fleet bundle is written, so a bundle changed since its shard checked it is
refused (harness/fleet/archive.py).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from harness.bundle.write import write_atomically
from harness.errors import CheckFailed, UsageError
from harness.fleet import files
from harness.fleet.collect import FleetRun
from harness.signing import dsse
from harness.signing.keys import SigningKey
from harness.signing.statement import StatementError, sign_statement, statement, subject, verify_statement

PREDICATE_TYPE = "https://rig-dossier.dev/attestation/fleet-shard/v1"
SPEC = re.compile(r"^(\d+)/(\d+)$")
FILE = re.compile(r"^shard-(\d+)-of-(\d+)\.intoto\.json$")


@dataclass(frozen=True)
class Shard:
    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        found = SPEC.match(text.strip())
        if not found or not 0 <= int(found.group(1)) < int(found.group(2)):
            raise UsageError(f"--shard {text!r}: expected I/N with 0 <= I < N (e.g. 0/10 ... 9/10)")
        return cls(int(found.group(1)), int(found.group(2)))

    def nodes(self, nodes: list[str]) -> list[str]:
        """This share of the job's nodes, in node order."""
        return nodes[self.index * len(nodes) // self.count : (self.index + 1) * len(nodes) // self.count]

    @property
    def file_name(self) -> str:
        return f"shard-{self.index}-of-{self.count}.intoto.json"


def folder(output_dir: Path, job_id: str) -> Path:
    return output_dir / f"fleet-{job_id}.shards"


def nodelist_sha256(nodes: list[str]) -> str:
    return hashlib.sha256(("\n".join(nodes) + "\n").encode()).hexdigest()


def envelope(
    run: FleetRun, shard: Shard, nodes: list[str], results: list[dict[str, Any]], profile: str | None, key: SigningKey
) -> bytes:
    """The signed partial result of SHARD: every node of its share with its result."""
    subjects = [subject(r["bundle"], r["sha256"]) for r in results if r["status"] == "ok"]
    subjects.append(subject("job/nodelist", nodelist_sha256(nodes)))
    predicate = {
        "job_id": run.job_id,
        "run_dir": str(run.path),
        "shard": {"index": shard.index, "count": shard.count},
        "nodes_in_job": len(nodes),
        "profile": profile,
        "results": results,
    }
    return sign_statement(statement(subjects, PREDICATE_TYPE, predicate), key)


def write(output_dir: Path, run: FleetRun, shard: Shard, data: bytes) -> Path:
    destination = folder(output_dir, run.job_id) / shard.file_name
    if destination.exists():
        raise UsageError(f"{destination} already exists", hint="move it aside to check this share again")
    destination.parent.mkdir(exist_ok=True)
    return write_atomically(data, destination)


def _verified(path: Path, trusted: Ed25519PublicKey) -> dict[str, Any]:
    try:
        return verify_statement(files.read(path) or b"", trusted, PREDICATE_TYPE)
    except (OSError, dsse.EnvelopeError, StatementError) as exc:
        raise CheckFailed(
            f"refused: {path} does not verify as a shard of a fleet collect: {exc}",
            hint="check it again with `dossier fleet collect JOBID --shard I/N`, signed by the fleet key",
        ) from exc


def _check_predicate(path: Path, found: dict[str, Any], run: FleetRun, nodes: list[str], shard: Shard) -> None:
    predicate = found["predicate"]
    if predicate.get("job_id") != run.job_id or predicate.get("run_dir") != str(run.path):
        raise UsageError(
            f"{path} is a shard of job {predicate.get('job_id')} in {predicate.get('run_dir')}, not of job "
            f"{run.job_id} in {run.path}",
            hint="merge the shards of one collect only",
        )
    if predicate.get("shard") != {"index": shard.index, "count": shard.count}:
        raise UsageError(
            f"{path}: its statement says shard {predicate.get('shard')}, its name {shard.index}/{shard.count}"
        )
    signed = {s["name"]: s["digest"]["sha256"] for s in found["subject"]}
    if signed.get("job/nodelist") != nodelist_sha256(nodes):
        raise UsageError(
            f"{path} was checked against another node list than job {run.job_id}'s",
            hint="the run directory's nodelist changed since the shards were checked: collect again",
        )
    names = [r.get("name") for r in predicate.get("results", [])]
    if names != shard.nodes(nodes):
        raise UsageError(
            f"{path} holds nodes {names[:3]}... where shard {shard.index}/{shard.count} of the job's "
            f"{len(nodes)} nodes is {shard.nodes(nodes)[:3]}..."
        )
    for result in predicate["results"]:
        if result.get("status") == "ok" and signed.get(result.get("bundle")) != result.get("sha256"):
            raise UsageError(f"{path}: node {result['name']}'s bundle digest is not the one its statement signs")


def read(
    output_dir: Path, run: FleetRun, nodes: list[str], trusted: Ed25519PublicKey
) -> tuple[list[dict[str, Any]], Any]:
    """Every node's result from the N partials of JOB (in node order), and the profile they used."""
    where = folder(output_dir, run.job_id)
    files = {}
    for path in sorted(where.glob("*")) if where.is_dir() else []:
        found = FILE.match(path.name)
        if found:
            files[Shard(int(found.group(1)), int(found.group(2)))] = path
    if not files:
        raise UsageError(
            f"no shards of job {run.job_id} under {where}",
            hint=f"check them with `dossier fleet collect {run.job_id} --shard I/N` first",
        )
    counts = sorted({s.count for s in files})
    if len(counts) != 1:
        raise UsageError(
            f"{where} holds shards of different splits ({', '.join(f'of {c}' for c in counts)})",
            hint="keep the shards of one split only",
        )
    missing = [i for i in range(counts[0]) if Shard(i, counts[0]) not in files]
    if missing:
        raise UsageError(
            f"job {run.job_id}: shard(s) {', '.join(map(str, missing))} of {counts[0]} missing in {where}",
            hint=f"see logs/collect-*.out in {run.path}, and check them with --shard I/{counts[0]}",
        )
    results: list[dict[str, Any]] = []
    profiles = set()
    for shard in sorted(files, key=lambda s: s.index):
        statement = _verified(files[shard], trusted)
        _check_predicate(files[shard], statement, run, nodes, shard)
        results += statement["predicate"]["results"]
        profiles.add(statement["predicate"].get("profile"))
    if len(profiles) != 1:
        raise UsageError(
            f"the shards of job {run.job_id} were judged against different profiles: {sorted(map(str, profiles))}"
        )
    return results, profiles.pop()
