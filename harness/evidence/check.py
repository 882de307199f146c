"""`dossier verify-evidence`: is this evidence archive exactly what the holder of the key signed, and
is what it says of its bundle true?

In order: the archive read as a bundle is (unsafe or non-canonical archives refused before any
content is read); the DSSE signature with the trusted key, an evidence statement; every member
against the statement's subjects (missing, unsigned, changed); the manifest against its schema;
every piece's members present and every member in a piece; the bundle member's sha256 the
manifest's; each copy under failing/ byte for byte the bundle member it copies, by the sha256 the
bundle's own statement signs; the live node reading against its schema. With the bundle's signer's
key (`--bundle-key`), the bundle is verified in full (`dossier verify`'s checks), its signer is the
manifest's and its failures, judged again from its raw JSON, are the archive's; without it those
are NOT DONE, said.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from harness import registry
from harness.bundle import layout
from harness.bundle.read import UnsafeBundle, read_all
from harness.bundle.seal import parse as parse_bundle_statement
from harness.bundle.view import BundleView
from harness.evidence import archive, recorded
from harness.schemas import violations
from harness.signing import dsse
from harness.signing.keys import keyid
from harness.signing.statement import StatementError, sha256_hex, subject_digests, unsigned_changes, verify_statement
from harness.verify import verify_bundle
from harness.verify.check import Check

Checks = list[Check]


def _signed(files: dict[str, bytes], trusted: Ed25519PublicKey) -> Checks:
    if layout.ATTESTATION not in files:
        return [Check("signature", layout.ATTESTATION, False, "missing")]
    try:
        stmt = verify_statement(files[layout.ATTESTATION], trusted, archive.PREDICATE_TYPE)
        signed = subject_digests(stmt)
    except (dsse.EnvelopeError, StatementError) as exc:
        return [Check("signature", layout.ATTESTATION, False, str(exc))]
    present = {name: sha256_hex(data) for name, data in files.items() if name != layout.ATTESTATION}
    changes = unsigned_changes(present, signed)
    found = [Check("signature", layout.ATTESTATION, True, f"an evidence statement signed by {keyid(trusted)[:16]}...")]
    found += [Check("files", n, False, "not in the statement") for n in changes["unsigned"]]
    found += [Check("files", n, False, "listed in the statement but missing") for n in changes["missing"]]
    found += [Check("sha256", n, False, "differs from the statement") for n in changes["changed"]]
    if not (changes["unsigned"] or changes["missing"] or changes["changed"]):
        found.append(Check("files", "archive", True, f"{len(present)} members, each the sha256 signed"))
    return found


def _pieces(files: dict[str, bytes], manifest: dict[str, Any]) -> Checks:
    listed = {m for piece in manifest["pieces"].values() for m in piece.get("members", [])}
    found = [
        Check("pieces", m, False, "a piece's member missing from the archive") for m in sorted(listed - set(files))
    ]
    own = {archive.MANIFEST, layout.ATTESTATION}
    found += [Check("pieces", m, False, "in no piece of the manifest") for m in sorted(set(files) - listed - own)]
    unavailable = sorted(name for name, piece in manifest["pieces"].items() if "unavailable" in piece)
    if not found:
        found.append(Check("pieces", archive.MANIFEST, True, f"every member in a piece; unavailable: {unavailable}"))
    return found


def _copies(files: dict[str, bytes], inner: dict[str, bytes], manifest: dict[str, Any]) -> Checks:
    """The bundle is the manifest's, and each copy is the bundle member its own statement signs."""
    member = manifest["bundle"]["member"]
    if sha256_hex(files[member]) != manifest["bundle"]["sha256"]:
        return [Check("bundle", member, False, "its sha256 is not the manifest's")]
    try:  # the bundle's statement, unverified here: --bundle-key verifies its signature
        envelope = dsse.parse(inner[layout.ATTESTATION])
        payload = dsse.decode_base64(envelope.get("payload"), "payload")
        signed = subject_digests(parse_bundle_statement(payload))
    except (KeyError, dsse.EnvelopeError, StatementError) as exc:
        return [Check("bundle", member, False, f"its statement cannot be read: {exc}")]
    found = [Check("bundle", member, True, "the manifest's sha256")]
    for copy in sorted(n for n in files if n.startswith(archive.COPY_DIR)):
        original = copy.removeprefix(archive.COPY_DIR)
        same = signed.get(original) == sha256_hex(files[copy]) == sha256_hex(inner.get(original, b""))
        found.append(Check("copy", copy, same, f"{original} as the bundle signs it" if same else f"not {original}"))
    return found


def _with_bundle_key(inner_path: Path, inner: dict[str, bytes], manifest: dict, bundle_key: Ed25519PublicKey) -> Checks:
    result = verify_bundle(inner_path, bundle_key, allow_formats=(manifest["bundle"].get("format_version") or 0,))
    member = manifest["bundle"]["member"]
    if not result.ok:
        return [Check("bundle-verified", member, False, f"{c.check} {c.subject}: {c.detail}") for c in result.failures]
    found = [Check("bundle-verified", member, True, f"{result.passed} checks passed")]
    signer = keyid(bundle_key) == manifest["bundle"]["signer_keyid"]
    found.append(Check("signer", member, signer, "the manifest's signer" if signer else "another signer"))
    failed = [f["name"] for f in recorded.failures(BundleView.from_files(inner, registry.analysis_module))]
    stated = [f["name"] for f in manifest["failed"]]
    found.append(Check("failures", archive.FAILURES, failed == stated, f"judged again: {failed}; stated: {stated}"))
    return found


def _live(files: dict[str, bytes]) -> Checks:
    reading = "live/reading.json"
    if reading not in files:
        return []
    problems = violations("check-reading", json.loads(files[reading]))
    return [Check("schema", reading, not problems, str(problems[0]) if problems else "a node reading")]


def verify_archive(path: Path, trusted: Ed25519PublicKey, bundle_key: Ed25519PublicKey | None) -> tuple[Checks, Checks]:
    """(the checks, the checks not done): every failure a Check with ok False; never raises on input."""
    try:
        files = read_all(path)
    except UnsafeBundle as exc:
        return [Check("structure", "archive", False, str(exc))], []
    found = _signed(files, trusted)
    if not all(c.ok for c in found):
        return found, []  # nothing is read from content that is not what the key signed
    try:
        manifest = json.loads(files[archive.MANIFEST])
    except (KeyError, ValueError) as exc:
        return found + [Check("schema", archive.MANIFEST, False, f"missing or not JSON: {exc}")], []
    problems = violations("evidence-manifest", manifest)
    found.append(Check("schema", archive.MANIFEST, not problems, str(problems[0]) if problems else "the manifest"))
    if problems:
        return found, []
    found += _pieces(files, manifest) + _live(files)
    checks, not_done = _bundle_checks(files, manifest, bundle_key)
    return found + checks, not_done


def _bundle_checks(
    files: dict[str, bytes], manifest: dict, bundle_key: Ed25519PublicKey | None
) -> tuple[Checks, Checks]:
    member = manifest["bundle"]["member"]
    with tempfile.TemporaryDirectory(prefix="dossier-evidence-") as folder:
        inner_path = Path(folder) / Path(member).name
        inner_path.write_bytes(files.get(member, b""))
        try:
            inner = read_all(inner_path)
        except UnsafeBundle as exc:
            return [Check("bundle", member, False, str(exc))], []
        found = _copies(files, inner, manifest)
        if bundle_key is None:
            why = "no --bundle-key: the bundle's own signature, signer and failures were not checked"
            return found, [Check("bundle-verified", member, False, why)]
        return found + _with_bundle_key(inner_path, inner, manifest, bundle_key), []
