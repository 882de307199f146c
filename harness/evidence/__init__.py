"""`dossier evidence`: a signed evidence archive for a vendor ticket about a bundle that failed.

`recorded` reads what the verified bundle gives (its failures with their raw data, the GPUs as the
run recorded them, ECC and row-remap counters, what the run ruled out), `live` what the node gives
now when the archive is made on the bundle's node (the node reading, serials, VBIOS, InfoROM, the
kernel log's XIDs in the run's window, `nvidia-smi -q`, `nvidia-bug-report.sh`), `archive` the
members, manifest and seal, `check` the archive verified (`dossier verify-evidence`). docs/evidence.md.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.bundle.view import BundleView
from harness.errors import UsageError
from harness.evidence import archive, live, recorded
from harness.schemas import violations
from harness.signing.keys import SigningKey
from harness.signing.statement import sha256_hex


@dataclass(frozen=True)
class Made:
    path: Path
    manifest: dict


def make(
    bundle: Path,
    view: BundleView,
    signer_keyid: str,
    key: SigningKey,
    destination: Path,
    timeouts: live.Timeouts,
    verified_sha256: str,
    say: Callable[[str], None],
) -> Made:
    """The evidence archive of BUNDLE (verified: VIEW is what its signature covers, and VERIFIED_SHA256
    the file's sha256 when it was) at DESTINATION."""
    failed = recorded.failures(view)
    if not failed:
        raise UsageError(
            f"{bundle}: nothing failed in this bundle, so there is no failure to send evidence of",
            hint="`dossier report BUNDLE` shows its verdict",
        )
    host = view.environment.get("host")
    taken = live.take(
        host.get("hostname") if isinstance(host, dict) else None, view.commands.get("started_at"), timeouts, say
    )
    data = bundle.read_bytes()
    if sha256_hex(data) != verified_sha256:
        raise UsageError(f"{bundle} changed while the evidence was taken: run `dossier evidence` again")
    files, pieces = archive.members(bundle.name, data, view, taken)
    document = archive.manifest(bundle.name, data, view, signer_keyid, pieces, failed, socket.gethostname())
    problems = violations("evidence-manifest", document)
    if problems:  # a bug in this build: never sealed
        raise AssertionError(f"the evidence manifest breaks its schema: {problems[0]}")
    files[archive.MANIFEST] = archive.as_json(document)
    return Made(archive.seal(files, key, destination), document)
