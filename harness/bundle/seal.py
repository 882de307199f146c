"""Sealing a bundle: an in-toto Statement v1 over every other member, signed (harness.signing).

Subjects are every other file of the bundle with its sha256; the predicate records the run:
probe commands, image digests, checkpoint provenance, the tool's version and git commit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harness.bundle import layout
from harness.bundle.read import check_name
from harness.signing.keys import SigningKey
from harness.signing.statement import parse_statement, sign_statement, statement, subjects_of

PREDICATE_TYPE = "https://rig-dossier.dev/attestation/dossier/v1"


def predicate_from_commands(commands: Mapping[str, Any]) -> dict[str, Any]:
    """What the attestation records about the run, drawn from commands.json."""
    steps = [
        {key: step.get(key) for key in ("step", "probe", "status", "argv", "image", "exit_code")}
        for step in commands["steps"]
    ]
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


def bundle_statement(files: Mapping[str, bytes], predicate: Mapping[str, Any]) -> dict[str, Any]:
    """The statement over FILES (every member but the attestation), subjects sorted by name."""
    return statement(subjects_of(files), PREDICATE_TYPE, predicate)


def sign_files(files: Mapping[str, bytes], key: SigningKey) -> bytes:
    """The attestation's bytes: the DSSE envelope over the statement of FILES."""
    return sign_statement(bundle_statement(files, predicate_from_commands(json.loads(files[layout.COMMANDS]))), key)


def parse(payload: bytes) -> dict[str, Any]:
    """A bundle's statement, shape-checked; every subject must be a safe member name."""
    return parse_statement(payload, PREDICATE_TYPE, check_name)
