"""Writing the fleet bundle: the same deterministic archive and DSSE/in-toto signature as a node bundle.

Nothing is re-implemented here: the archive comes from `harness.bundle.write`, the statement
from `harness.attestation`, the envelope from `harness.signing.dsse`. Only the predicate type
differs, so that a fleet bundle is never mistaken for a single node's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness import attestation
from harness.bundle.write import archive_bytes, write_atomically
from harness.signing import dsse
from harness.signing.keys import SigningKey, load_public

ATTESTATION = "attestation.intoto.json"
FLEET_PREDICATE_TYPE = "https://rig-dossier.dev/attestation/fleet/v1"


class FleetSealError(Exception):
    """The fleet bundle's signature or a member's hash does not check out."""


def sealed_bytes(files: Mapping[str, bytes], predicate: Mapping[str, Any], key: SigningKey) -> bytes:
    """The fleet bundle: FILES plus a signed statement whose subjects are every one of them."""
    if ATTESTATION in files:
        raise ValueError(f"{ATTESTATION} is written by the sealing, not given")
    statement = attestation.statement(files, predicate)
    statement["predicateType"] = FLEET_PREDICATE_TYPE
    envelope = dsse.sign(attestation.statement_bytes(statement), dsse.IN_TOTO_PAYLOAD_TYPE, key)
    return archive_bytes({**files, ATTESTATION: dsse.envelope_bytes(envelope)})


def seal(destination: Path, files: Mapping[str, bytes], predicate: Mapping[str, Any], key: SigningKey) -> Path:
    """Write the fleet bundle atomically (never half a bundle, never over an existing one)."""
    return write_atomically(sealed_bytes(files, predicate, key), destination)


def check(files: Mapping[str, bytes], trusted_public_key: Path) -> dict[str, Any]:
    """The statement of an opened fleet bundle, if its signature and every member hash check out."""
    try:
        envelope = dsse.parse(files[ATTESTATION])
        payload = dsse.verify(envelope, load_public(trusted_public_key))
    except KeyError:
        raise FleetSealError(f"no {ATTESTATION} in the fleet bundle") from None
    except dsse.EnvelopeError as exc:
        raise FleetSealError(f"{ATTESTATION}: {exc}") from exc
    statement = json.loads(payload)
    if statement.get("predicateType") != FLEET_PREDICATE_TYPE:
        raise FleetSealError(f"predicateType is {statement.get('predicateType')!r}, not a fleet bundle")
    digests = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    members = set(files) - {ATTESTATION}
    problems = [f"{n}: not in the statement" for n in sorted(members - set(digests))]
    problems += [f"{n}: listed in the statement but missing" for n in sorted(set(digests) - members)]
    problems += [f"{n}: sha256 differs from the statement" for n in sorted(members & set(digests))
                 if attestation.sha256_hex(files[n]) != digests[n]]
    if problems:
        raise FleetSealError("; ".join(problems))
    return statement
