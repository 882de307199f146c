"""What the re-signing verify fuzz found (bench/fuzz_verify.py, 40,000 mutants, seed 1, bench/RESULTS.md):
each re-signed edit it reported as unexplained, made again by hand on the full H200 dossier re-made in
this build's format, with what verify does and how docs/bundle.md's inventory classes it now.

Three were the fuzz's own classing (a reordered list read as edits of its items' fields; a renamed
key read as a field of the subtree); one was the inventory claiming a check that does not exist for a
one-GPU run (the all-reduce topology); none was a figure verify should have refused and did not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.bundle import layout
from harness.bundle.write import archive_bytes
from harness.run.assemble import unsigned_files
from harness.signing.keys import load_public
from harness.verify import verify_bundle
from tests.bundle_support import make_key, resign
from tests.fuzz_support import accepted_change
from tests.h200_remade import record_of

FULL = Path(__file__).resolve().parents[1] / "fixtures" / "h200" / "dossier-h200-full.tar.gz"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The full H200 dossier in this build's format, signed by a key made here: (files, key, public)."""
    key, public = make_key(tmp_path_factory.mktemp("keys"))
    files = unsigned_files(record_of(FULL))
    resign(files, key)
    return files, key, load_public(public)


def edited(base, tmp_path, member: str, change) -> tuple[bool, list[str], str]:
    """MEMBER's document changed by CHANGE and the bundle re-signed: (verify's ok, its failures, the class)."""
    files, key, public = base
    document = json.loads(files[member])
    change(document)
    mutant = {**files, member: json.dumps(document, sort_keys=True, indent=1).encode() + b"\n"}
    resign(mutant, key)
    path = tmp_path / "edited.tar.gz"
    path.write_bytes(archive_bytes(mutant))
    result = verify_bundle(path, public)
    return result.ok, [c.line() for c in result.failures], accepted_change(files, mutant)


def _samples(document):
    return document["load"]["devices"][0]["samples"]


def test_load_samples_reordered_are_an_edit_of_the_raw_list_not_of_each_samples_reasons(base, tmp_path):
    samples = _samples(json.loads(base[0]["raw/health-load.json"]))
    assert len({json.dumps(s["clock_event_reasons"]) for s in samples}) > 1  # the reasons differ by sample
    ok, failures, why = edited(base, tmp_path, "raw/health-load.json", lambda d: _samples(d).reverse())
    assert ok, failures
    assert why == "raw: health `load**`"


def test_one_samples_reasons_edited_alone_are_refused(base, tmp_path):
    def rename(document):
        sample = next(s for s in _samples(document) if s["clock_event_reasons"])
        sample["clock_event_reasons"] = ["sw_power_cap"] if sample["clock_event_reasons"] != ["sw_power_cap"] else []

    ok, failures, _ = edited(base, tmp_path, "raw/health-load.json", rename)
    assert not ok and any("clock_event_reasons" in line for line in failures), failures


def test_transfer_groups_reordered_are_an_edit_of_groups_whose_order_means_nothing(base, tmp_path):
    groups = json.loads(base[0]["raw/transfer.json"])["groups"]
    assert len(groups) > 1
    ok, failures, why = edited(base, tmp_path, "raw/transfer.json", lambda d: d["groups"].reverse())
    assert ok, failures
    assert why == "raw: transfer `groups`"


def test_a_one_gpu_runs_pcie_width_in_the_all_reduce_topology_is_read_by_no_check(base, tmp_path):
    def narrower(document):
        document["topology"]["nvml"]["devices"][0]["pcie"]["max_width"] = 8

    ok, failures, why = edited(base, tmp_path, "raw/allreduce.json", narrower)
    assert ok, failures
    assert why == "raw: allreduce `topology**`"


def test_a_key_renamed_in_a_roofline_shape_is_a_key_the_schema_does_not_name(base, tmp_path):
    def rename(document):
        shape = document["measurements"]["shapes"][0]
        shape["cache_defeated_"] = shape.pop("cache_defeated")

    ok, failures, why = edited(base, tmp_path, layout.raw_name("roofline"), rename)
    assert ok, failures
    assert why == (
        "free: roofline `measurements.shapes[].cache_defeated_`, a key its schema does not name (the schema "
        "allows other keys there, and no check reads one); raw: roofline `{dtype_checks[].}measurements.shapes[].cache_defeated`"
    )
