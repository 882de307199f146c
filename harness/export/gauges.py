"""What each command exports for Prometheus (harness/export/textfile.py writes it): `dossier check`'s
verdicts and the GPU facts it judged, a `dossier run` bundle's figures, `dossier accept`'s criteria
and `dossier fleet collect`'s nodes. Every value comes from the command's own result; nothing is
measured here."""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from typing import Any

from harness.analysis.actions import ORDER
from harness.analysis.units import number_or_none
from harness.analysis.verdict import Verdict
from harness.check import xid
from harness.export.textfile import PREFIX, Metrics, in_base_unit

CHECK_VERDICTS = ("pass", "warn", "fail", "incomplete")
FINDING_VERDICTS = (*CHECK_VERDICTS, "skip")
ACTIONS = tuple(str(a) for a in ORDER)


def _epoch(timestamp: str) -> float:
    return _dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def check(result: dict[str, Any]) -> Metrics:
    """`dossier check`: the node's verdict, each check's, and the facts per GPU (labels node, gpu, sku)."""
    metrics, node = Metrics(), {"node": result["node"]}
    metrics.one_hot(
        PREFIX + "check_verdict",
        "dossier check's verdict for the node (1 on the verdict reached)",
        node,
        "verdict",
        result["verdict"],
        CHECK_VERDICTS,
    )
    for finding in result["checks"]:
        metrics.one_hot(
            PREFIX + "check_result",
            "each check's verdict (1 on the verdict reached)",
            {**node, "check": finding["name"]},
            "verdict",
            finding["verdict"],
            FINDING_VERDICTS,
        )
        if finding["verdict"] == Verdict.FAIL:
            metrics.one_hot(
                PREFIX + "check_action",
                "each failed check's recommended action (1 on it, the rule that chose it as a label)",
                {**node, "check": finding["name"], "rule": finding["action"]["rule"]},
                "action",
                finding["action"]["action"],
                ACTIONS,
            )
    recommended(metrics, "check", node, result["recommendation"])
    reading = result["reading"]
    metrics.set(
        PREFIX + "check_timestamp_seconds", "when the reading was taken (Unix time)", node, _epoch(reading["taken_at"])
    )
    if number_or_none(reading.get("read_seconds")) is not None:
        metrics.set(PREFIX + "check_read_seconds", "how long the reading took", node, reading["read_seconds"])
    if isinstance(reading["devices"], list):
        metrics.set(PREFIX + "check_gpus", "GPUs NVML lists", node, len(reading["devices"]))
        for device in reading["devices"]:
            _gpu_facts(metrics, node, device)
    expected = result["expectation"]["gpus"]
    if expected is not None:
        metrics.set(PREFIX + "check_gpus_expected", "GPUs the node should have (--expect-gpus)", node, expected)
    log = reading["kernel_log"]
    if isinstance(log, dict) and "lines" in log:
        fatal = set(result["rules"]["fatal_xids"])
        for number, count in sorted(Counter(e.xid for e in xid.parse(log["lines"])).items()):
            metrics.set(
                PREFIX + "check_xid_events",
                "XID lines in the kernel log's ring buffer (since boot)",
                {**node, "xid": str(number), "fatal": str(number in fatal).lower()},
                count,
            )
    return metrics


GPU_FIGURES = (  # (name, help, path into health.json's device facts)
    ("gpu_pcie_link_width_lanes", "PCIe link width now", ("pcie", "current_width")),
    ("gpu_pcie_link_max_width_lanes", "PCIe link width at most", ("pcie", "max_width")),
    ("gpu_pcie_link_generation", "PCIe link generation now", ("pcie", "current_gen")),
    ("gpu_pcie_link_max_generation", "PCIe link generation at most", ("pcie", "max_gen")),
    (
        "gpu_ecc_uncorrected_volatile_errors",
        "uncorrectable ECC errors since the driver loaded",
        ("ecc", "volatile_uncorrected_errors"),
    ),
    (
        "gpu_ecc_uncorrected_aggregate_errors",
        "uncorrectable ECC errors over the GPU's life",
        ("ecc", "aggregate_uncorrected_errors"),
    ),
    ("gpu_remapped_rows_pending", "1 when a row remap waits for a GPU reset", ("ecc", "remapped_rows_pending")),
    ("gpu_remapped_rows_failure", "1 when a row remap failed", ("ecc", "remapped_rows_failure")),
    ("gpu_clock_event_reasons_mask", "NVML clock-event reasons bit mask", ("clock_event_reasons", "mask")),
)


def _gpu_facts(metrics: Metrics, node: dict[str, str], device: dict[str, Any]) -> None:
    sku = (device.get("sku") or {}).get("id") or "unknown"
    labels = {**node, "gpu": str(device.get("nvml_index")), "sku": sku}
    for name, help_text, (section, key) in GPU_FIGURES:
        value = (device.get(section) or {}).get(key)
        value = float(value) if isinstance(value, bool) else number_or_none(value)
        if value is not None:
            metrics.set(PREFIX + name, help_text, labels, value)
    links = device.get("nvlink")
    if isinstance(links, list):
        metrics.set(
            PREFIX + "gpu_nvlink_links_down",
            "NVLink links not active",
            labels,
            sum(1 for link in links if not link.get("active")),
        )


def figures(
    metrics: Metrics, labels: dict[str, str], values: dict[str, Any], table: dict[str, dict[str, Any]], what: str
) -> None:
    """A node's compared figures (the registry's fleet metrics), each in its base unit; a state as a
    1-valued gauge labelled with the state."""
    for name, value in values.items():
        unit = table[name]["unit"]
        if isinstance(value, str):
            metrics.set(
                PREFIX + name + "_info", f"{table[name]['description']} ({what})", {**labels, "value": value}, 1
            )
        elif number_or_none(value) is not None:
            metric, scaled = in_base_unit(name, unit, value)
            metrics.set(metric, f"{table[name]['description']} ({what}; from {unit})", labels, scaled)


def verdict_values() -> tuple[str, ...]:
    return tuple(str(v) for v in Verdict)


NODE_STATUSES = ("ok", "failed", "rejected")


def fleet(document: dict[str, Any]) -> Metrics:
    """`dossier fleet collect` / `fleet merge`: each node's status, acceptance and flags, the counts, and
    each rate's median per SKU in its base unit (labels job, node, sku)."""
    metrics, job = Metrics(), {"job": document["job"]["id"]}
    counts = Counter(n["status"] for n in document["nodes"])
    for status in NODE_STATUSES:
        metrics.set(
            PREFIX + "fleet_nodes", "nodes of the fleet job by status", {**job, "status": status}, counts[status]
        )
    flagged = Counter(f["node"] for f in document["flags"])
    for node in document["nodes"]:
        labels = {**job, "node": node["name"], "sku": node.get("sku") or "none"}
        metrics.one_hot(
            PREFIX + "fleet_node_status",
            "the node's status in the collect (1 on its status)",
            labels,
            "status",
            node["status"],
            NODE_STATUSES,
        )
        metrics.one_hot(
            PREFIX + "fleet_node_acceptance",
            "dossier accept's verdict on the node (1 on it)",
            labels,
            "verdict",
            str(node["acceptance"]["verdict"]),
            verdict_values(),
        )
        metrics.set(
            PREFIX + "fleet_node_flagged_metrics",
            "metrics on which the node stands apart from its SKU",
            labels,
            flagged[node["name"]],
        )
        if "recommendation" in node:
            recommended(metrics, "fleet_node", labels, node["recommendation"])
    for name, entry in document["table"].items():
        if entry["kind"] != "rate":
            continue
        unit = document["metrics"][name]["unit"]
        for sku, group in entry["groups"].items():
            if group.get("median") is not None:
                metric, value = in_base_unit(name, unit, group["median"])
                metrics.set(
                    PREFIX + "fleet_" + metric.removeprefix(PREFIX) + "_median",
                    f"the fleet's median {document['metrics'][name]['description']} (from {unit})",
                    {**job, "sku": sku},
                    value,
                )
    return metrics


STEP_STATUSES = ("completed", "failed", "not_run")


def _host(view: Any) -> str:
    host = view.environment.get("host") if isinstance(view.environment, dict) else None
    name = host.get("hostname") if isinstance(host, dict) else None
    return name if isinstance(name, str) else "unknown"


def run(view: Any) -> Metrics:
    """`dossier run`: the verdict's recommended action, each step's status and the bundle's compared figures
    (the fleet's, recomputed from the raw documents as `dossier fleet collect` reads them), each in its base
    unit."""
    from harness.fleet.metrics import metric_table, node_metrics, node_skus
    from harness.present.verdict import run_verdict

    metrics = Metrics()
    labels = {"node": _host(view), "sku": "+".join(node_skus(view)) or "none"}
    recommended(metrics, "run", labels, run_verdict(view).recommendation.to_json())
    for entry in view.steps:
        metrics.one_hot(
            PREFIX + "run_step_status",
            "each dossier step's outcome (1 on it)",
            {**labels, "step": entry["step"]},
            "status",
            entry["status"],
            STEP_STATUSES,
        )
    figures(metrics, labels, node_metrics(view), metric_table(), "dossier run")
    return metrics


def accept(acceptance: Any, view: Any) -> Metrics:
    """`dossier accept`: the overall result and each criterion's verdict (1 on the one reached)."""
    metrics = Metrics()
    labels = {"node": _host(view), "profile": acceptance.profile.sku_id}
    metrics.one_hot(
        PREFIX + "accept_result",
        "dossier accept's overall verdict (1 on it)",
        labels,
        "verdict",
        str(acceptance.result),
        CHECK_VERDICTS,
    )
    for result in acceptance.results:
        metrics.one_hot(
            PREFIX + "accept_criterion",
            "each acceptance criterion's verdict (1 on it)",
            {**labels, "criterion": result.name},
            "verdict",
            str(result.status),
            verdict_values(),
        )
    recommended(metrics, "accept", labels, acceptance.recommendation.to_json())
    return metrics


def recommended(metrics: Metrics, what: str, labels: dict[str, str], recommendation: dict[str, str]) -> None:
    """WHAT's recommended action (1 on it, the rule that chose it as a label): what to do now."""
    metrics.one_hot(
        PREFIX + f"{what}_recommended_action",
        f"the recommended action of {what.replace('_', ' ')}, the most severe of its failed findings' (1 on it)",
        {**labels, "rule": recommendation["rule"]},
        "action",
        recommendation["action"],
        ACTIONS,
    )
