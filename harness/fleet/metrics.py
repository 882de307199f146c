"""The figures compared across nodes, read from one node's verified raw JSON.

Rates come from each probe's own `harness.analysis.PROBE.headlines` (recomputed from the raw
measured data, as `dossier verify` does), never from a probe's stated summary. A metric a node
did not measure is `{"unavailable": why}`, never a default.
"""

from __future__ import annotations

import importlib
import statistics
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from harness.probes.contract import describe_exception, unavailable


def _sustained_bandwidth(heads: Mapping[str, Any]) -> Any:
    """The median of the three repeat medians: the sustained figure the roofline is fed too.

    Not the plateau: a CPU sweep may find none, while the repeats are always measured.
    """
    if heads.get("repeat_median_gbps") is not None:
        return heads["repeat_median_gbps"]
    medians = heads.get("repeat_medians_gbps") or []
    return statistics.median(medians) if medians else None


@dataclass(frozen=True)
class RateMetric:
    """One rate compared across nodes: which probe's headlines, what is read from them, its unit."""

    name: str
    probe: str
    unit: str
    description: str
    read: Callable[[Mapping[str, Any]], Any]


RATE_METRICS = (
    RateMetric("bandwidth_sustained_gbps", "bandwidth", "GB/s",
               "sustained memory bandwidth (median of the three repeat medians)", _sustained_bandwidth),
    RateMetric("gemm_best_tflops", "roofline", "TFLOP/s",
               "best measured GEMM rate over the roofline's shapes", lambda heads: heads.get("best_tflops")),
)


def headline(raw: Mapping[str, Any], metric: RateMetric) -> Any:
    """The metric's value for one node, or why it has none."""
    document = raw.get(metric.probe)
    if document is None:
        return unavailable(f"{metric.probe} did not run on this node (no raw/{metric.probe}.json)")
    try:
        analysis = importlib.import_module(f"harness.analysis.{metric.probe}")
    except ModuleNotFoundError:
        return unavailable(f"harness.analysis.{metric.probe} is not part of this build")
    try:
        value = metric.read(analysis.headlines(document))
    except Exception as exc:  # noqa: BLE001 - a bad document is recorded, not fatal to the fleet
        return unavailable(f"{metric.probe} headlines could not be recomputed: {describe_exception(exc)}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return value if isinstance(value, dict) and "unavailable" in value else unavailable(
        f"{metric.probe} measured no {metric.description} ({value!r})")


def _leaves(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict) and "unavailable" not in node:
        for key, value in node.items():
            yield from _leaves(value, f"{path}.{key}".lower())
    else:
        yield path, node


def _device_counter(device: Mapping[str, Any], *words: str, without: str = "\0") -> int | None:
    """The largest count in a device's fields whose name has all `words` (aggregate >= volatile).

    A flag (NVML's row-remap "pending"/"failure" are booleans) counts as 0 or 1.
    """
    counts = [int(v) for path, v in _leaves(device)
              if all(w in path for w in words) and without not in path and isinstance(v, int)]
    return max(counts) if counts else None


def _device_mode(device: Mapping[str, Any]) -> str | None:
    modes = [str(v) for path, v in _leaves(device) if "ecc" in path and "mode" in path
             and isinstance(v, (str, bool)) and "pending" not in path]
    return modes[0] if modes else None


def ecc_state(health: Mapping[str, Any] | None) -> Any:
    """A node's ECC state summed over its devices: mode and the counters that must be zero.

    The health probe's fields (devices[i].ecc: mode_current, volatile_/aggregate_uncorrected_errors,
    remapped_rows_pending/_failure) are found by the words in their names (a path with "ecc" and
    "uncorrect" but not "remap"; "remap" with "pending" or "fail"), so a renamed field is still
    read; a node whose health document has none of them is unavailable, with that reason.
    """
    if health is None:
        return unavailable("health did not run on this node (no raw/health.json)")
    listed = health.get("devices", [])
    if isinstance(listed, dict) and "unavailable" in listed:
        return unavailable(f"health could not list devices: {listed['unavailable']}")
    devices = [d for d in listed if isinstance(d, dict)]
    if not devices:
        return unavailable("health lists no GPU device: no ECC state to compare (CPU-only node)")
    per_device = [{"uncorrectable_errors": _device_counter(d, "ecc", "uncorrect", without="remap"),
                   "pending_row_remaps": _device_counter(d, "remap", "pending"),
                   "failed_row_remaps": _device_counter(d, "remap", "fail"),
                   "mode": _device_mode(d)} for d in devices]
    if all(d["uncorrectable_errors"] is None and d["mode"] is None for d in per_device):
        return unavailable("health reports no ECC field for any device (NVML did not answer)")
    state: dict[str, Any] = {}
    for counter in ("uncorrectable_errors", "pending_row_remaps", "failed_row_remaps"):
        counts = [d[counter] for d in per_device if d[counter] is not None]
        state[counter] = sum(counts) if counts else unavailable(f"no device reports {counter.replace('_', ' ')}")
    modes = sorted({d["mode"] for d in per_device if d["mode"] is not None})
    state["mode"] = ",".join(modes) if modes else None
    return state


def node_metrics(raw: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Every compared figure for one node, from its raw documents keyed by probe name."""
    metrics: dict[str, Any] = {m.name: headline(raw, m) for m in RATE_METRICS}
    metrics["ecc"] = ecc_state(raw.get("health"))
    return metrics
