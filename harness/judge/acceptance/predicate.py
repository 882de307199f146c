"""The acceptance as a signed in-toto test-result attestation.

An in-toto Statement v1 whose subject is the bundle file (name and sha256 of its bytes) and whose
predicate is https://in-toto.io/attestation/test-result/v0.1: result PASSED / WARNED / FAILED (the
test-result words: an INCOMPLETE acceptance is FAILED, failing closed), the configuration it was
judged with (the effective profile, carried inline, the catalogue, the key that verified the
bundle, the tool) as ResourceDescriptors, and the criteria by outcome (an incomplete criterion is
a failed test). The verdict in this project's words, overall and by criterion (pass, warn, fail,
incomplete, skip), with each failed criterion's recommended action and the acceptance's, is a
ResourceDescriptor of its own (VERDICT_NAME), carried inline.
Signed like the bundle: harness.signing.statement (a DSSE envelope, Ed25519).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from harness.analysis.figure import KnownGood
from harness.analysis.verdict import Verdict
from harness.judge.acceptance.outcome import Acceptance
from harness.judge.acceptance.profile import Profile, Reference
from harness.signing.keys import SigningKey
from harness.signing.statement import (
    StatementError,
    sha256_hex,
    shown,
    sign_statement,
    statement,
    subject,
    verify_statement,
)

PREDICATE_TYPE = "https://in-toto.io/attestation/test-result/v0.1"
RESULT_WORDS = {Verdict.PASS: "PASSED", Verdict.WARN: "WARNED", Verdict.FAIL: "FAILED", Verdict.INCOMPLETE: "FAILED"}
VERDICT_NAME = "rig-dossier/verdict.json"


class AttestationMismatch(StatementError):
    """The envelope verifies but is not an acceptance of this bundle."""


def configuration(acceptance: Acceptance, tool: Mapping[str, Any], catalogue_bytes: bytes | None) -> list[dict]:
    """ResourceDescriptors of everything the verdict depends on besides the bundle."""
    profile = acceptance.profile.canonical_bytes()
    descriptors = [
        {
            "name": f"acceptance-profile/{acceptance.profile.sku_id}.json",
            "mediaType": "application/json",
            "digest": {"sha256": sha256_hex(profile)},
            "content": base64.b64encode(profile).decode("ascii"),
            "annotations": {"sources": "; ".join(acceptance.profile.sources)},
        }
    ]
    if catalogue_bytes is not None:
        descriptors.append(
            {
                "name": "harness/data/gpus.json",
                "mediaType": "application/json",
                "digest": {"sha256": sha256_hex(catalogue_bytes)},
            }
        )
    descriptors.append(
        {
            "name": "bundle-signer-public-key",
            "digest": {"sha256": acceptance.bundle.signer_keyid},
            "annotations": {
                "meaning": "keyid (sha256 of the DER public key) that verified the bundle",
                "verify_checks_passed": acceptance.bundle.checks_passed,
                **(
                    {"verify_checks_not_done": "; ".join(acceptance.bundle.checks_not_done)}
                    if acceptance.bundle.checks_not_done
                    else {}
                ),
            },
        }
    )
    tool_entry: dict[str, Any] = {
        "name": str(tool.get("name", "rig-dossier")),
        "uri": f"pkg:generic/{tool.get('name', 'rig-dossier')}@{tool.get('version')}",
        "annotations": {"git_dirty": tool.get("git_dirty")},
    }
    digest = {"sha256": tool["source_sha256"]} if isinstance(tool.get("source_sha256"), str) else {}
    if isinstance(tool.get("git_commit"), str):
        digest["gitCommit"] = tool["git_commit"]
    if digest:  # sha256: the harness's own files (harness.run.provenance.source_sha256)
        tool_entry["digest"] = digest
    descriptors.append(tool_entry)
    return descriptors


def acceptance_statement(
    acceptance: Acceptance, tool: Mapping[str, Any], catalogue_bytes: bytes | None
) -> dict[str, Any]:
    return statement(
        [subject(acceptance.bundle.name, acceptance.bundle.sha256)],
        PREDICATE_TYPE,
        {
            "result": RESULT_WORDS[acceptance.result],
            "configuration": [*configuration(acceptance, tool, catalogue_bytes), verdict_descriptor(acceptance)],
            "passedTests": acceptance.named(Verdict.PASS),
            "warnedTests": acceptance.named(Verdict.WARN),
            "failedTests": acceptance.named(Verdict.FAIL) + acceptance.named(Verdict.INCOMPLETE),
        },
    )


def verdict_descriptor(acceptance: Acceptance) -> dict[str, Any]:
    """The verdict in this project's words, overall and by criterion, as an inline ResourceDescriptor."""
    content = json.dumps(
        {
            "verdict": acceptance.result,
            "criteria": {r.name: r.status for r in acceptance.results},
            "actions": {r.name: r.recommendation.to_json() for r in acceptance.results if r.status == Verdict.FAIL},
            "recommendation": acceptance.recommendation.to_json(),
        },
        sort_keys=True,
        separators=(",", ":"),
    ).encode()
    return {
        "name": VERDICT_NAME,
        "mediaType": "application/json",
        "digest": {"sha256": sha256_hex(content)},
        "content": base64.b64encode(content).decode("ascii"),
        "annotations": {"verdict": str(acceptance.result), "action": str(acceptance.recommendation.action)},
    }


def recorded_verdict(predicate: Mapping[str, Any]) -> str:
    """The overall verdict an attestation records: this project's word where it carries one (from
    issue 26 on), else its test-result word (PASSED, WARNED, FAILED)."""
    for descriptor in predicate.get("configuration") or []:
        if isinstance(descriptor, dict) and descriptor.get("name") == VERDICT_NAME:
            return str((descriptor.get("annotations") or {}).get("verdict"))
    return str(predicate.get("result"))


def signed_envelope(
    acceptance: Acceptance, key: SigningKey, tool: Mapping[str, Any], catalogue_bytes: bytes | None
) -> bytes:
    """The DSSE envelope's bytes over the statement (Ed25519 is deterministic)."""
    return sign_statement(acceptance_statement(acceptance, tool, catalogue_bytes), key)


def verify_envelope(data: bytes, trusted: Ed25519PublicKey, bundle_sha256: str | None = None) -> dict[str, Any]:
    """The verified statement; raises dsse.EnvelopeError or StatementError (AttestationMismatch:
    a verdict about another bundle) naming why."""
    stmt = verify_statement(data, trusted, PREDICATE_TYPE)
    predicate = stmt.get("predicate")
    if not isinstance(predicate, dict) or predicate.get("result") not in ("PASSED", "WARNED", "FAILED"):
        raise AttestationMismatch("the predicate has no result PASSED, WARNED or FAILED")
    if any(set(s) != {"name", "digest"} or set(s["digest"]) != {"sha256"} for s in stmt["subject"]):
        raise AttestationMismatch("a subject is not a name and a sha256 (what this build writes and checks)")
    digests = [s["digest"]["sha256"] for s in stmt["subject"]]
    if bundle_sha256 is not None and bundle_sha256 not in digests:
        raise AttestationMismatch(
            f"the attestation is about sha256 {', '.join(str(d)[:16] + '...' for d in digests)}, "
            f"not this bundle (sha256 {bundle_sha256[:16]}...)"
        )
    return stmt


def profile_from_json(document: Mapping[str, Any], kinds: Sequence[KnownGood]) -> Profile:
    """The Profile whose `to_json` is DOCUMENT (an acceptance attestation carries it inline); ValueError,
    KeyError or TypeError when DOCUMENT is not one (a caller refuses it in one line)."""
    by_field = {kind.field: kind for kind in kinds}
    known = document["known_good"]
    if not isinstance(known, Mapping) or set(known) - set(by_field):
        raise ValueError(f"known_good {sorted(known)[:5] if isinstance(known, Mapping) else known!r}")
    profile = Profile(
        sku_id=str(document["sku_id"]),
        name=str(document["name"]),
        form_factor=str(document["form_factor"]),
        thresholds=dict(document["thresholds"]),
        known_good={
            name: {
                by_field[name].key_type(k): Reference(float(r["value"]), str(r["unit"]), str(r["source"]))
                for k, r in figures.items()
            }
            for name, figures in known.items()
        },
        required=tuple(map(str, document["required"])),
        sources=tuple(map(str, document["sources"])),
        why=document["why"] if document["why"] is None else str(document["why"]),
        identity=dict(document["identity"]) if "identity" in document else None,
        digests=dict(document["digests"]) if "digests" in document else {},
        baseline=dict(document["baseline"]) if "baseline" in document else None,
    )
    if json.loads(profile.canonical_bytes()) != json.loads(json.dumps(document, allow_nan=False)):
        raise ValueError("not the profile it states: some of it does not read back")
    return profile


PROFILE_PREFIX = "acceptance-profile/"
SIGNER_NAME = "bundle-signer-public-key"


def _descriptors(predicate: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The configuration's ResourceDescriptors by name (a malformed list: AttestationMismatch)."""
    entries = predicate.get("configuration")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("name"), str) for e in entries
    ):
        raise AttestationMismatch("its configuration is not a list of named resource descriptors")
    named = {e["name"]: e for e in entries}
    if len(named) != len(entries):
        raise AttestationMismatch("its configuration names a resource twice")
    return named


def recorded_profile(predicate: Mapping[str, Any], kinds: Sequence[KnownGood]) -> Profile:
    """The effective profile the attestation says the bundle was judged against (carried inline, its sha256
    checked); AttestationMismatch when there is none this build reads."""
    found = [d for name, d in _descriptors(predicate).items() if name.startswith(PROFILE_PREFIX)]
    if len(found) != 1:
        raise AttestationMismatch(f"it carries {len(found)} acceptance profiles, not one")
    try:
        content = base64.b64decode(str(found[0]["content"]), validate=True)
        if sha256_hex(content) != (found[0].get("digest") or {}).get("sha256"):
            raise ValueError("its content is not the sha256 it states")
        return profile_from_json(json.loads(content), kinds)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise AttestationMismatch(f"its acceptance profile is not one this build reads ({shown(exc)})") from None


def differences(
    predicate: Mapping[str, Any], acceptance: Acceptance, catalogue_bytes: bytes | None, signers: Sequence[str]
) -> list[str]:
    """What PREDICATE records that ACCEPTANCE (the bundle judged again against its own profile, by this
    build with its catalogue CATALOGUE_BYTES) does not say, one line each: the result, the tests by outcome,
    the verdict by criterion, the profile, the catalogue, and a bundle signer its envelope names (SIGNERS)."""
    expected = acceptance_statement(acceptance, {}, catalogue_bytes)["predicate"]
    found = [
        f"{key}: recorded, not a part of a test-result predicate" for key in sorted(set(predicate) - set(expected))
    ]
    found += [
        f"{key}: {shown(predicate.get(key))} recorded, {shown(expected[key])} judged again"
        for key in ("result", "passedTests", "warnedTests", "failedTests")
        if predicate.get(key) != expected[key]
    ]
    recorded = {name: d for name, d in _descriptors(predicate).items() if not _is_tool(d)}
    for descriptor in expected["configuration"]:
        if _is_tool(descriptor):
            continue  # the tool that judged: who judged, not what the verdict depends on
        name, theirs = descriptor["name"], recorded.pop(descriptor["name"], None)
        if name == SIGNER_NAME:  # the key named is checked; its annotations say what verify said then
            digest = theirs.get("digest") if isinstance(theirs, dict) else None
            if (
                not isinstance(digest, dict)
                or set(digest) != {"sha256"}
                or digest["sha256"] not in signers
                or set(theirs or {}) - set(descriptor)
            ):
                found.append(f"{name}: {shown(theirs)} recorded, not a key the bundle's envelope names")
        elif theirs != descriptor:
            found.append(f"{name}: {shown(theirs)} recorded, {shown(descriptor)} judged again")
    found += [f"{name}: not a resource this build's acceptance depends on" for name in recorded]
    return found


def _is_tool(descriptor: Mapping[str, Any]) -> bool:
    return str(descriptor.get("uri", "")).startswith("pkg:generic/")
