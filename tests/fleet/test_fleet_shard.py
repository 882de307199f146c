"""Sharded collects without Slurm, over a synthetic fleet of 12 nodes (bench/fleet_synth.py, one node of
each sickness): `fleet collect --shard I/N` then `fleet merge` writes the same fleet bundle, byte for
byte, as an unsharded collect; partials that are missing, of another run, tampered with or of two
splits are refused with one line. The Slurm job array is tests/fleet/test_fleet_slurm.py's."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.cli_support import dossier
from tests.fleet_support import JOB, synthetic_fleet

NODES = 12


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The synthetic fleet and its unsharded fleet bundle's bytes."""
    out, plans = synthetic_fleet(tmp_path_factory.mktemp("shard-fleet"), count=NODES)
    code, printed, _ = dossier("fleet", "collect", JOB, "--output-dir", str(out), "--key", key(out), "--workers", "2")
    assert code == 1  # the planted sick nodes
    plain = out / f"fleet-{JOB}.tar.gz"
    data = plain.read_bytes()
    plain.unlink()
    return out, data


def key(out: Path) -> str:
    return str(out / "keys" / "dossier.pub")


@pytest.fixture
def clean(fleet):
    """No shards and no fleet bundle before or after a test."""
    out, _ = fleet
    yield out
    shutil.rmtree(out / f"fleet-{JOB}.shards", ignore_errors=True)
    (out / f"fleet-{JOB}.tar.gz").unlink(missing_ok=True)


def shards(out: Path, count: int, only: range | None = None) -> None:
    for index in only if only is not None else range(count):
        code, printed, err = dossier(
            "fleet",
            "collect",
            JOB,
            "--output-dir",
            str(out),
            "--key",
            key(out),
            "--shard",
            f"{index}/{count}",
            "--workers",
            "1",
        )
        assert code == 0, err
        assert printed.strip() == str(out / f"fleet-{JOB}.shards" / f"shard-{index}-of-{count}.intoto.json")


def merge(out: Path, *more: str) -> tuple[int, str, str]:
    return dossier("fleet", "merge", JOB, "--output-dir", str(out), "--key", key(out), *more)


@pytest.mark.parametrize("count", [3, 5])
def test_merged_shards_are_the_unsharded_fleet_bundle_byte_for_byte(fleet, clean, count):
    out, plain = fleet
    shards(out, count)
    code, printed, err = merge(out)
    assert code == 1 and f"{NODES} nodes from the shards" in err  # the same sick nodes, the same exit code
    assert (out / f"fleet-{JOB}.tar.gz").read_bytes() == plain


def test_a_missing_shard_is_named(clean):
    shards(clean, 3, only=range(0, 2))
    code, _, err = merge(clean)
    assert code == 2 and "shard(s) 2 of 3 missing" in err and "Traceback" not in err


def test_a_shard_of_another_run_is_refused(clean, tmp_path):
    other, _ = synthetic_fleet(tmp_path / "other", count=6)  # the same job id, another run directory
    shutil.copy(other / "keys" / "dossier.key", tmp_path / "key")
    shards(clean, 2)
    code, _, _ = dossier(
        "fleet",
        "collect",
        JOB,
        "--output-dir",
        str(other),
        "--key",
        key(other),
        "--shard",
        "1/2",
        "--signing-key",
        str(clean / "keys" / "dossier.key"),
    )  # signed with the right key, even
    assert code == 0
    shutil.copy(
        other / f"fleet-{JOB}.shards" / "shard-1-of-2.intoto.json",
        clean / f"fleet-{JOB}.shards" / "shard-1-of-2.intoto.json",
    )
    code, _, err = merge(clean)
    assert code == 2 and f"is a shard of job {JOB} in {other / 'fleet-synthetic'}" in err


def test_a_tampered_shard_or_another_key_is_refused(clean, tmp_path):
    shards(clean, 2)
    path = clean / f"fleet-{JOB}.shards" / "shard-0-of-2.intoto.json"
    envelope = json.loads(path.read_bytes())
    envelope["payload"] = envelope["payload"][:-8] + "AAAAAAA="  # the signed statement changed
    path.write_text(json.dumps(envelope))
    code, _, err = merge(clean)
    assert code == 1 and "does not verify as a shard" in err
    code, _, err = dossier(
        "fleet", "merge", JOB, "--output-dir", str(clean), "--key", str(clean / "rogue-key" / "dossier.pub")
    )
    assert code == 1 and "does not verify" in err


def test_shards_of_two_splits_are_not_mixed(clean):
    shards(clean, 2)
    shards(clean, 3, only=range(0, 1))
    code, _, err = merge(clean)
    assert code == 2 and "different splits" in err


@pytest.mark.parametrize("spec", ["3/3", "-1/3", "a/b", "1"])
def test_a_bad_shard_spec_is_one_line(fleet, spec):
    out, _ = fleet
    code, _, err = dossier("fleet", "collect", JOB, "--output-dir", str(out), "--key", key(out), f"--shard={spec}")
    assert code == 2 and "--shard" in err and "Traceback" not in err


def test_a_shard_is_not_checked_twice_over_itself(clean):
    shards(clean, 2, only=range(0, 1))
    code, _, err = dossier("fleet", "collect", JOB, "--output-dir", str(clean), "--key", key(clean), "--shard", "0/2")
    assert code == 2 and "already exists" in err


def test_the_merge_writes_the_fleet_for_prometheus(clean):
    shards(clean, 2)
    prom = clean / "fleet.prom"
    code, _, _ = merge(clean, "--prometheus", str(prom))
    assert code == 1
    samples = [s for family in text_string_to_metric_families(prom.read_text()) for s in family.samples]
    nodes = {s.labels["status"]: s.value for s in samples if s.name == "rig_dossier_fleet_nodes"}
    assert nodes == {"ok": NODES - 2.0, "failed": 1.0, "rejected": 1.0}
    status = [s for s in samples if s.name == "rig_dossier_fleet_node_status" and s.value == 1.0]
    assert len(status) == NODES
    medians = [s for s in samples if s.name == "rig_dossier_fleet_bandwidth_sustained_bytes_per_second_median"]
    assert medians and medians[0].labels["sku"] == "h200-sxm-141gb" and medians[0].value > 4e12
    with tarfile.open(clean / f"fleet-{JOB}.tar.gz") as tar:
        assert json.load(tar.extractfile("fleet.json"))["summary"]["nodes"] == NODES
