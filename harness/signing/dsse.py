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


URL_SAFE = str.maketrans("-_", "+/")


def decode_base64(text: Any, what: str) -> bytes:
    """Base64 as DSSE's envelope.md allows: standard or URL-safe (RFC 4648 sections 4 and 5).

    Strict otherwise: one alphabet throughout, ASCII only, the padding exactly as RFC 4648 has it,
    no whitespace, and the one encoding of the bytes (RFC 4648 3.5: pad bits zero), so the text
    is exactly what an encoder writes.
    """
    if not isinstance(text, str):
        raise EnvelopeError(f"{what} is not a base64 string")
    if ("-" in text or "_" in text) and not ("+" in text or "/" in text):
        text = text.translate(URL_SAFE)
    try:
        data = binascii.a2b_base64(text.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise EnvelopeError(f"{what} is not valid standard or URL-safe base64 ({exc})") from exc
    if base64.b64encode(data).decode("ascii") != text:
        raise EnvelopeError(f"{what} is not valid standard or URL-safe base64 (not the canonical encoding "
                            "of its bytes: excess padding or non-zero pad bits)")
    return data


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


def verify(envelope: dict[str, Any], trusted: Ed25519PublicKey,
           expected_type: str = IN_TOTO_PAYLOAD_TYPE) -> bytes:
    """The payload bytes, if a signature in the envelope verifies with `trusted`; else raise.

    A signature whose keyid names another key is not tried; one without a keyid (absent, null or
    empty) is. The keyid is an unsigned hint, so this only makes it truthful, never trusted.
    """
    if envelope["payloadType"] != expected_type:
        raise EnvelopeError(f"payloadType is {envelope['payloadType'][:100]!r}, expected {expected_type!r}")
    payload = decode_base64(envelope.get("payload"), "payload")
    message = pae(envelope["payloadType"], payload)
    trusted_id = keyid(trusted)
    if len(envelope["signatures"]) > MAX_SIGNATURES:
        raise EnvelopeError(f"{len(envelope['signatures'])} signatures; at most {MAX_SIGNATURES} are tried")
    ids = []
    for i, entry in enumerate(envelope["signatures"]):
        if not isinstance(entry, dict):
            raise EnvelopeError(f"signature {i} is not an object")
        named = entry.get("keyid")
        ids.append(named if isinstance(named, str) else "")
        if named not in (None, "") and named != trusted_id:
            continue  # names another key (DSSE reference implementation: such a signature is not tried)
        try:
            trusted.verify(decode_base64(entry.get("sig"), f"signature {i}"), message)
            return payload
        except InvalidSignature:
            continue
    shown = [k[:16] + "..." if k else "(no keyid)" for k in ids[:5]]
    named = (", ".join(shown) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")) if ids else "none"
    raise EnvelopeError(f"no signature verifies with the trusted key (keyid {trusted_id[:16]}...); "
                        f"the envelope is signed by keyid {named}")
