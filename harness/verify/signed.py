"""What the key signed: the DSSE signature, the in-toto statement, and the bundle's members against
the statement's subjects (names and sha256). A failure here ends verification: nothing is read
from content that is not what the key signed."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from harness.bundle import layout, seal
from harness.bundle.read import Limits, Member
from harness.signing import dsse
from harness.signing.statement import StatementError, subject_digests, unsigned_changes
from harness.verify.check import Check

MAX_ATTESTATION_BYTES = 8 << 20  # parsed before its signature is checked: kept small


def check_signature(
    members: dict[str, Member], trusted: Ed25519PublicKey, limits: Limits = Limits()
) -> tuple[list[Check], dict | None]:
    """The signature and statement checks, and the statement when both pass."""
    member = members.get(layout.ATTESTATION)
    if member is None or member.data is None:
        return [Check("signature", layout.ATTESTATION, False, "the attestation is missing")], None
    if member.size > MAX_ATTESTATION_BYTES:
        return [
            Check(
                "signature",
                layout.ATTESTATION,
                False,
                f"{member.size} bytes, over the cap of {MAX_ATTESTATION_BYTES} bytes for an attestation",
            )
        ], None
    try:
        payload = dsse.verify(dsse.parse(member.data), trusted)
    except dsse.EnvelopeError as exc:
        return [Check("signature", layout.ATTESTATION, False, str(exc))], None
    checks = [Check("signature", layout.ATTESTATION, True, "DSSE Ed25519 signature verifies")]
    try:
        stmt = seal.parse(payload)
        subjects = subject_digests(stmt)
        if len(subjects) > limits.max_members:
            raise StatementError(f"{len(subjects)} subjects, more than {limits.max_members}")
    except StatementError as exc:
        return checks + [Check("statement", layout.ATTESTATION, False, str(exc))], None
    return checks + [Check("statement", layout.ATTESTATION, True, "in-toto Statement v1")], stmt


def check_files(members: dict[str, Member], stmt: dict) -> list[Check]:
    subjects = subject_digests(stmt)
    present = {name: m.sha256 for name, m in members.items() if name != layout.ATTESTATION}
    changes = unsigned_changes(present, subjects)
    checks = [
        Check("files", name, False, "listed in the attestation but missing from the bundle")
        for name in changes["missing"]
    ]
    checks += [
        Check("files", name, False, "in the bundle but not covered by the attestation") for name in changes["unsigned"]
    ]
    for name in sorted(set(present) & set(subjects)):
        ok = name not in changes["changed"]
        checks.append(
            Check(
                "sha256",
                name,
                ok,
                "" if ok else f"sha256 {present[name][:16]}... differs from the signed {subjects[name][:16]}...",
            )
        )
    if not checks or all(c.check == "sha256" for c in checks):
        checks.insert(0, Check("files", "bundle", True, f"{len(present)} files, exactly the signed subjects"))
    return checks
