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
MAX_SIGNATURES = 64  # an envelope is tried against at most this many signatures (bounded time)


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


def decode_base64(text: Any, what: str) -> bytes:
    """Base64 as DSSE's envelope.md allows, standard or URL-safe (RFC 4648 sections 4 and 5), decoded
    exactly as securesystemslib decodes an envelope (`b64dec`: the standard alphabet with
    validation, else the URL-safe one): the one reference implementation the docs' third-party
    check uses, so no envelope is read one way here and another there. Padding must be right; no
    whitespace or other characters; non-zero pad bits are ignored, as every decoder does (the
    decoded bytes are what is signed)."""
    if not isinstance(text, str):
        raise EnvelopeError(f"{what} is not a base64 string")
    try:
        data = text.encode("utf-8")
        try:
            return base64.b64decode(data, validate=True)
        except binascii.Error:
            return base64.b64decode(data, altchars=b"-_", validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise EnvelopeError(f"{what} is not valid standard or URL-safe base64 ({exc})") from exc


def parse(data: bytes) -> dict[str, Any]:
    try:
        envelope = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise EnvelopeError(f"not JSON ({type(exc).__name__}: {str(exc)[:200]})") from exc
    if not isinstance(envelope, dict) or not isinstance(envelope.get("signatures"), list):
        raise EnvelopeError("not a DSSE envelope (no signatures list)")
    if not isinstance(envelope.get("payloadType"), str):
        raise EnvelopeError("not a DSSE envelope (no payloadType)")
    return envelope


def signatures(envelope: dict[str, Any]) -> list[tuple[Any, bytes]]:
    """(keyid, signature bytes) of every signature, refused as securesystemslib's Envelope.from_dict
    refuses them: each must be an object with a keyid (DSSE makes it an optional hint; the reference
    implementation requires it) and a base64 sig, and no keyid may appear twice. At most
    MAX_SIGNATURES (bounded time: the one limit securesystemslib has not got)."""
    entries = envelope["signatures"]
    if len(entries) > MAX_SIGNATURES:
        raise EnvelopeError(f"{len(entries)} signatures; at most {MAX_SIGNATURES} are tried")
    found: list[tuple[Any, bytes]] = []
    seen: set[Any] = set()
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise EnvelopeError(f"signature {i} is not an object")
        if "keyid" not in entry:
            raise EnvelopeError(f"signature {i} has no keyid (securesystemslib refuses such an envelope too)")
        named = entry["keyid"]
        if isinstance(named, (dict, list)):
            raise EnvelopeError(f"signature {i}'s keyid is not a string")
        if named in seen:
            raise EnvelopeError(
                f"two signatures name keyid {shown_keyid(named)} (securesystemslib refuses such an envelope too)"
            )
        seen.add(named)
        found.append((named, decode_base64(entry.get("sig"), f"signature {i}")))
    return found


def shown_keyid(named: Any) -> str:
    return (named[:16] + "..." if named else "'' (empty)") if isinstance(named, str) else repr(named)[:20]


def verify(envelope: dict[str, Any], trusted: Ed25519PublicKey, expected_type: str = IN_TOTO_PAYLOAD_TYPE) -> bytes:
    """The payload bytes, if a signature in the envelope verifies with `trusted`; else raise.

    Only the signature whose keyid is the trusted key's is tried (as securesystemslib does); one
    naming another key, or none, is not. The keyid is an unsigned hint, so this only makes it
    truthful, never trusted.
    """
    if envelope["payloadType"] != expected_type:
        raise EnvelopeError(f"payloadType is {envelope['payloadType'][:100]!r}, expected {expected_type!r}")
    payload = decode_base64(envelope.get("payload"), "payload")
    found = signatures(envelope)
    message = pae(envelope["payloadType"], payload)
    trusted_id = keyid(trusted)
    for named, signature in found:
        if named != trusted_id:
            continue  # names another key (or none): not tried
        try:
            trusted.verify(signature, message)
            return payload
        except InvalidSignature:
            break  # keyids are unique: no other signature is the trusted key's
    shown = [shown_keyid(named) for named, _ in found[:5]]
    named = (", ".join(shown) + (f" and {len(found) - 5} more" if len(found) > 5 else "")) if found else "none"
    raise EnvelopeError(
        f"no signature verifies with the trusted key (keyid {trusted_id[:16]}...); "
        f"the envelope is signed by keyid {named}"
    )
