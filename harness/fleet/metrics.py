"""The figures compared across nodes, read from one node's verified raw JSON.

The rates are the registry entries' fleet_metrics, read from each probe's own recomputed
headlines (its harness.analysis module, as `dossier verify` does), never from a probe's stated
summary. A metric a node
did not measure is `{"unavailable": why}`, never a default.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from harness import registry
from harness.probes.contract import describe_exception, unavailable
from harness.registry.spec import FleetMetric


def headline(raw: Mapping[str, Any], probe: str, metric: FleetMetric) -> Any:
    """The metric's value for one node, or why it has none."""
    document = raw.get(probe)
    if document is None:
        return unavailable(f"{probe} did not run on this node (no raw/{probe}.json)")
    try:
        value = metric.read(registry.analysis_module(registry.spec(probe).analysis).headlines(document))
    except Exception as exc:  # noqa: BLE001 - a bad document is recorded, not fatal to the fleet
        return unavailable(f"{probe} headlines could not be recomputed: {describe_exception(exc)}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return value if isinstance(value, dict) and "unavailable" in value else unavailable(
        f"{probe} measured no {metric.description} ({value!r})")


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
    metrics: dict[str, Any] = {m.name: headline(raw, probe, m) for probe, m in registry.fleet_metrics()}
    metrics["ecc"] = ecc_state(raw.get("health"))
    return metrics
