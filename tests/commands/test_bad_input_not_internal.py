"""Issue 37, case 7: inputs that ended in an internal error (exit 70) are a clear error instead: crafted
safetensors headers given to `dossier precision --checkpoint` (exit 2: not a checkpoint this build reads),
and a node reading whose host name is a lone surrogate given to `dossier check --reading` (judged, its
name shown as an escape on the terminal, in the JSON and the Prometheus textfile). The others of the
case are tested where they live: tests/commands/test_reproduce_hostile.py (malformed signed statements),
tests/commands/test_accept_hostile.py (passedTests [1, 2]) and tests/fleet/test_fleet_hostile.py
(scontrol's non-UTF-8 output and its hang, a garbage all-reduce exit status)."""

from __future__ import annotations

import json
import struct

import pytest

from tests.check_support import reading
from tests.cli_support import dossier

HEADERS = {
    "offsets that are strings": b'{"x": {"dtype": "F32", "shape": [1], "data_offsets": ["a", "b"]}}',
    "a dimension past a float": b'{"x": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}}',
    "a dtype that is a list": b'{"x": {"dtype": ["F32"], "shape": [1], "data_offsets": [0, 4]}}',
    "nested past the recursion limit": b"[" * 100_000 + b"]" * 100_000,
    "fractional offsets": b'{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0.5, 4.5]}}',
    "a dimension that is true": b'{"x": {"dtype": "F32", "shape": [true], "data_offsets": [0, 4]}}',
    "a negative dimension": b'{"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}',
    "one offset": b'{"x": {"dtype": "F32", "shape": [1], "data_offsets": [4]}}',
}


@pytest.mark.parametrize("header", sorted(HEADERS), ids=str)
def test_a_crafted_safetensors_header_is_bad_input(tmp_path, header):
    path = tmp_path / "crafted.safetensors"
    path.write_bytes(struct.pack("<Q", len(HEADERS[header])) + HEADERS[header] + b"\0" * 4)
    code, _, err = dossier(
        "precision", "--checkpoint", str(path), "--tensor", "embedding=x", "--output", str(tmp_path / "p.json")
    )
    assert code == 2 and "internal error" not in err and str(path) in err, err


def test_a_lone_surrogate_host_name_in_a_reading_is_shown_as_an_escape(tmp_path):
    saved = reading()
    saved["hostname"] = "node\udc80\x1b[2J.example"
    path = tmp_path / "reading.json"
    path.write_text(json.dumps(saved))  # JSON writes the lone surrogate as \\udc80: a valid document
    prom = tmp_path / "check.prom"
    code, out, err = dossier("check", "--reading", str(path), "--expect-gpus", "1", "--prometheus", str(prom))
    assert code == 0 and "internal error" not in err, err
    assert "node\\udc80\\x1b[2J" in out and "\x1b" not in out
    assert 'node="node\\\\udc80\\\\x1b[2J"' in prom.read_text()
    code, out, err = dossier("check", "--reading", str(path), "--expect-gpus", "1", "--json")
    assert code == 0 and json.loads(out)["node"] == "node\udc80\x1b[2J"
