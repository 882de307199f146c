"""The stated values issue 28 found accepted when edited and re-signed, each now refused by the
document's checks (tests/verify/test_field_inventory.py proves the same of every field docs/bundle.md
calls recomputed or consistent; these are the named ones, on the real documents they were found in).

Documents: the committed full H200 dossier's stress, transfer, roofline and precision documents
(tests/fixtures/h200/dossier-h200-full.tar.gz, format 4) and the CPU roofline capture
(tests/fixtures/accept/roofline-cpu.json).
"""

import copy
import json
from functools import cache
from pathlib import Path

import pytest

from harness.bundle import layout
from harness.bundle.read import read_all
from harness.registry import analysis_module as analysis
from harness.verify.formats import FORMATS, check_format

FIXTURES = Path(__file__).parents[1] / "fixtures"


@cache
def full() -> dict[str, bytes]:
    return read_all(FIXTURES / "h200" / "dossier-h200-full.tar.gz")


def document(member: str) -> dict:
    if member == "roofline-cpu":
        return json.loads((FIXTURES / "accept" / "roofline-cpu.json").read_text())
    return json.loads(full()[member])


def _set(path, value):
    def edit(doc):
        *parents, last = path
        for key in parents:
            doc = doc[key]
        if value is DELETE:
            del doc[last]
        else:
            doc[last] = value(doc[last]) if callable(value) else value

    return edit


DELETE = object()
STRESS, TRANSFER, ROOFLINE, PRECISION = (
    "raw/stress.json",
    "raw/transfer.json",
    "raw/roofline.json",
    "raw/precision.json",
)

CASES = [  # (member, analysis, edit, words of the refusal)
    (STRESS, "stress", _set(("devices", 0, "gemm", "iterations"), lambda v: v + 1), "its buckets hold"),
    (STRESS, "stress", _set(("devices", 0, "gemm", "completed"), False), "did not complete"),
    (STRESS, "stress", _set(("devices", 0, "memory_test", "completed"), False), "did not complete"),
    (STRESS, "stress", _set(("devices", 0, "memory_test", "region_bytes"), lambda v: v + 2**30), "region"),
    (
        STRESS,
        "stress",
        _set(("devices", 0, "memory_test", "patterns", 0, "bytes_checked"), lambda v: v // 2),
        "checked",
    ),
    (STRESS, "stress", _set(("settings", "check", "tolerance_bits"), 1), "tolerance_bits"),
    (STRESS, "stress", _set(("settings", "bucket_s"), 0.8), "bucket"),
    (STRESS, "stress", _set(("settings", "memory_test", "enabled"), False), "settings.memory_test.enabled is false"),
    (TRANSFER, "transfer", _set(("rules", "degraded_link_fraction"), 0.82), "rules differ"),
    (TRANSFER, "transfer", _set(("sizes_bytes",), lambda v: v[:-1]), "sizes"),
    (TRANSFER, "transfer", _set(("link_checks", 0, "reasons"), ["all good"]), "link_checks"),
    (ROOFLINE, "roofline", _set(("fusion", "outputs_match"), False), "fusion_speedup"),
    ("roofline-cpu", "roofline", _set(("cpu_roofs",), DELETE), "cpu_roofs"),
    (PRECISION, "precision", _set(("tensors", 0, "formats", 0, "range_max"), 70000.0), "range_max"),
    (PRECISION, "precision", _set(("tensors", 0, "formats", 0, "smallest_normal"), 1e-5), "smallest_normal"),
]


@pytest.mark.parametrize("member, name, edit, words", CASES, ids=[f"{m.split('/')[-1]}-{w}" for m, _, _, w in CASES])
def test_the_edited_value_is_refused(member, name, edit, words):
    original = document(member)
    assert analysis(name).discrepancies(original) == []
    edited = copy.deepcopy(original)
    edit(edited)
    found = analysis(name).discrepancies(edited)
    assert any(words in line for line in found), found


@pytest.mark.parametrize("key, value", [("format_version", 3), ("tool", {"name": "rig-dossier", "version": "9.9.9"})])
def test_environment_json_must_agree_with_the_signed_statement(key, value):
    commands, environment = json.loads(full()[layout.COMMANDS]), json.loads(full()[layout.ENVIRONMENT])
    made = commands["format_version"]  # the fixture's format (4): allowed, as a user would allow it
    assert all(c.ok for c in check_format(commands, environment, (made,))[0])
    failed = [c for c in check_format(commands, {**environment, key: value}, FORMATS)[0] if not c.ok]
    assert [c.subject for c in failed] == [layout.ENVIRONMENT]
