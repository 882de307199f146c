"""Bundles for the acceptance tests, made with the bundle modules from real probe documents.

- H200-like bundles: health at idle and under load are the documents the health probe's own code
  builds from the real H200 captures (tests/h200_capture.py, nvidia-smi -q idle/GEMM-load pair);
  the bandwidth document is built by the bandwidth probe's own `Measurement.document` from the
  torch copy sweep recorded on the lent H200 (tests/fixtures/h200/h200-baseline.md); the
  health-diff is computed as `dossier run` computes it. See tests/fixtures/README.md.
- A CPU dossier: the lab plan run for real on this machine (bandwidth sized down for speed).

Fail paths change one recorded fact each and rebuild the document through the same code.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tarfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness import registry
from harness.analysis.bandwidth import figures as bw
from harness.analysis.health.diff import diff
from harness.bundle.view import BundleView
from harness.judge.acceptance import profile
from harness.probes import bandwidth as bandwidth_probe
from harness.probes.contract import CONTRACT_VERSION
from harness.run.assemble import assemble, unsigned_files
from harness.run.orchestrate import RunOptions, collect
from harness.run.plan import LAB_PLAN, HostStep, ProbeStep, StepArgs
from harness.run.provenance import host_environment, tool_info
from harness.run.records import COMPLETED, NOT_RUN, RunRecord, StepRecord
from harness.runners.interface import ProbeRun
from harness.runners.local import LocalRunner
from tests.bandwidth_fixtures import h200_copy_sweep
from tests.bundle_support import quiet_display
from tests.h200_capture import document as health_document
from tests.h200_capture import nvidia_smi_xml

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "accept"
H200_L2_BYTES = 60 * 2**20  # torch L2_cache_size on the lent H200 (h200-baseline.md)
H200_MEMORY_MIB = 143771.0  # NVML total on the lent H200 (nvidia-smi-query.csv)
# The lowest per-copy time the baseline records (4 MiB copy, "launch-bound: ~9.5 us"): it stands in
# for the empty-launch time the baseline did not record (an upper bound on it).
H200_LAUNCH_FLOOR_S = 9.5e-6
# The baseline's large-buffer torch copy medians (1, 4 and 8 GiB, median of 3 each): the three
# closest recorded figures to the probe's three repeats.
H200_REPEAT_SIZES_MIB = (1024.0, 4096.0, 8192.0)
STARTED, FINISHED = "2026-11-29T14:22:05.000000Z", "2026-11-29T14:22:13.000000Z"


# --- documents ------------------------------------------------------------------------------


def _point(size_mib: float, gbps: float) -> dict[str, Any]:
    """A sweep point as the probe records it, its one time being the recorded median (bytes / GB/s)."""
    elements = int(size_mib * 2**20) // bandwidth_probe.ELEMENT_BYTES
    nbytes = bw.bytes_per_iteration("copy", elements * bandwidth_probe.ELEMENT_BYTES)
    return bandwidth_probe.point_record(
        size_mib, elements, "copy", [nbytes / (gbps * 1e9)], H200_L2_BYTES, H200_LAUNCH_FLOOR_S
    )


def h200_bandwidth(
    repeat_scale: tuple[float, float, float] = (1.0, 1.0, 1.0), scale: float = 1.0, sku_id: str = "h200-sxm-141gb"
) -> dict[str, Any]:
    """bandwidth.json for the H200 from the baseline's copy sweep, built by the probe's own code.

    REPEAT_SCALE multiplies each repeat's recorded GB/s (a fail path slows one repeat); SCALE every
    figure (a fail path: a card slower than the known-good one).
    """
    sweep_values = {size: gbps * scale for size, gbps in h200_copy_sweep()}
    sweep = [_point(size, gbps) for size, gbps in sorted(sweep_values.items())]
    runs = [
        _point(size, sweep_values[size] * scale)
        for size, scale in zip(H200_REPEAT_SIZES_MIB, repeat_scale, strict=True)
    ]
    medians = [r["median_gbps"] for r in runs]
    spread = bw.spread(medians)
    agree = bw.repeats_agree(spread)
    repeats = {
        "size_mib": max(H200_REPEAT_SIZES_MIB),
        "count": 3,
        "runs": runs,
        "medians_gbps": medians,
        "spread": spread,
        "spread_max": bw.REPEAT_SPREAD_MAX,
        "verdict": "pass" if agree else "fail",
        "trusted": agree,
        "telemetry": {
            "repeat_index": 1,
            "interval_s": 0.05,
            "samples": {"unavailable": "not recorded with the baseline figures"},
            "own_pids": [1],
            "own_pids_how": "no telemetry",
        },
        "diagnosis": None
        if agree
        else {"causes": [], "summary": "no telemetry to diagnose from (not recorded with the baseline figures)"},
    }
    identity = {
        "pci_device_id": "0x233510de",
        "memory_total_mib": H200_MEMORY_MIB,
        "power_limit_w": 700.0,
        "sku_id": sku_id,
        "evidence": "recorded: PCI device id 0x2335, 143771 MiB, 700 W (h200-baseline.md)",
        "nvml_handle": "recorded",
    }
    args = SimpleNamespace(spec_gbps=None, compare_sku=None, repeats=3, kernel="copy", device_index=0)
    measurement = bandwidth_probe.Measurement(SimpleNamespace(__version__="2.11.0+cu130"), "cuda", args, None)
    facts = {
        "name": "NVIDIA H200",
        "total": H200_MEMORY_MIB * 2**20,
        "free": (H200_MEMORY_MIB - 600) * 2**20,
        "where": "cuda:0",
        "torch_threads": 16,
        "cache": {
            "level": "L2",
            "size_bytes": H200_L2_BYTES,
            "size_mib": 60.0,
            "source": "torch.cuda.get_device_properties(0).L2_cache_size (h200-baseline.md)",
        },
    }
    data = {"initialisation": "recorded figures (h200-baseline.md)", "seed": 0, "scalar": 1.0}
    document = measurement.document(
        facts,
        sorted(sweep_values),
        sweep,
        repeats,
        identity,
        H200_LAUNCH_FLOOR_S,
        data,
        0.3,
        1.0,
        bandwidth_probe.largest_safe_mib(facts["free"]),
    )
    document["launch"]["empty_launch_times_s"] = [H200_LAUNCH_FLOOR_S]  # the one stood-in time (see above)
    return {
        "probe": "bandwidth",
        "contract_version": CONTRACT_VERSION,
        "started_at": STARTED,
        "finished_at": FINISHED,
        "argv": ["--repeats", "3"],
        **document,
    }


def h200_health(edit_idle=None, edit_load=None, load_pids=None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(idle, under load) health.json from the nvidia-smi -q captures (bf16 GEMM load, SW power cap).

    EDIT_IDLE / EDIT_LOAD change recorded NVML answers (a fail path changes one fact) before the
    probe's own code builds the document, so its contracts and SKU stay consistent. LOAD_PIDS
    declares which pids the harness started (default: the pid NVML recorded for the load).
    """
    idle, load = nvidia_smi_xml("nvidia-smi-q.idle.xml"), nvidia_smi_xml("nvidia-smi-q.load.xml")
    for nvml, edit in ((idle, edit_idle), (load, edit_load)):
        if edit:
            edit(nvml.answers)
    recorded = [p.pid for p in load.answers["nvmlDeviceGetComputeRunningProcesses"]]
    pids = recorded if load_pids is None else load_pids
    return health_document(idle, [os.getpid()]), health_document(load, pids, "under_load", load_pids=pids)


def by_args(answers: dict[str, Any], call: str, args: tuple, value: Any) -> None:
    """Replace one recorded answer of a call that depends on its arguments."""
    table = type(answers[call])(answers[call])
    table[args] = value
    answers[call] = table


# --- real GEMM and all-reduce documents from the committed H200 bundles ------------------------

H200_BUNDLE = FIXTURES.parent / "h200" / "dossier-h200.tar.gz"  # the lent H200 SXM, `dossier run`
H200X2_ALLREDUCE = FIXTURES.parent / "h200x2" / "allreduce.json"  # two NVLink H200s (tests/fixtures/README.md)


def h200_raw(step: str) -> dict[str, Any]:
    """raw/STEP.json of the signed dossier made on the lent H200 SXM (tests/fixtures/h200/)."""
    with tarfile.open(H200_BUNDLE) as tar:
        return json.load(tar.extractfile(f"raw/{step}.json"))


def h200x2_allreduce() -> dict[str, Any]:
    """The all-reduce probe's document from two NVLink-connected H200s (NCCL, world size 2)."""
    return json.loads(H200X2_ALLREDUCE.read_text())


# --- records and bundles --------------------------------------------------------------------


def _run(step: str, probe: str, document: dict[str, Any]) -> ProbeRun:
    return ProbeRun(
        probe=probe,
        argv=("python", "-m", f"harness.probes.{probe}", *document.get("argv", [])),
        env={},
        runner="recorded",
        image=None,
        started_at=STARTED,
        finished_at=FINISHED,
        exit_code=0,
        timed_out=False,
        stdout=(json.dumps(document, allow_nan=False, sort_keys=True) + "\n").encode(),
        stderr=b"",
    )


def _base(step) -> dict[str, Any]:
    common = dict(
        step=step.step,
        title=step.title,
        lab_step=step.lab_step,
        kind=step.kind,
        schema=step.schema,
        analysis=step.analysis,
        plots=None,
    )
    if isinstance(step, ProbeStep):
        common["probe"] = step.probe
    else:
        common.update(needs=step.needs, function=step.function)
    return common


def record(documents: dict[str, dict[str, Any]]) -> RunRecord:
    """A RunRecord of the lab plan: STEP -> document completes a probe step; the rest are not run."""
    steps = []
    for step in LAB_PLAN:
        if isinstance(step, HostStep):
            if all(need in documents for need in step.needs):
                document = diff(*(documents[need] for need in step.needs))
                steps.append(StepRecord(**_base(step), status=COMPLETED, document=json.loads(json.dumps(document))))
            else:
                steps.append(StepRecord(**_base(step), status=NOT_RUN, why="needs documents this test left out"))
        elif step.step in documents:
            document = documents[step.step]
            steps.append(
                StepRecord(
                    **_base(step), status=COMPLETED, run=_run(step.step, step.probe, document), document=document
                )
            )
        else:
            steps.append(
                StepRecord(
                    **_base(step),
                    status=NOT_RUN,
                    why=f"no recorded {step.step} document from the H200 yet (lead adds it later)",
                )
            )
    return RunRecord(
        steps=tuple(steps),
        runner={"name": "recorded", "why": "documents built from H200 captures"},
        tool=tool_info(),
        host=host_environment(),
        options={"runner": "auto", "skip": []},
        started_at=STARTED,
        finished_at=FINISHED,
    )


def h200_documents(**health_edits) -> dict[str, dict[str, Any]]:
    idle, load = h200_health(**health_edits)
    return {"health": idle, "bandwidth": h200_bandwidth(), "health-load": load}


def view_of(documents: dict[str, dict[str, Any]]) -> BundleView:
    """The view `dossier accept` would judge, without signing or archiving (fast path for criteria)."""
    return BundleView.from_files(unsigned_files(record(documents)), registry.analysis_module)


def write_bundle(path: Path, documents: dict[str, dict[str, Any]], key) -> Path:
    path.write_bytes(assemble(record(documents), key))
    return path


def small_cpu_plan() -> tuple:
    """The lab plan with the bandwidth sweep sized down to seconds on this 2-core machine."""
    small = StepArgs(("--repeats", "3", "--size-mib", "1", "4", "16", "--point-budget-s", "0.05"))
    return tuple(
        dataclasses.replace(s, arguments=lambda state, small=small: small) if s.step == "bandwidth" else s
        for s in LAB_PLAN
    )


def cpu_dossier(path: Path, key) -> Path:
    """A real dossier of this machine; roofline (27 s here) and precision (a checkpoint download)
    are skipped for time and recorded as skipped, as `dossier run --skip` does."""
    plan = small_cpu_plan()
    runner = LocalRunner()
    path.parent.mkdir(parents=True, exist_ok=True)
    rec = collect(
        RunOptions(output_dir=path.parent, skip=("roofline", "precision")),
        runner,
        "tests: this machine's CPU",
        plan,
        display=quiet_display(len(plan)),
    )
    path.write_bytes(assemble(rec, key))
    return path


def recorded_cpu(name: str) -> dict[str, Any]:
    """A real probe output recorded on this project's CPU VM (tests/fixtures/accept/)."""
    return json.loads((FIXTURES / name).read_text())


def resolve(sku_id: str, profile_file: Path | None = None):
    """The profile `dossier accept --profile SKU_ID [--profile-file F]` judges with."""
    return profile.resolve(sku_id, profile_file, registry.known_good_kinds())


def apply_file(base, document: dict[str, Any], where: str):
    return profile.apply_file(base, document, where, registry.known_good_kinds())
