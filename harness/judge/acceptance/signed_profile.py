"""A signed acceptance profile: the profile document in a DSSE envelope, like every other statement.

`dossier baseline` writes an in-toto Statement v1 (harness.signing.statement) whose subjects are
the input bundles (file name and sha256) and whose predicate, of type PREDICATE_TYPE, is the
profile document itself (schemas/acceptance-profile.schema.json, format_version 2). `dossier
accept --profile-file` opens it only if a signature verifies with the key it is given: a profile
someone edited after it was signed, or one signed by another key, is refused before anything is
judged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from harness.signing import dsse
from harness.signing.keys import SigningKey, keyid
from harness.signing.statement import StatementError, sign_statement, statement, subject, verify_statement

PREDICATE_TYPE = "https://rig-dossier.dev/attestation/acceptance-profile/v1"


@dataclass(frozen=True)
class OpenedProfile:
    """A verified profile: the document, who signed it and the bundles it was made from."""

    document: dict[str, Any]
    signer_keyid: str
    inputs: tuple[tuple[str, str], ...]  # (bundle name, sha256)


def is_envelope(document: Any) -> bool:
    return isinstance(document, Mapping) and {"payload", "payloadType", "signatures"} <= set(document)


def sign_profile(document: Mapping[str, Any], inputs: list[tuple[str, str]], key: SigningKey) -> bytes:
    """The envelope's bytes (deterministic: Ed25519 and canonical JSON)."""
    return sign_statement(statement([subject(name, digest) for name, digest in inputs], PREDICATE_TYPE, document), key)


def open_profile(data: bytes, trusted: Ed25519PublicKey) -> OpenedProfile:
    """The profile an envelope carries, if a signature verifies with TRUSTED; raises
    dsse.EnvelopeError or StatementError naming why."""
    stmt = verify_statement(data, trusted, PREDICATE_TYPE)
    predicate = stmt.get("predicate")
    if not isinstance(predicate, dict):
        raise StatementError("the statement's predicate is not a profile document")
    inputs = tuple((s["name"], s["digest"]["sha256"]) for s in stmt["subject"])
    return OpenedProfile(json.loads(json.dumps(predicate)), keyid(trusted), inputs)


ENVELOPE_ERRORS = (dsse.EnvelopeError, StatementError)
