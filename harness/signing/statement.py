"""in-toto Statements v1 signed in DSSE envelopes: the one place a harness document is signed.

Node bundles (predicate https://rig-dossier.dev/attestation/dossier/v1, harness.bundle.seal),
fleet bundles (.../fleet/v1, harness.fleet.sealing) and acceptance verdicts (in-toto's
test-result/v0.1, harness.judge.acceptance.predicate) are all `statement` + `sign_statement`
here, and checked with `verify_statement` (or, where verify reports the signature and the
statement as two checks, `dsse.verify` then `parse_statement`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from harness.signing import dsse
from harness.signing.keys import SigningKey

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
SHA256_HEX = re.compile(r"[0-9a-f]{64}")

NameCheck = Callable[[str], "str | None"]  # why a subject name is refused, or None


class StatementError(Exception):
    """The payload is not the statement expected."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def subjects_of(files: Mapping[str, bytes]) -> list[dict[str, Any]]:
    """One subject per file (name, sha256), sorted by name."""
    return [subject(name, sha256_hex(files[name])) for name in sorted(files)]


def subject(name: str, sha256: str) -> dict[str, Any]:
    return {"name": name, "digest": {"sha256": sha256}}


def statement(subjects: list[dict[str, Any]], predicate_type: str, predicate: Mapping[str, Any]) -> dict[str, Any]:
    return {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": predicate_type, "predicate": dict(predicate)}


def statement_bytes(stmt: Mapping[str, Any]) -> bytes:
    return json.dumps(stmt, allow_nan=False, sort_keys=True, separators=(",", ":")).encode()


def sign_statement(stmt: Mapping[str, Any], key: SigningKey) -> bytes:
    """The DSSE envelope's bytes over the statement (Ed25519 is deterministic: same bytes out)."""
    return dsse.envelope_bytes(dsse.sign(statement_bytes(stmt), dsse.IN_TOTO_PAYLOAD_TYPE, key))


def _not_utf8(name: str) -> str | None:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "a name that is not UTF-8 (a lone surrogate)"
    return None


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "..."


def parse_statement(payload: bytes, predicate_type: str, check_name: NameCheck | None = None) -> dict[str, Any]:
    """Load and shape-check a statement: its type, predicate type and subjects (name, sha256);
    CHECK_NAME may refuse a subject's name (a bundle's subjects must be safe member names)."""
    try:
        stmt = json.loads(payload.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise StatementError(f"payload is not JSON ({type(exc).__name__}: {str(exc)[:200]})") from exc
    if not isinstance(stmt, dict):
        raise StatementError("payload is not a JSON object")
    if stmt.get("_type") != STATEMENT_TYPE:
        raise StatementError(f"payload is not an in-toto Statement v1 (_type {shown(stmt.get('_type'))})")
    if stmt.get("predicateType") != predicate_type:
        raise StatementError(f"predicateType is {shown(stmt.get('predicateType'))}, expected {predicate_type}")
    subjects = stmt.get("subject")
    if not isinstance(subjects, list):
        raise StatementError("statement has no subject list")
    for entry in subjects:
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("name"), str)
            and isinstance(entry.get("digest"), dict)
            and isinstance(entry["digest"].get("sha256"), str)
            and SHA256_HEX.fullmatch(entry["digest"]["sha256"])
        ):
            raise StatementError(f"malformed subject {shown(entry)}")
        why = (check_name(entry["name"]) if check_name else None) or _not_utf8(entry["name"])
        if why:
            raise StatementError(f"subject {shown(entry['name'])} has {why}")
    return stmt


def subject_digests(stmt: Mapping[str, Any]) -> dict[str, str]:
    """name -> sha256; a name listed twice raises."""
    digests: dict[str, str] = {}
    for entry in stmt["subject"]:
        if entry["name"] in digests:
            raise StatementError(f"subject {shown(entry['name'])} is listed twice")
        digests[entry["name"]] = entry["digest"]["sha256"]
    return digests


def verify_statement(
    envelope: bytes, trusted: Ed25519PublicKey, predicate_type: str, check_name: NameCheck | None = None
) -> dict[str, Any]:
    """The statement an envelope carries, if a signature verifies with TRUSTED and it is a
    statement of PREDICATE_TYPE; raises dsse.EnvelopeError or StatementError naming why."""
    payload = dsse.verify(dsse.parse(envelope), trusted)
    return parse_statement(payload, predicate_type, check_name)


def unsigned_changes(present: Mapping[str, str], signed: Mapping[str, str]) -> dict[str, list[str]]:
    """Files (name -> sha256) against a statement's subjects: the names signed but missing, present
    but not signed, and present with another sha256 than the one signed."""
    return {
        "missing": sorted(set(signed) - set(present)),
        "unsigned": sorted(set(present) - set(signed)),
        "changed": sorted(n for n in set(present) & set(signed) if present[n] != signed[n]),
    }
