"""Writing the fleet bundle: the same deterministic archive and DSSE/in-toto signature as a node bundle.

Nothing is re-implemented here: the archive's form comes from `harness.bundle.write` (streamed by
`harness.fleet.archive`, so that a thousand node bundles are never held at once), the statement and
its signature from `harness.signing.statement`, the attestation's name from
`harness.bundle.layout`. Only the predicate type differs, so that a fleet bundle is never
mistaken for a single node's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.bundle.layout import ATTESTATION
from harness.fleet import archive
from harness.fleet.archive import FileMember
from harness.signing import dsse
from harness.signing.keys import SigningKey, load_public
from harness.signing.statement import (
    StatementError,
    sha256_hex,
    sign_statement,
    statement,
    subject,
    subject_digests,
    unsigned_changes,
    verify_statement,
)

FLEET_PREDICATE_TYPE = "https://rig-dossier.dev/attestation/fleet/v1"


class FleetSealError(Exception):
    """The fleet bundle's signature or a member's hash does not check out."""


def seal(
    destination: Path, files: Mapping[str, bytes | FileMember], predicate: Mapping[str, Any], key: SigningKey
) -> Path:
    """Write the fleet bundle atomically (never half a bundle, never over an existing one), node
    bundles streamed from disk (harness/fleet/archive.py), each with the sha256 it was verified at."""
    if ATTESTATION in files:
        raise ValueError(f"{ATTESTATION} is written by the sealing, not given")
    subjects = [
        subject(name, m.sha256 if isinstance(m, FileMember) else sha256_hex(m)) for name, m in sorted(files.items())
    ]
    envelope = sign_statement(statement(subjects, FLEET_PREDICATE_TYPE, predicate), key)
    return archive.write_atomically(destination, {**files, ATTESTATION: envelope})


def check(files: Mapping[str, bytes], trusted_public_key: Path) -> dict[str, Any]:
    """The statement of an opened fleet bundle, if its signature and every member hash check out."""
    if ATTESTATION not in files:
        raise FleetSealError(f"no {ATTESTATION} in the fleet bundle")
    try:
        stmt = verify_statement(files[ATTESTATION], load_public(trusted_public_key), FLEET_PREDICATE_TYPE)
        signed = subject_digests(stmt)
    except (dsse.EnvelopeError, StatementError) as exc:
        raise FleetSealError(f"{ATTESTATION}: {exc}") from exc
    present = {name: sha256_hex(data) for name, data in files.items() if name != ATTESTATION}
    changes = unsigned_changes(present, signed)
    problems = [f"{n}: not in the statement" for n in changes["unsigned"]]
    problems += [f"{n}: listed in the statement but missing" for n in changes["missing"]]
    problems += [f"{n}: sha256 differs from the statement" for n in changes["changed"]]
    if problems:
        raise FleetSealError("; ".join(problems))
    return stmt
