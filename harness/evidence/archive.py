"""The evidence archive's members, its manifest (schemas/evidence-manifest.schema.json) and its seal.

Members: `bundle/NAME.tar.gz`, the bundle itself as it verified (its figures can be recomputed and
its signature checked by the vendor with `dossier verify`); `failures.json`, each failed criterion
with its figures, and `failing/MEMBER`, the raw data of its steps copied out of the bundle byte for
byte (the bundle's own statement signs each one's sha256); `gpu-identity-recorded.json`,
`ecc-history.json` and `ruled-out.json`, what the run recorded (harness/evidence/recorded.py);
`live/...`, what the node gave when the archive was made (harness/evidence/live.py); `manifest.json`,
every piece with its members or why it is unavailable. Sealed as a bundle is: an in-toto Statement
v1 over every member's sha256 in a DSSE envelope (harness.signing.statement), its own predicate type
so an evidence archive is never taken for a node's bundle, and the deterministic tar.gz of
harness/bundle/write.py, put in place atomically.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.bundle.layout import ATTESTATION
from harness.bundle.view import BundleView
from harness.bundle.write import archive_bytes, write_with
from harness.evidence import recorded
from harness.evidence.live import Live
from harness.probes.contract import utc_now
from harness.signing.keys import SigningKey
from harness.signing.statement import sha256_hex, sign_statement, statement, subjects_of

KIND = "rig-dossier evidence"
FORMAT_VERSION = 1
PREDICATE_TYPE = "https://rig-dossier.dev/attestation/evidence/v1"
MANIFEST = "manifest.json"
FAILURES = "failures.json"
IDENTITY = "gpu-identity-recorded.json"
ECC = "ecc-history.json"
RULED_OUT = "ruled-out.json"
BUNDLE_DIR = "bundle/"
COPY_DIR = "failing/"
PIECES = (
    "bundle",
    "failing_figures",
    "gpu_identity_recorded",
    "gpu_identity_now",
    "ecc_row_remap_history",
    "kernel_log_xids",
    "node_reading",
    "nvidia_smi_q",
    "nvidia_bug_report",
    "ruled_out",
)


def as_json(document: Any) -> bytes:
    return (json.dumps(document, indent=1, sort_keys=True, allow_nan=False) + "\n").encode()


def bundle_member(name: str) -> str:
    return f"{BUNDLE_DIR}{name}"


def _recorded_piece(files: dict[str, bytes], member: str, document: Any) -> dict[str, Any]:
    if isinstance(document, dict) and set(document) == {"unavailable"}:
        return document
    files[member] = as_json(document)
    return {"members": [member], "source": "bundle"}


def members(bundle_name: str, bundle_bytes: bytes, view: BundleView, live: Live) -> tuple[dict[str, bytes], dict]:
    """(every member but the manifest and the attestation, the pieces): what the bundle and the node give."""
    failed = recorded.failures(view)
    files = {bundle_member(bundle_name): bundle_bytes, FAILURES: as_json(failed)}
    copies = sorted({COPY_DIR + m for f in failed for m in f["members"]})
    files.update({copy: view.files[copy.removeprefix(COPY_DIR)] for copy in copies})
    pieces: dict[str, Any] = {
        "bundle": {"members": [bundle_member(bundle_name)], "source": "bundle"},
        "failing_figures": {"members": [FAILURES, *copies], "source": "bundle"},
        "gpu_identity_recorded": _recorded_piece(files, IDENTITY, recorded.identity(view)),
        "ecc_row_remap_history": _recorded_piece(files, ECC, recorded.ecc_history(view)),
        "ruled_out": _recorded_piece(files, RULED_OUT, recorded.ruled_out(view)),
        **live.pieces,
    }
    files.update(live.members)
    return files, {name: pieces[name] for name in PIECES}


def manifest(
    bundle_name: str, bundle_bytes: bytes, view: BundleView, signer: str, pieces: dict, failed: list, here: str
) -> dict[str, Any]:
    recorded_host = view.environment.get("host")
    host: dict[str, Any] = recorded_host if isinstance(recorded_host, dict) else {}
    return {
        "kind": KIND,
        "format_version": FORMAT_VERSION,
        "made_at": utc_now(),
        "bundle": {
            "member": bundle_member(bundle_name),
            "sha256": sha256_hex(bundle_bytes),
            "signer_keyid": signer,
            "format_version": view.commands.get("format_version"),
            "node": host.get("hostname"),
            "started_at": view.commands.get("started_at"),
            "finished_at": view.commands.get("finished_at"),
        },
        "made_on": here,
        "failed": [{"name": f["name"], "why": f["why"], "steps": f["steps"]} for f in failed],
        "pieces": pieces,
    }


def seal(files: Mapping[str, bytes], key: SigningKey, destination: Path) -> Path:
    """Sign FILES (the manifest among them) and write the archive atomically; never over a file."""
    if ATTESTATION in files:
        raise ValueError(f"{ATTESTATION} is written by the sealing, not given")
    found = json.loads(files[MANIFEST])
    predicate = {"kind": KIND, "bundle": found["bundle"], "made_at": found["made_at"], "made_on": found["made_on"]}
    envelope = sign_statement(statement(subjects_of(files), PREDICATE_TYPE, predicate), key)
    data = archive_bytes({**files, ATTESTATION: envelope})
    return write_with(lambda handle: handle.write(data), destination, hint="give another --output")
