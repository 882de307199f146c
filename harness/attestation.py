"""The in-toto Statement v1 a bundle's DSSE envelope carries.

Subjects are every other file of the bundle with its sha256; the predicate records the run:
probe commands, image digests, checkpoint provenance, the tool's version and git commit.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from harness.bundle.read import check_name

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://rig-dossier.dev/attestation/dossier/v1"
SHA256_HEX = re.compile(r"[0-9a-f]{64}")


class StatementError(Exception):
    """The payload is not the statement a dossier bundle carries."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def predicate_from_commands(commands: Mapping[str, Any]) -> dict[str, Any]:
    """What the attestation records about the run, drawn from commands.json."""
    steps = [{key: step.get(key) for key in ("step", "probe", "status", "argv", "image", "exit_code")}
             for step in commands["steps"]]
    images = sorted({s["image"] for s in commands["steps"] if s.get("image")})
    checkpoints = [s["checkpoint"] for s in commands["steps"] if s.get("checkpoint")]
    return {
        "tool": commands["tool"],
        "runner": commands["runner"],
        "started_at": commands["started_at"],
        "finished_at": commands["finished_at"],
        "steps": steps,
        "images": images,
        "checkpoints": checkpoints,
    }


def statement(files: Mapping[str, bytes], predicate: Mapping[str, Any]) -> dict[str, Any]:
    """An in-toto Statement v1 over `files` (name -> bytes), subjects sorted by name."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {"sha256": sha256_hex(files[name])}} for name in sorted(files)],
        "predicateType": PREDICATE_TYPE,
        "predicate": dict(predicate),
    }


def statement_bytes(stmt: Mapping[str, Any]) -> bytes:
    return json.dumps(stmt, allow_nan=False, sort_keys=True, separators=(",", ":")).encode()


def _not_utf8(name: str) -> str | None:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "a name that is not UTF-8 (a lone surrogate)"
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "..."


def parse_statement(payload: bytes) -> dict[str, Any]:
    """Load and shape-check a statement: its type, predicate type and subjects (name, sha256)."""
    try:
        stmt = json.loads(payload.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise StatementError(f"payload is not JSON ({type(exc).__name__}: {str(exc)[:200]})") from exc
    if not isinstance(stmt, dict):
        raise StatementError("payload is not a JSON object")
    if stmt.get("_type") != STATEMENT_TYPE:
        raise StatementError(f"payload is not an in-toto Statement v1 (_type {_shown(stmt.get('_type'))})")
    if stmt.get("predicateType") != PREDICATE_TYPE:
        raise StatementError(f"predicateType is {_shown(stmt.get('predicateType'))}, expected {PREDICATE_TYPE}")
    subjects = stmt.get("subject")
    if not isinstance(subjects, list):
        raise StatementError("statement has no subject list")
    for entry in subjects:
        if not (isinstance(entry, dict) and isinstance(entry.get("name"), str)
                and isinstance(entry.get("digest"), dict) and isinstance(entry["digest"].get("sha256"), str)
                and SHA256_HEX.fullmatch(entry["digest"]["sha256"])):
            raise StatementError(f"malformed subject {_shown(entry)}")
        why = check_name(entry["name"]) or _not_utf8(entry["name"])
        if why:
            raise StatementError(f"subject {_shown(entry['name'])} has {why}")
    return stmt


def subject_digests(stmt: Mapping[str, Any]) -> dict[str, str]:
    """name -> sha256; a name listed twice raises."""
    digests: dict[str, str] = {}
    for entry in stmt["subject"]:
        if entry["name"] in digests:
            raise StatementError(f"subject {_shown(entry['name'])} is listed twice")
        digests[entry["name"]] = entry["digest"]["sha256"]
    return digests
