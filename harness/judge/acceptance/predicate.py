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
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from harness.analysis.verdict import Verdict
from harness.judge.acceptance.outcome import Acceptance
from harness.signing.keys import SigningKey
from harness.signing.statement import StatementError, sha256_hex, sign_statement, statement, subject, verify_statement

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
    digests = [s["digest"]["sha256"] for s in stmt["subject"]]
    if bundle_sha256 is not None and bundle_sha256 not in digests:
        raise AttestationMismatch(
            f"the attestation is about sha256 {', '.join(str(d)[:16] + '...' for d in digests)}, "
            f"not this bundle (sha256 {bundle_sha256[:16]}...)"
        )
    return stmt
