"""One node of a fleet, judged in a worker process: `dossier verify` and `dossier accept` on its
bundle (the same functions, in-process), then the compared figures.

The bundle is read once: `verify_and_view` runs every check `dossier verify` runs and hands back
the signed content it checked, which `dossier accept`'s judge and the fleet metrics read next.
The file's sha256 is taken before and after, so a bundle that changes while it is checked is
rejected, and the fleet bundle can refuse to pack bytes other than the ones verified. What comes
back is small (a node of a thousand is a few kB): the failed checks, the criteria that failed,
the figures. Anything that raises here is this node's rejection, never the collect's end.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import registry
from harness.analysis.memo import remembering
from harness.analysis.verdict import Verdict, parse
from harness.fleet.metrics import node_metrics, node_skus, node_stack
from harness.judge import recommend
from harness.judge.acceptance.outcome import BundleRef, judge
from harness.judge.acceptance.profile import NoProfile, resolve
from harness.judge.contention import host_state
from harness.judge.facts import BundleFacts
from harness.signing.keys import load_public
from harness.verify import verify_and_view

MAX_FAILURES_KEPT = 20  # failed verify checks kept per node (the count is always kept)


@dataclass(frozen=True)
class NodeTask:
    """What a worker needs to judge one node (plain data: it crosses a process boundary)."""

    name: str
    bundle: str  # path of the node's bundle
    public_key: str  # path of the trusted public key
    profile: str | None  # --profile, else the SKU health identified
    allow_formats: tuple[int, ...] = ()  # older bundle formats accepted (--allow-format)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@functools.cache
def _trusted(path: str):
    return load_public(Path(path))


@functools.cache
def _profile(sku: str):
    return resolve(sku, None, registry.known_good_kinds())


def acceptance(view, bundle: BundleRef, skus: list[str], asked: str | None) -> dict[str, Any]:
    """`dossier accept`'s judgement of the verified content against the node's SKU profile."""
    chosen = [asked] if asked else skus
    if len(chosen) != 1:
        why = (
            "no catalogue SKU was identified on this node (CPU-only or unknown GPU); pass --profile"
            if not chosen
            else f"the node has several SKUs ({', '.join(chosen)}); pass --profile"
        )
        return {"verdict": Verdict.SKIP, "why": why}
    try:
        profile = _profile(chosen[0])
    except NoProfile as exc:
        return {"verdict": Verdict.SKIP, "profile": chosen[0], "why": str(exc)}
    result = judge(view, profile, bundle, registry.acceptance_criteria())
    failed = [
        {"name": r.name, "why": r.why, "action": r.recommendation.to_json()}
        for r in result.results
        if r.status == Verdict.FAIL
    ]
    incomplete = [{"name": r.name, "why": r.why} for r in result.results if r.status == Verdict.INCOMPLETE]
    unmet = failed or incomplete
    return {
        "verdict": result.result,
        "profile": chosen[0],
        "passed": len(result.named(Verdict.PASS)),
        "failed": failed,
        "incomplete": [i["name"] for i in incomplete],
        "skipped": result.named(Verdict.SKIP),
        "recommendation": result.recommendation.to_json(),
        **({"why": "; ".join(f"{f['name']}: {f['why']}" for f in unmet)[:600]} if unmet else {}),
    }


def not_accepted(node: dict[str, Any]) -> bool:
    """A node whose verified bundle was judged and did not pass: FAIL, or INCOMPLETE (a required
    criterion not measured: acceptance fails closed). WARN passes, and is counted as WARN."""
    return node["status"] == "ok" and parse(node["acceptance"]["verdict"]) in (Verdict.FAIL, Verdict.INCOMPLETE)


def check_node(task: NodeTask) -> dict[str, Any]:
    """The node's verify summary, acceptance and figures (status ok), or why its bundle is rejected;
    each document's headlines computed once for all of them (harness/analysis/memo.py)."""
    with remembering():
        return _check(task)


def _check(task: NodeTask) -> dict[str, Any]:
    path = Path(task.bundle)
    before = file_sha256(path)
    result, view = verify_and_view(path, _trusted(task.public_key), allow_formats=task.allow_formats)
    passed = result.passed
    not_done = [f"{c.check} {c.subject}: {c.detail}" for c in result.not_done]
    verify = {
        "passed": result.ok,
        "checks_passed": passed,
        "checks_failed": len(result.failures),
        "failures": [c.line() for c in result.failures[:MAX_FAILURES_KEPT]],
        "keyid": result.keyid,
        **({"not_done": not_done} if not_done else {}),
    }
    if file_sha256(path) != before:
        return {"status": "rejected", "why": "the bundle changed while it was being verified", "verify": verify}
    if view is None:
        first = result.failures[0].line().removeprefix("FAIL ") if result.failures else "no check ran"
        more = f" (and {len(result.failures) - 1} more failed check(s))" if len(result.failures) > 1 else ""
        return {
            "status": "rejected",
            "why": f"its bundle fails `dossier verify`: {first[:300]}{more}",
            "verify": verify,
            "sha256": before,
        }
    skus = node_skus(view)
    ref = BundleRef(path.name, before, result.keyid, passed, tuple(not_done))
    return {
        "status": "ok",
        "verify": verify,
        "sha256": before,
        "size": path.stat().st_size,
        "sku": "+".join(skus) if skus else None,
        "stack": node_stack(view),
        "metrics": node_metrics(view),
        "acceptance": acceptance(view, ref, skus, task.profile),
        "conditions": _conditions(view),
        "host_contention": host_state(BundleFacts(view)),
    }


def _conditions(view) -> dict[str, list[str]]:
    """What the bundle records beside its figures that can explain one (the rules of an outlier's action)."""
    found = recommend.conditions(BundleFacts(view))
    return {"disturbed": list(found.disturbed), "settings": list(found.settings)}
