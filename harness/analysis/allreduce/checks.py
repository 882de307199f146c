"""Every figure an all-reduce document states, against its recomputation. Standard library only.

The raw data are each point's per-call times of every rank (`rank_times_us`, contract 2 on), the
buffer sizes, the world sizes, the NCCL log lines each run recorded and the topology evidence.
Each rank's median, the point's time, algbw and busbw, each curve's fit, plateau and end figure,
the ring prediction and comparison, the normal-versus-control explanations and the NVLS record are
recomputed and compared. A contract 1 document kept only the per-rank medians: those are taken as
stated (and `headlines` says they were not recomputable from per-call times).
"""

from __future__ import annotations

import math
from typing import Any

from harness.analysis.allreduce import evidence
from harness.analysis.allreduce import figures as ar

ELEMENT_BYTES = {"float32": 4}


def differs(stated: Any, recomputed: Any) -> bool:
    """A stated value against its recomputation: numbers within REL_TOL, containers member by member."""
    if isinstance(stated, dict) and set(stated) == {"unavailable"}:
        return recomputed is not None and not (isinstance(recomputed, dict) and set(recomputed) == {"unavailable"})
    if stated is None or recomputed is None:
        return stated != recomputed
    if isinstance(stated, bool) or isinstance(recomputed, bool):
        return stated is not recomputed
    if isinstance(stated, int) and isinstance(recomputed, int):  # byte counts: exact
        return stated != recomputed
    if isinstance(stated, (int, float)) and isinstance(recomputed, (int, float)):
        return not math.isclose(stated, recomputed, rel_tol=ar.REL_TOL, abs_tol=1e-12)
    if isinstance(stated, dict) and isinstance(recomputed, dict):
        return stated.keys() != recomputed.keys() or any(differs(stated[k], recomputed[k]) for k in stated)
    if isinstance(stated, list) and isinstance(recomputed, list):
        return len(stated) != len(recomputed) or any(differs(a, b) for a, b in zip(stated, recomputed, strict=True))
    return stated != recomputed


def point_discrepancies(point: dict[str, Any], world_size: int, label: str, element_bytes: int) -> list[str]:
    """One size: the per-rank medians from the per-call times, the call counts, the derived rates."""
    where, found = f"{label} {point['bytes']} B", []
    if point.get("elements") != point["bytes"] // element_bytes:
        found.append(
            f"{where} elements: stated {point.get('elements')}, {point['bytes']} B holds "
            f"{point['bytes'] // element_bytes}"
        )
    times = point.get("rank_times_us")
    if isinstance(times, list):
        if len(times) != world_size or any(len(t) != point.get("iterations") for t in times):
            found.append(
                f"{where} rank_times_us: {len(times)} rank(s) of {[len(t) for t in times]} calls, but "
                f"world size {world_size} and {point.get('iterations')} iterations"
            )
        medians = ar.rank_medians_us(point)
        if differs(point.get("rank_median_time_us"), medians):
            found.append(
                f"{where} rank_median_time_us: stated {point.get('rank_median_time_us')}, the medians "
                f"of rank_times_us are {medians}"
            )
    elif len(point.get("rank_median_time_us") or []) != world_size:
        found.append(
            f"{where} rank_median_time_us: {len(point.get('rank_median_time_us') or [])} rank(s) at "
            f"world size {world_size}"
        )
    for key, value in ar.point_figures(point, world_size).items():
        if differs(point.get(key), value):
            found.append(f"{where} {key}: stated {point.get(key)}, recomputed {value}")
    return found


def run_discrepancies(run: dict[str, Any], element_bytes: int) -> list[str]:
    """One curve: its points, fit, plateau, end figure and status."""
    label, found = f"runs[{run['curve']} n={run['world_size']}]", []
    for point in run.get("points", []):
        found += point_discrepancies(point, run["world_size"], label, element_bytes)
    figures = ar.curve_figures(run)
    fit = run.get("fit")
    if isinstance(fit, dict) and "unavailable" not in fit:
        for key, recomputed in (
            ("knee_bytes", "knee_bytes"),
            ("alpha_us", "alpha_us"),
            ("beta_gbps", "beta_gbps"),
            ("beta_bus_gbps", "beta_bus_gbps"),
            ("rel_rms_residual", "fit_rel_rms_residual"),
        ):
            if differs(fit.get(key), figures[recomputed]):
                found.append(f"{label} fit {key}: stated {fit.get(key)}, recomputed {figures[recomputed]}")
    elif figures["knee_bytes"] is not None and run.get("points"):
        found.append(f"{label} fit: stated unavailable, but recomputation gives a knee at {figures['knee_bytes']}")
    half = run.get("half_plateau")
    if isinstance(half, dict) and "unavailable" not in half:
        for key in ("half_plateau_bytes", "plateau_busbw_gbps", "plateau_sizes_bytes"):
            if differs(half.get(key), figures[key]):
                found.append(f"{label} half_plateau {key}: stated {half.get(key)}, recomputed {figures[key]}")
    elif figures["half_plateau_bytes"] is not None:
        found.append(
            f"{label} half_plateau: stated unavailable, but recomputation gives {figures['half_plateau_bytes']}"
        )
    if run.get("points") and differs(run.get("busbw_at_max_gbps"), figures["busbw_at_max_gbps"]):
        found.append(
            f"{label} busbw_at_max_gbps: stated {run.get('busbw_at_max_gbps')}, "
            f"recomputed {figures['busbw_at_max_gbps']}"
        )
    if run.get("status") != ("failed" if run.get("failure") else "completed"):
        found.append(f"{label} status {run.get('status')!r} but failure is {run.get('failure')!r}")
    return found


def prediction_discrepancies(document: dict[str, Any]) -> list[str]:
    prediction, runs = document.get("prediction"), document.get("runs", [])
    if not isinstance(prediction, dict):
        comparison = document.get("ring_comparison")
        if not (isinstance(comparison, dict) and set(comparison) == {"unavailable"}):
            return ["ring_comparison: stated, but the document has no prediction to compare with"]
        return []
    found = []
    expected = ar.ring_prediction([int(n) for n in prediction["multipliers"]])
    for key in ("multipliers", "predicted_algbw_ratio", "predicted_busbw_ratio"):
        for n, value in expected[key].items():
            if differs(prediction.get(key, {}).get(n), value):
                found.append(f"prediction {key}[{n}]: stated {prediction.get(key, {}).get(n)}, formula gives {value}")
    if differs(prediction.get("baseline_world_size"), expected["baseline_world_size"]):
        found.append(
            f"prediction baseline_world_size: stated {prediction.get('baseline_world_size')}, "
            f"formula gives {expected['baseline_world_size']}"
        )
    starts = [r["started_at"] for r in runs if r.get("started_at")]
    if starts and prediction.get("written_at", "") >= min(starts):
        found.append(
            f"prediction written at {prediction.get('written_at')}, not before the first run started ({min(starts)})"
        )
    comparison = ar.ring_comparison(prediction, runs)
    if differs(document.get("ring_comparison"), comparison):
        found.append(f"ring_comparison: stated {document.get('ring_comparison')}, recomputed {comparison}")
    return found


def evidence_discrepancies(document: dict[str, Any]) -> list[str]:
    """The explanations and the NVLS record rebuilt from the runs and the topology evidence."""
    found, runs = [], document.get("runs", [])
    stated = document.get("explanations") or {}
    again = evidence.explanations(runs, document.get("topology") or {})
    for world in sorted(set(stated) | set(again)):
        for key in sorted(set(stated.get(world) or {}) | set(again.get(world) or {})):
            if differs((stated.get(world) or {}).get(key), (again.get(world) or {}).get(key)):
                found.append(
                    f"explanations[{world}].{key}: differs from the recomputation from the runs and "
                    f"topology ({(again.get(world) or {}).get(key)!r})"
                )
    nvls = document.get("nvls") or {}
    record = evidence.nvls_record(runs, {})
    for key in ("nvls_algorithm_seen", "nccl_reported"):
        if differs(nvls.get(key), record[key]):
            found.append(f"nvls.{key}: stated {nvls.get(key)!r}, the runs' NCCL logs give {record[key]!r}")
    return found


def sweep_discrepancies(document: dict[str, Any]) -> list[str]:
    found, sizes, worlds = [], set(document.get("sizes_bytes") or []), set(document.get("world_sizes") or [])
    if len(worlds) != len(document.get("world_sizes") or []) or len(sizes) != len(document.get("sizes_bytes") or []):
        found.append("world_sizes or sizes_bytes name one value twice")
    curves = [(run.get("curve"), run.get("world_size")) for run in document.get("runs", [])]
    if len(curves) != len(set(curves)):
        found.append("runs: a curve at one world size appears twice")
    for run in document.get("runs", []):
        measured = [p["bytes"] for p in run.get("points", [])]
        if measured != sorted(set(measured)):
            found.append(f"runs[{run['curve']} n={run['world_size']}]: points not in increasing size, each once")
        extra = sorted({p["bytes"] for p in run.get("points", [])} - sizes)
        if extra:
            found.append(f"runs[{run['curve']} n={run['world_size']}]: points at {extra} B, not in sizes_bytes")
        if run["world_size"] not in worlds:
            found.append(f"runs[{run['curve']} n={run['world_size']}]: world size not in world_sizes {sorted(worlds)}")
    return found


def discrepancies(document: dict[str, Any]) -> list[str]:
    """Where the document's stated figures differ from the recomputation from per-call times."""
    dtype = document.get("dtype")
    element_bytes = ELEMENT_BYTES[dtype] if dtype in ELEMENT_BYTES else 4
    found = sweep_discrepancies(document)
    for run in document.get("runs", []):
        found += run_discrepancies(run, element_bytes)
    return found + prediction_discrepancies(document) + evidence_discrepancies(document)
