"""DSSE envelopes (https://github.com/secure-systems-lab/dsse, protocol v1) with Ed25519.

The signature covers the pre-authentication encoding (PAE) of the payload type and the exact
payload bytes, never a re-serialisation of them.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from harness.signing.keys import SigningKey, keyid

IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"


class EnvelopeError(Exception):
    """The envelope is malformed or no signature in it verifies with the trusted key."""


def pae(payload_type: str, payload: bytes) -> bytes:
    """PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body.

    LEN is the ASCII decimal byte length; type is UTF-8 (DSSE protocol.md, "Signature definition").
    """
    type_bytes = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(type_bytes), type_bytes, len(payload), payload)


def sign(payload: bytes, payload_type: str, key: SigningKey) -> dict[str, Any]:
    """A DSSE envelope with one Ed25519 signature (Ed25519 is deterministic: same bytes out)."""
    signature = key.private.sign(pae(payload_type, payload))
    return {
        "payload": base64.b64encode(payload).decode("ascii"),
        "payloadType": payload_type,
        "signatures": [{"keyid": key.keyid, "sig": base64.b64encode(signature).decode("ascii")}],
    }


def envelope_bytes(envelope: dict[str, Any]) -> bytes:
    return (json.dumps(envelope, allow_nan=False, sort_keys=True, indent=1) + "\n").encode()


def _b64(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise EnvelopeError(f"{what} is not a base64 string")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise EnvelopeError(f"{what} is not valid base64 ({exc})") from exc


def parse(data: bytes) -> dict[str, Any]:
    try:
        envelope = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EnvelopeError(f"not JSON ({exc})") from exc
    if not isinstance(envelope, dict) or not isinstance(envelope.get("signatures"), list):
        raise EnvelopeError("not a DSSE envelope (no signatures list)")
    if not isinstance(envelope.get("payloadType"), str):
        raise EnvelopeError("not a DSSE envelope (no payloadType)")
    return envelope


def claimed_payload(envelope: dict[str, Any]) -> bytes:
    """The payload bytes WITHOUT checking any signature: only for naming what differs."""
    return _b64(envelope.get("payload"), "payload")


def verify(envelope: dict[str, Any], trusted: Ed25519PublicKey,
           expected_type: str = IN_TOTO_PAYLOAD_TYPE) -> bytes:
    """The payload bytes, if a signature in the envelope verifies with `trusted`; else raise."""
    if envelope["payloadType"] != expected_type:
        raise EnvelopeError(f"payloadType is {envelope['payloadType']!r}, expected {expected_type!r}")
    payload = _b64(envelope.get("payload"), "payload")
    message = pae(envelope["payloadType"], payload)
    trusted_id = keyid(trusted)
    ids = []
    for i, entry in enumerate(envelope["signatures"]):
        if not isinstance(entry, dict):
            raise EnvelopeError(f"signature {i} is not an object")
        ids.append(str(entry.get("keyid", "")))
        try:
            trusted.verify(_b64(entry.get("sig"), f"signature {i}"), message)
            return payload
        except InvalidSignature:
            continue
    named = ", ".join(k[:16] + "..." for k in ids) or "none"
    raise EnvelopeError(f"no signature verifies with the trusted key (keyid {trusted_id[:16]}...); "
                        f"the envelope is signed by keyid {named}")
