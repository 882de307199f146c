"""`dossier fleet collect|merge --baseline-out PATH [--baseline-sku NAME]`: an acceptance profile made
from the fleet's healthy nodes, by `dossier baseline`'s own code.

Once the nodes are checked and compared, harness.fleet.healthy picks the healthy nodes of each SKU.
Their bundles are read again from the run directory, each refused unless it is byte for byte the
bundle that was verified (its sha256), and go through harness.judge.acceptance.baseline.build in its
two passes (each node read for the draft, then judged against it) in worker processes
(harness.fleet.pool): no process holds more than one node bundle at a time. The profile is signed
with the fleet's key (harness.judge.acceptance.signed_profile), names every input node bundle by
sha256, and says in `baseline.fleet` how many of the job's nodes were left out and why. fleet.json's
`baseline` says which profiles were written and from which nodes, and the fleet bundle holds each as
baseline/SKU.profile.json, so a profile that could not be written where asked is not lost.

One profile per SKU: a PATH with `{sku}` in its file name gives one file per SKU that has a healthy
node; a PATH without it is one file, so the healthy nodes must be of one SKU or `--baseline-sku`
names which.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import catalogue, paths, registry
from harness.analysis.memo import remembering
from harness.bundle.read import UnsafeBundle, read_members
from harness.bundle.view import BundleFormatError, BundleView
from harness.errors import CheckFailed, DossierError, UsageError
from harness.fleet import healthy, pool
from harness.fleet.collect import NODE_TIMEOUT_S, FleetRun
from harness.fleet.node import file_sha256
from harness.fleet.progress import CollectProgress
from harness.judge.acceptance.baseline.build import Verdicts, make, verdicts
from harness.judge.acceptance.baseline.inputs import Input, Reading, read
from harness.judge.acceptance.profile import SCHEMA, Profile
from harness.judge.acceptance.signed_profile import sign_profile
from harness.schemas import violations
from harness.signing.keys import SigningKey, public_path_for

SKU_FIELD = "{sku}"
MEMBER = "baseline/{sku}.profile.json"  # where the fleet bundle holds a profile


@dataclass(frozen=True)
class Request:
    """--baseline-out (a file, or a file name with {sku}: one per SKU) and --baseline-sku."""

    out: Path
    sku: str | None

    @property
    def per_sku(self) -> bool:
        return SKU_FIELD in self.out.name

    def path(self, sku: str) -> Path:
        return self.out.with_name(self.out.name.replace(SKU_FIELD, sku))


def request(out: Path | None, sku: str | None, taken: Iterable[tuple[str, Path | None]] = ()) -> Request | None:
    """The options checked before any bundle is read (exit 2): a catalogue SKU, a path that can be
    written and is none of TAKEN (the other outputs, by option)."""
    if out is None:
        if sku is not None:
            raise UsageError("--baseline-sku goes with --baseline-out (where the profile is written)")
        return None
    if sku is not None and catalogue.by_id(sku) is None:
        raise UsageError(
            f"--baseline-sku {sku}: not a catalogue SKU (the catalogue has "
            f"{', '.join(s['id'] for s in catalogue.skus())})",
            hint="a fleet's healthy nodes are those that passed acceptance against their catalogue SKU's "
            "profile; for GPUs the catalogue lacks, use `dossier baseline --sku NAME`",
        )
    if SKU_FIELD in str(out.parent):
        raise UsageError(f"--baseline-out {out}: {SKU_FIELD} goes in the file name, not in a folder's")
    asked = Request(out, sku)
    if asked.per_sku and sku is None:
        paths.output_dir(out.parent, "--baseline-out")
        return asked
    paths.output_files([*taken, ("--baseline-out", asked.path(sku) if sku else out)])
    return asked


@dataclass(frozen=True)
class Made:
    """One signed profile, made but not yet written."""

    sku: str
    path: Path
    data: bytes
    nodes: list[str]

    @property
    def member(self) -> str:
        return MEMBER.format(sku=self.sku)


@dataclass(frozen=True)
class Outcome:
    made: list[Made]
    record: dict[str, Any]  # fleet.json's "baseline"
    error: DossierError | None  # why a profile asked for was not made (the others are)
    profile_key: Path  # the public key that checks the profiles


# --- in the worker processes ---------------------------------------------------------------------


@dataclass(frozen=True)
class NodeInput:
    """A healthy node's bundle, as it was verified (plain data: it crosses to a worker)."""

    node: str
    path: str
    sha256: str
    signer_keyid: str

    @property
    def name(self) -> str:
        """The input's name in the profile: the bundle's file name, as `dossier baseline` names it."""
        return Path(self.path).name


@dataclass(frozen=True)
class Unreadable:
    why: str


def _input(task: NodeInput) -> Input | Unreadable:
    """The node's bundle read, only if it is the one verified (its sha256 before and after)."""
    path = Path(task.path)
    try:
        if file_sha256(path) != task.sha256:
            return Unreadable("its bundle is not the one verified (it changed since)")
        members = read_members(path, lambda name: name.endswith((".json", ".md")))  # as `dossier accept` reads it
        view = BundleView.from_files(
            {n: m.data for n, m in members.items() if m.data is not None}, registry.analysis_module
        )
        if file_sha256(path) != task.sha256:
            return Unreadable("its bundle changed while it was read")
    except (OSError, UnsafeBundle, BundleFormatError) as exc:
        return Unreadable(f"its bundle cannot be read again: {exc}")
    return Input(task.name, task.sha256, task.signer_keyid, view)


def read_node(task: NodeInput) -> Reading | Unreadable:
    """Pass 1: what the draft takes from the node's bundle."""
    with remembering():
        item = _input(task)
        return item if isinstance(item, Unreadable) else read(item)


def judge_node(profile: Profile, task: NodeInput) -> Verdicts | Unreadable:
    """Pass 2: the node's bundle judged against the draft PROFILE."""
    with remembering():
        item = _input(task)
        return item if isinstance(item, Unreadable) else verdicts(item.facts, profile, registry.acceptance_criteria())


# --- in the collect ------------------------------------------------------------------------------


def _pooled(function: Callable[[NodeInput], Any], tasks: Sequence[NodeInput], workers: int, doing: str) -> list[Any]:
    """FUNCTION on every task in the worker pool, the results in task order; a node whose bundle
    cannot be read again stops the profile (it would change what the profile is made of)."""
    results: dict[str, Any] = {}
    with CollectProgress(len(tasks), doing=doing, label=f"fleet baseline ({doing})", unit="node bundles") as progress:
        for done in pool.run(tasks, function, min(workers, len(tasks)), NODE_TIMEOUT_S):
            why = done.error or (done.result.why if isinstance(done.result, Unreadable) else None)
            if why is not None:
                raise CheckFailed(
                    f"node {done.task.node}: {why}",
                    hint="collect the job again once nothing writes to its run directory",
                )
            results[done.task.node] = done.result
            progress.done("ok")
    return [results[task.node] for task in tasks]


def _fleet_statement(
    document: dict[str, Any], used: int, left: list[healthy.LeftOut], others: dict[str, int]
) -> dict[str, Any]:
    """The profile's `baseline.fleet`: the job, the rule, and every node of it used, left out (with why) or
    of another SKU (healthy.of_sku)."""
    return {
        "job_id": document["job"]["id"],
        "rule": healthy.RULE,
        "nodes_in_job": len(document["nodes"]),
        "nodes_used": used,
        "left_out": {"count": len(left), "by_reason": healthy.counts(left), "nodes": [item.to_json() for item in left]},
        "other_skus": others,
    }


def _profile(
    document: dict[str, Any],
    run: FleetRun,
    selection: healthy.Selection,
    sku: str,
    path: Path,
    key: SigningKey,
    workers: int,
) -> Made:
    nodes = selection.healthy[sku]
    tasks = [NodeInput(n["name"], str(run.node_bundle(n["name"])), n["sha256"], n["verify"]["keyid"]) for n in nodes]
    left, others = healthy.of_sku(selection, sku)
    statement = _fleet_statement(document, len(tasks), left, others)
    print(
        f"fleet baseline: {sku}: {len(tasks)} healthy node(s), {len(left)} left out ({healthy.in_words(left)})",
        file=sys.stderr,
    )
    readings = _pooled(read_node, tasks, workers, f"{sku}: read for the draft, 1 of 2")

    def judge(profile: Profile) -> Iterable[tuple[str, Verdicts]]:
        judged = _pooled(functools.partial(judge_node, profile), tasks, workers, f"{sku}: judged against it, 2 of 2")
        return zip([t.name for t in tasks], judged, strict=True)

    why = (
        f"dossier fleet collect {document['job']['id']}: the {len(tasks)} healthy node(s) of {sku} "
        f"({len(left)} left out: baseline.fleet says why)"
    )
    profile = make(readings, judge, registry.known_good_kinds(), sku, why)
    profile["baseline"]["fleet"] = statement
    found = violations(SCHEMA, profile)
    if found:  # our own document: a bug otherwise
        raise RuntimeError(f"the profile made does not match schemas/{SCHEMA}.schema.json: {found[0]}")
    data = sign_profile(profile, [(t.name, t.sha256) for t in tasks], key)
    return Made(sku, path, data, [t.node for t in tasks])


def _skus(selection: healthy.Selection, asked: Request, document: dict[str, Any]) -> list[str]:
    """The SKUs to make a profile of, or a UsageError saying why there is none to make."""
    found = sorted({n["sku"] for n in document["nodes"] if n["status"] == "ok" and n.get("sku")})
    if asked.sku is not None:
        if asked.sku not in selection.healthy:
            of_it = [item for item in selection.left_out if item.sku == asked.sku]
            raise UsageError(
                f"--baseline-sku {asked.sku}: "
                + (
                    f"none of the fleet's {len(of_it)} node(s) of it is healthy ({healthy.in_words(of_it)})"
                    if of_it
                    else f"no verified node of the fleet is of it (the fleet's SKUs: {', '.join(found) or 'none'})"
                )
            )
        return [asked.sku]
    if not selection.healthy:
        raise UsageError(
            f"no healthy node in the fleet to make a baseline profile of ({healthy.in_words(selection.left_out)})"
        )
    if len(selection.healthy) > 1 and not asked.per_sku:
        raise UsageError(
            f"the fleet's healthy nodes are of {len(selection.healthy)} SKUs ({', '.join(selection.healthy)}), "
            f"and --baseline-out {asked.out} is one file",
            hint=f"name one with --baseline-sku, or put {SKU_FIELD} in the file name for one profile per "
            f"SKU (e.g. --baseline-out profiles/{SKU_FIELD}.profile.json)",
        )
    return list(selection.healthy)


def profiles(document: dict[str, Any], run: FleetRun, asked: Request, key: SigningKey, workers: int) -> Outcome:
    """The profiles ASKED for, made from the healthy nodes of fleet.json DOCUMENT (signed with KEY), and
    the record fleet.json keeps of them; an error is kept in the outcome, never raised, so that the
    fleet bundle is written in any case."""
    selection = healthy.select(document)
    made: list[Made] = []
    not_made: list[dict[str, Any]] = []
    error: DossierError | None = None
    try:
        skus = _skus(selection, asked, document)
    except UsageError as exc:
        skus, error = [], exc
        not_made.append({"sku": asked.sku, "why": str(exc)})
    for sku in skus:
        try:
            made.append(_profile(document, run, selection, sku, asked.path(sku), key, workers))
        except DossierError as exc:
            error = error or exc
            not_made.append({"sku": sku, "why": str(exc)})
    if asked.per_sku and asked.sku is None:
        of_sick = sorted(
            {item.sku for item in selection.left_out if item.sku and "+" not in item.sku} - set(selection.healthy)
        )
        not_made += [{"sku": sku, "why": "none of its node(s) is healthy"} for sku in of_sick]
    record = {
        "rule": healthy.RULE,
        "profiles": [
            {
                "sku": m.sku,
                "member": m.member,
                "file": m.path.name,
                "sha256": hashlib.sha256(m.data).hexdigest(),
                "signer_keyid": key.keyid,
                "nodes": m.nodes,
            }
            for m in made
        ],
        "not_made": not_made,
        "left_out": [item.to_json() for item in selection.left_out],
        "left_out_counts": selection.counts(),
    }
    return Outcome(made, record, error, public_path_for(key.path))


def write(outcome: Outcome, fleet_bundle: Path) -> None:
    """Each profile made, at its path (the fleet bundle holds a copy: said if writing fails)."""
    for made in outcome.made:
        try:
            paths.write_output(made.path, made.data, "--baseline-out")
        except DossierError as exc:
            raise type(exc)(
                str(exc),
                hint=f"the fleet bundle {fleet_bundle} holds the profile: tar -xzf {fleet_bundle} {made.member}",
            ) from exc
        print(
            f"fleet baseline: wrote {made.path} ({made.sku}, {len(made.nodes)} node bundle(s)); judge with: dossier "
            f"accept BUNDLE --profile-file {made.path} --profile-key {outcome.profile_key} --key SIGNER.pub",
            file=sys.stderr,
        )
