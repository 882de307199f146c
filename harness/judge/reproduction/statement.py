"""A reproduction judgement as a signed in-toto statement, and the checks of one made earlier.

An in-toto Statement v1 (harness.signing.statement, in a DSSE envelope, Ed25519) whose subjects are
the two bundle files, named `theirs/NAME` and `mine/NAME` with the sha256 of their bytes, and whose
predicate (PREDICATE_TYPE) is the whole judgement: the verdict in both vocabularies (reproduced,
not_reproduced, not_comparable; pass, fail, skip), every figure with both values, the ratio, the
tolerance and where it came from, its verdict and why; the environment differences, likely why
first; the noise model (the catalogue's version and sha256, the rule, the run-to-run sources); each
bundle's signer and checks; how MINE was made (re-run here from THEIRS's plan, with what this host
could not honour, or given) and the tool that judged.

`verify` checks an envelope later: the signature, that its subjects are these two files, and that
the statement is consistent with itself (every figure's verdict follows from its recorded values
and tolerance, the whole from the figures that decide): a statement edited after signing fails the signature,
one signed with a wrong verdict fails the consistency. Recomputing the judgement from the bundles
with this build is the command's (harness.commands.verify_reproduction).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from harness.analysis.figure import EQUAL_KINDS, INFORMS
from harness.judge.acceptance.outcome import BundleRef
from harness.judge.reproduction.results import MOVED, NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED, WITHIN, Judgement
from harness.signing.keys import SigningKey
from harness.signing.statement import (
    StatementError,
    shown,
    sign_statement,
    statement,
    subject,
    verify_statement,
)

PREDICATE_TYPE = "https://rig-dossier.dev/attestation/reproduction/v1"
THEIRS, MINE = "theirs", "mine"
RESULT_OF = {REPRODUCED: "pass", NOT_REPRODUCED: "fail", NOT_COMPARABLE: "skip", WITHIN: "pass", MOVED: "fail"}
AGREE = (REPRODUCED, WITHIN)  # the words of a figure whose values agree within its tolerance


class StatementMismatch(StatementError):
    """The envelope verifies but is not a reproduction statement about these bundles, or contradicts itself."""


@dataclass(frozen=True)
class Made:
    """How MINE came to be: re-run here from THEIRS's plan (the plan, what could not be honoured), or given."""

    mode: str  # "rerun" or "against"
    plan: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, **({"plan": dict(self.plan)} if self.plan is not None else {})}


def bundle_ref(ref: BundleRef, format_version: Any) -> dict[str, Any]:
    """A bundle as a signed statement names it: its file, sha256, signer, verify count and format."""
    return {
        "name": ref.name,
        "sha256": ref.sha256,
        "signer_keyid": ref.signer_keyid,
        "verify_checks_passed": ref.checks_passed,
        "format_version": format_version,
    }


def _bundle(ref: BundleRef, judgement_side: Any, format_version: Any) -> dict[str, Any]:
    return {**bundle_ref(ref, format_version), **judgement_side.to_json()}


def reproduction_statement(
    judgement: Judgement,
    theirs: BundleRef,
    mine: BundleRef,
    formats: tuple[Any, Any],
    made: Made,
    tool: Mapping[str, Any],
) -> dict[str, Any]:
    """The statement (unsigned): both bundles as subjects, the judgement as predicate."""
    body = judgement.to_json()
    predicate = {
        **body,
        "theirs": _bundle(theirs, judgement.theirs, formats[0]),
        "mine": _bundle(mine, judgement.mine, formats[1]),
        "made": made.to_json(),
        "tool": dict(tool),
    }
    return statement(
        [subject(f"{THEIRS}/{theirs.name}", theirs.sha256), subject(f"{MINE}/{mine.name}", mine.sha256)],
        PREDICATE_TYPE,
        predicate,
    )


def signed_envelope(stmt: Mapping[str, Any], key: SigningKey) -> bytes:
    return sign_statement(stmt, key)


def _subjects(stmt: Mapping[str, Any]) -> dict[str, str]:
    """role -> sha256 (theirs, mine); raises when the subjects are not exactly one of each."""
    found: dict[str, str] = {}
    for entry in stmt["subject"]:
        if set(entry) != {"name", "digest"} or set(entry["digest"]) != {"sha256"}:
            raise StatementMismatch(f"subject {entry['name']!r} is not a name and a sha256 (what this build checks)")
        role = entry["name"].split("/", 1)[0]
        if role not in (THEIRS, MINE) or role in found:
            raise StatementMismatch(f"subject {entry['name']!r} is not one theirs/NAME and one mine/NAME")
        found[role] = entry["digest"]["sha256"]
    if set(found) != {THEIRS, MINE}:
        raise StatementMismatch("the statement does not name both bundles (theirs/NAME and mine/NAME)")
    return found


def figure_follows(figure: Mapping[str, Any]) -> str | None:
    """Why a recorded figure's verdict does not follow from its recorded values and tolerance, or None."""
    verdict, kind = figure.get("verdict"), figure.get("kind")
    if verdict == NOT_COMPARABLE:
        return None if figure.get("why") else "not comparable without a why"
    words = (WITHIN, MOVED) if figure.get("role") == INFORMS else (REPRODUCED, NOT_REPRODUCED)
    if verdict not in words:
        return f"verdict {shown(verdict)} for a figure that {'informs' if words[0] == WITHIN else 'decides'}"
    if figure.get("result") != RESULT_OF[verdict]:
        return f"result {shown(figure.get('result'))} with verdict {verdict}"
    theirs, mine, tolerance = figure.get("theirs"), figure.get("mine"), figure.get("tolerance")
    if kind in EQUAL_KINDS:
        same = json.dumps(theirs, sort_keys=True) == json.dumps(mine, sort_keys=True)
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (theirs, mine, tolerance)) and theirs:
        try:
            same = abs(mine / theirs - 1) <= tolerance
        except OverflowError:
            return f"a {kind} figure whose ratio is not a number"
    else:
        return f"a {kind} figure judged without a number, ratio or tolerance"
    return None if same == (verdict in AGREE) else f"{verdict}, but its values say {'' if same else 'not '}reproduced"


def whole_follows(predicate: Mapping[str, Any]) -> str | None:
    """Why the recorded verdict of the whole does not follow from its figures and identity, or None."""
    figures = predicate.get("figures")
    verdicts = (
        [f.get("verdict") for f in figures if isinstance(f, Mapping) and f.get("role") != INFORMS]
        if isinstance(figures, list)
        else []
    )
    identity = predicate.get("identity")
    comparable = isinstance(identity, Mapping) and identity.get("comparable") is True
    judged = [v for v in verdicts if v != NOT_COMPARABLE]
    expected = (
        NOT_COMPARABLE if not comparable or not judged else NOT_REPRODUCED if NOT_REPRODUCED in judged else REPRODUCED
    )
    if predicate.get("verdict") != expected or predicate.get("result") != RESULT_OF[expected]:
        return (
            f"the whole says {shown(predicate.get('verdict'))} ({shown(predicate.get('result'))}); its figures "
            f"say {expected}"
        )
    return None


def verify(data: bytes, trusted: Ed25519PublicKey, theirs_sha256: str, mine_sha256: str) -> dict[str, Any]:
    """The verified statement about these two bundles; raises dsse.EnvelopeError or StatementError
    (StatementMismatch: other bundles, or a statement that contradicts itself) naming why."""
    stmt = verify_statement(data, trusted, PREDICATE_TYPE)
    subjects = _subjects(stmt)
    for role, sha in ((THEIRS, theirs_sha256), (MINE, mine_sha256)):
        if subjects[role] != sha:
            raise StatementMismatch(
                f"the statement's {role} bundle is sha256 {subjects[role][:16]}..., not this file "
                f"(sha256 {sha[:16]}...)"
            )
    predicate = stmt.get("predicate")
    if not isinstance(predicate, dict) or not isinstance(predicate.get("figures"), list):
        raise StatementMismatch("the predicate has no figures")
    wrong = [
        f"{shown(f.get('figure'))}: {why}"
        for f in predicate["figures"]
        if isinstance(f, dict)
        for why in [figure_follows(f)]
        if why
    ]
    whole = whole_follows(predicate)
    if wrong or whole:
        raise StatementMismatch(
            "the statement contradicts itself: " + "; ".join(([whole] if whole else []) + wrong[:5])
        )
    return stmt
