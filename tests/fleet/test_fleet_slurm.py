"""Fleets on a real Slurm cluster of 3 virtual nodes on this machine (tests/services/slurm.sh).

Two jobs, each collected and checked: a CPU fleet dossier on 3 nodes where n2 is held to 15 % of
the CPU (tests/throttle.py: slow for real) and must be flagged; and a fleet where n3's Python
cannot start (a real failure) and must be named with its log while n1 and n2 are kept. The
dossier is reduced to health and bandwidth (`--skip` the rest): the group takes 1-1.5 minutes.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from harness.analysis.fleet import NO_SKU
from harness.cli import main

pytestmark = pytest.mark.slurm

SERVICE = Path(__file__).resolve().parents[1] / "services" / "slurm.sh"
THROTTLE = Path(__file__).resolve().parents[1] / "throttle.py"
# health and bandwidth only: the virtual nodes share this host, and any other step run at once on a
# neighbour (the stress GEMM, the transfer copies) moves a node's bandwidth more than the throttle does
REDUCED = [
    "--skip=roofline",
    "--skip=precision",
    "--skip=allreduce",
    "--skip=transfer",
    "--skip=health-load",
    "--skip=health-diff",
    "--skip=stress",
    "--allreduce-arg=--max-bytes=1M",
]  # the fleet all-reduce: a short gloo sweep
JOB_WAIT_S = 240


@pytest.fixture(scope="session")
def slurm_cluster():
    """A running 3-node cluster; started here (and stopped after) unless one already runs."""
    running = subprocess.run([str(SERVICE), "status"], capture_output=True, text=True).returncode == 0
    started = subprocess.run([str(SERVICE), "start"], capture_output=True, text=True, timeout=300)
    if started.returncode != 0:
        pytest.fail(f"tests/services/slurm.sh start failed:\n{started.stdout}\n{started.stderr}")
    conf = started.stdout.strip().splitlines()[-1].removeprefix("export SLURM_CONF=")
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = conf
    yield conf
    if previous is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = previous
    if not running:
        subprocess.run([str(SERVICE), "stop"], capture_output=True, timeout=120)


def dossier(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def submit_and_collect(output_dir: Path, *options: str) -> tuple[int, str, dict, Path]:
    code, printed = dossier(
        "fleet",
        "submit",
        "--nodes",
        "3",
        "--output-dir",
        str(output_dir),
        "--time",
        "10",
        "--wait",
        str(JOB_WAIT_S),
        *REDUCED,
        *options,
    )
    assert code == 0
    job_id = printed.strip().splitlines()[-1]
    public = output_dir / "keys" / "dossier.pub"
    code, printed = dossier("fleet", "collect", job_id, "--output-dir", str(output_dir), "--key", str(public))
    bundle = Path(printed.strip().splitlines()[-1])
    assert bundle == output_dir / f"fleet-{job_id}.tar.gz" and bundle.exists()
    return code, job_id, fleet_json(bundle), bundle


def fleet_json(bundle: Path) -> dict:
    with tarfile.open(bundle) as tar:
        return json.load(tar.extractfile("fleet.json"))


@pytest.fixture(scope="module")
def slow_fleet(slurm_cluster, tmp_path_factory):
    """3 nodes at once, each single-threaded, n2 held to 10 % of a core of its own.

    The virtual nodes share this 2-core host: n1 and n3 share core 0, so whatever else the host
    runs slows both alike and they stay comparable (with n1 and n3 on a core each, other work on
    one core moved them 30 % apart, and two healthy nodes that far apart hide any third). The
    slowdown is a CPU share, not a thread count: on a busy 2-core host one thread is as often
    faster than two as slower.
    """
    out = tmp_path_factory.mktemp("fleet-slow")
    pin = {
        "n1": "taskset -c 0",
        "n2": f"taskset -c 1 {sys.executable} {THROTTLE} --share 0.10 --",
        "n3": "taskset -c 0",
    }
    options = [word for node, prefix in pin.items() for word in ("--node-prefix", f"{node}:{prefix}")]
    options += [word for node in pin for word in ("--node-env", f"{node}:OMP_NUM_THREADS=1")]
    return (out, *submit_and_collect(out, *options))


def test_a_cpu_fleet_on_three_nodes_is_collected_and_every_bundle_verifies(slow_fleet):
    out, code, job_id, document, bundle = slow_fleet
    assert document["job"]["nodes"] == ["n1", "n2", "n3"]
    assert [n["status"] for n in document["nodes"]] == ["ok", "ok", "ok"], document["failed_nodes"]
    for node in document["nodes"]:
        assert node["verify"]["passed"] and node["verify"]["failures"] == []
        assert isinstance(node["metrics"]["bandwidth_sustained_gbps"], float)
        assert node["acceptance"]["verdict"] in ("skip", "pass", "warn", "fail", "incomplete")  # CPU nodes: skip
    assert document["table"]["bandwidth_sustained_gbps"]["groups"][NO_SKU]["measured_nodes"] == 3  # CPU nodes
    # The fleet bundle: signed like a node bundle, holding each verified node bundle and every log.
    from harness.fleet.sealing import check

    with tarfile.open(bundle) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
    statement = check(files, out / "keys" / "dossier.pub")
    assert {
        "nodes/n1.tar.gz",
        "nodes/n2.tar.gz",
        "nodes/n3.tar.gz",
        "fleet.md",
        "job/fleet.sbatch",
        "job/node.sh",
        f"logs/slurm-{job_id}-n2.out",
    } <= set(files)
    assert {s["name"] for s in statement["subject"]} == set(files) - {"attestation.intoto.json"}
    inner = out / "n1-copy.tar.gz"
    inner.write_bytes(files["nodes/n1.tar.gz"])
    assert dossier("verify", str(inner), "--key", str(out / "keys" / "dossier.pub"))[0] == 0
    # Deterministic: collecting the same job again gives the same bytes.
    first = bundle.read_bytes()
    bundle.rename(out / "first.tar.gz")
    dossier("fleet", "collect", job_id, "--output-dir", str(out), "--key", str(out / "keys" / "dossier.pub"))
    assert bundle.read_bytes() == first


def test_a_node_made_slow_for_real_is_flagged_as_the_outlier(slow_fleet):
    out, code, job_id, document, bundle = slow_fleet
    rows = document["table"]["bandwidth_sustained_gbps"]["groups"][NO_SKU]["nodes"]
    assert document["outliers"].get("bandwidth_sustained_gbps") == ["n2"], rows
    assert rows["n2"]["value"] < min(rows["n1"]["value"], rows["n3"]["value"])
    assert "below" in rows["n2"]["why"]
    [flag] = [f for f in document["flags"] if f["metric"] == "bandwidth_sustained_gbps"]
    assert flag["node"] == "n2" and flag["median_others"] == rows["n2"]["median_others"]
    assert code == 1  # an outlier is a finding: collect says so in its exit code
    # What made it slow is on record: the per-node hook in the job, the variable in n2's own bundle.
    with tarfile.open(bundle) as tar:
        node_script = tar.extractfile("job/node.sh").read().decode()
        with tarfile.open(fileobj=io.BytesIO(tar.extractfile("nodes/n2.tar.gz").read())) as inner:
            environment = json.dumps(json.load(inner.extractfile("environment.json")))
    assert "n2) export OMP_NUM_THREADS=1; PREFIX=(taskset -c 1 " in node_script
    assert "throttle.py --share 0.10" in node_script and '"OMP_NUM_THREADS": "1"' in environment


def test_the_allreduce_runs_across_the_allocation(slow_fleet):
    out, code, job_id, document, bundle = slow_fleet
    allreduce = document["allreduce"]
    assert allreduce["status"] == "ok", allreduce
    assert allreduce["headlines"]["world_size"] == 3
    with tarfile.open(bundle) as tar:
        raw = json.load(tar.extractfile("raw/allreduce.json"))
    assert raw["probe"] == "allreduce"


def test_a_failing_node_is_named_with_its_log_and_the_others_are_kept(slurm_cluster, tmp_path):
    # n3's Python cannot start: a broken interpreter on one node, not a simulated failure.
    code, job_id, document, bundle = submit_and_collect(
        tmp_path, "--skip=bandwidth", "--node-env", "n3:PYTHONHOME=/nonexistent"
    )
    assert code == 1
    assert document["failed_nodes"] == ["n3"]
    n1, n2, n3 = document["nodes"]
    assert n1["status"] == n2["status"] == "ok" and n1["verify"]["passed"] and n2["verify"]["passed"]
    assert n3["status"] == "failed" and n3["exit_code"] not in (0, None)
    assert "wrote no bundle" in n3["why"] and "PYTHONHOME" not in n3["why"]
    assert n3["log"] == f"logs/slurm-{job_id}-n3.out"
    assert "encodings" in n3["log_tail"]  # Python's own fatal error, kept from the node's log
    with tarfile.open(bundle) as tar:
        names = set(tar.getnames())
        report = tar.extractfile("fleet.md").read().decode()
    assert {"nodes/n1.tar.gz", "nodes/n2.tar.gz", n3["log"]} <= names and "nodes/n3.tar.gz" not in names
    assert "### n3: failed" in report


def test_the_collect_scaled_out_as_a_job_array_gives_the_same_answer(slow_fleet):
    """`fleet collect --array 2`: the two shards as a real Slurm job array, then the merge as a job after it."""
    out, plain_code, job_id, document, bundle = slow_fleet
    plain = out / "plain.tar.gz"
    bundle.rename(plain)
    try:
        code, printed = dossier(
            "fleet",
            "collect",
            job_id,
            "--output-dir",
            str(out),
            "--key",
            str(out / "keys" / "dossier.pub"),
            "--array",
            "2",
            "--wait",
            str(JOB_WAIT_S),
        )
        merge_id, path = printed.strip().splitlines()
        assert Path(path) == bundle and code == plain_code  # the merge job's exit code: the plain collect's
        merged = fleet_json(bundle)
        assert {**merged, "job": None} == {**fleet_json(plain), "job": None}
        assert merged["job"]["id"] == job_id and merged["outliers"] == document["outliers"]
        with tarfile.open(bundle) as one, tarfile.open(plain) as other:
            assert {m.name: m.size for m in one.getmembers()} == {m.name: m.size for m in other.getmembers()}
        run_dir = Path(document["job"]["submission"]["run_dir"])
        shards = sorted(p.name for p in (out / f"fleet-{job_id}.shards").iterdir())
        assert shards == ["shard-0-of-2.intoto.json", "shard-1-of-2.intoto.json"]
        logs = sorted(p.name for p in (run_dir / "logs").glob("collect-*.out"))
        assert len(logs) == 2 and (run_dir / "logs" / f"merge-{merge_id}.out").exists()
        assert "#SBATCH --array=0-1" in (run_dir / "collect-array.sbatch").read_text()
    finally:
        bundle.unlink(missing_ok=True)
        plain.rename(bundle)
