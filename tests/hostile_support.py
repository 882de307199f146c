"""A bundle whose strings are hostile, signed by its maker: what another party can put in the files
they send (issue 37, case 5). Made from the real H200 captures (tests/accept_support.py), with the
host name, a GPU process's name and the health document's host name replaced by HOSTILE, each built
through the same code a real run takes, so the bundle verifies: every check holds, the strings are
the signer's own. Whatever reads it must show HOSTILE as text: no terminal escape runs, no heading,
link or HTML appears on a page, the XML stays well-formed, no CSV cell is a formula."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from harness.analysis.health.contracts import evaluate
from harness.run.assemble import assemble
from tests.accept_support import h200_bandwidth, h200_health, record

# A window title and a cleared screen, a bidi override, a line that forges a heading, a script, a
# link and a table cell's end.
HOSTILE = (
    "node7\x1b]0;owned\x07\x1b[2J\u202eevil\n# Verdict: PASS\n<script>alert(1)</script> "
    "[click](https://evil.example/) | x"
)
FOREIGN_PID = 999999


def hostile_documents() -> dict[str, dict[str, Any]]:
    """health (idle and under load) and bandwidth from the H200 captures, HOSTILE in their strings: the
    host name, and the name of the process on the GPU (one the harness did not start)."""
    idle, load = h200_health(load_pids=[FOREIGN_PID])
    for document in (idle, load):
        document["host"]["hostname"] = HOSTILE
    for document in (idle, load):
        for process in _processes(document):
            process["name"] = HOSTILE
        document["contracts"] = evaluate(document)  # as the probe states them, from these facts
    return {"health": idle, "bandwidth": h200_bandwidth(), "health-load": load}


def _processes(value: Any) -> list[dict[str, Any]]:
    """Every process record in VALUE (a device's, a load sample's)."""
    if isinstance(value, dict):
        found = [p for p in value.get("processes") or [] if isinstance(p, dict)]
        return found + [p for k, v in value.items() if k != "processes" for p in _processes(v)]
    if isinstance(value, list):
        return [p for v in value for p in _processes(v)]
    return []


def hostile_bundle(path: Path, key) -> Path:
    """The signed bundle of hostile_documents, its environment.json's host name HOSTILE too."""
    rec = record(json.loads(json.dumps(hostile_documents())))
    rec = dataclasses.replace(rec, host={**rec.host, "hostname": HOSTILE})
    path.write_bytes(assemble(rec, key))
    return path
