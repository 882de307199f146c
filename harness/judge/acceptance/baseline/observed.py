"""What a baseline's input bundles say of the configuration and of the result digests.

Configuration (thresholds.config, judged by harness.judge.acceptance.config): the lowest driver and
CUDA version among the inputs is the minimum (a golden unit's software is known good, older is
not known); persistence, MIG, the power limit, the application clocks and the NVLink link count are
expected as every GPU of every input had them, and left unstated (not judged) where the inputs
disagree or could not read them, with a note saying so.

Digests (profile digests): the stress reference digest per dtype, shape, seed and library build,
and the precision output digest per tensor and format, each the quorum's choice over every GPU of
every input (harness.analysis.digests.quorum); a GPU outside it is noted, a tie gives no digest.

Each input is read once, by `observe`, into the little these need (its health document's software
and devices, its digests): a fleet's thousand inputs are never held at once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.analysis.digests import quorum, short, stress_conditions
from harness.analysis.health.contract_facts import gpus
from harness.analysis.units import unavailable_reason
from harness.judge.acceptance.config import version_key
from harness.judge.acceptance.digests import precision_digests, stress_digests
from harness.judge.facts import BundleFacts

HEALTH_KEYS = ("software", "devices")  # what the configuration is read from


@dataclass(frozen=True)
class Observed:
    """What one input says of its configuration and its result digests (plain data)."""

    health: dict[str, Any] | None  # its health document's HEALTH_KEYS; None without a health document
    stress: dict[str, dict[str, Any]] = field(default_factory=dict)  # GPU -> stress reference digest record
    precision: dict[tuple[str, str], str] = field(default_factory=dict)  # (tensor, format) -> output digest


def observe(facts: BundleFacts) -> Observed:
    """One input read for config_expectations and expected_digests."""
    document = facts.document("health")
    health = None if document is None else {k: document[k] for k in HEALTH_KEYS if k in document}
    stress, _ = stress_digests(facts)
    outputs = facts.document("precision")
    precision = {key: digest for key, (digest, _) in (precision_digests(outputs) if outputs else {}).items()}
    return Observed(health, dict(stress or {}), precision)


def _all_gpus(documents: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [device for document in documents for device in gpus(document)[0]]


def _same(values: list[Any]) -> Any:
    return values[0] if values and all(v == values[0] for v in values) else None


def _settings(devices: list[dict[str, Any]]) -> dict[str, tuple[str | None, list[Any]]]:
    """Per setting's config key: the value every GPU must share for it to be expected (None: whatever
    they share), and each GPU's value."""
    return {
        "persistence": ("enabled", [(d.get("modes") or {}).get("persistence") for d in devices]),
        "mig": (None, [(d.get("modes") or {}).get("mig_current") for d in devices]),
        "power_limit": (
            "default",
            [
                "default"
                if (d.get("power") or {}).get("enforced_limit_w") == (d.get("power") or {}).get("default_limit_w")
                else "changed"
                for d in devices
            ],
        ),
        "application_clocks": (
            "default",
            [
                "default"
                if all(
                    (d.get("clocks") or {}).get(f"applications_{k}_mhz")
                    == (d.get("clocks") or {}).get(f"default_applications_{k}_mhz")
                    for k in ("graphics", "memory")
                )
                else "changed"
                for d in devices
            ],
        ),
    }


def _active_links(device: dict[str, Any]) -> int | str:
    """The GPU's active NVLink links, or why they are not known."""
    listed = device.get("nvlink")
    if isinstance(listed, list):
        return sum(1 for link in listed if isinstance(link, dict) and link.get("active") is True)
    return unavailable_reason(listed) or "unreadable"


def config_expectations(inputs: Sequence[Observed]) -> tuple[dict[str, Any], list[str]]:
    """(thresholds.config, notes on what was left unstated and why)."""
    documents = [o.health for o in inputs if o.health is not None]
    notes = (
        []
        if len(documents) == len(inputs)
        else [
            f"{len(inputs) - len(documents)} input(s) have no health document: the configuration comes from the others"
        ]
    )
    devices = _all_gpus(documents)
    if not devices:
        return {}, notes + ["no GPU in any input's health.json: no configuration expected"]
    config: dict[str, Any] = {}
    for key, name in (("driver_min", "driver_version"), ("cuda_min", "cuda_driver_version")):
        versions = [
            v for d in documents if isinstance(v := (d.get("software") or {}).get(name), str) and version_key(v)
        ]
        if versions:
            config[key] = min(versions, key=version_key)
    for key, (wanted, values) in _settings(devices).items():
        agreed = _same(values)
        if agreed is not None and unavailable_reason(agreed) is None and (wanted is None or agreed == wanted):
            config[key] = agreed
        else:
            notes.append(f"config.{key} not expected: the inputs' GPUs report {sorted({str(v) for v in values})}")
    links = [_active_links(device) for device in devices]
    if all(isinstance(n, int) for n in links) and _same(links) is not None:
        config["nvlink_links_per_gpu"] = links[0]
    else:
        notes.append(f"config.nvlink_links_per_gpu not expected: {sorted({str(n) for n in links})}")
    config["source"] = (
        f"seen on all {len(devices)} GPU(s) of the {len(documents)} input bundle(s) "
        "(raw/health.json at idle); the driver and CUDA minimums are the lowest among them"
    )
    return config, notes


def expected_digests(inputs: Sequence[Observed], names: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """(profile digests, notes on GPUs or inputs outside the quorum)."""
    digests: dict[str, Any] = {}
    notes: list[str] = []
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for observed, name in zip(inputs, names, strict=True):
        for who, record in observed.stress.items():
            key = json.dumps(stress_conditions(record), sort_keys=True)
            groups.setdefault(key, {})[f"{name} {who}"] = record
    stress = []
    for key, members in sorted(groups.items()):
        vote = quorum({who: r["sha256"] for who, r in members.items()})
        if vote.ambiguous or vote.majority is None:  # (no majority only when ambiguous)
            notes.append(f"no stress digest expected for {key}: the GPUs split evenly")
            continue
        record = members[vote.agreeing[0]]
        stress.append(
            {
                "sha256": vote.majority,
                "dtype": record["dtype"],
                "shape": record["shape"],
                "seed": record["seed"],
                "libraries": record["libraries"],
                "source": f"{len(vote.agreeing)} of {len(members)} GPU(s) in the input bundles agreed",
            }
        )
        notes += [
            f"{who}'s stress reference digest {short(d)} is not the quorum's {short(vote.majority)}"
            for who, d in vote.outliers.items()
        ]
    if stress:
        digests["stress"] = stress
    outputs: dict[tuple[str, str], dict[str, str]] = {}
    for observed, name in zip(inputs, names, strict=True):
        for tensor_format, digest in observed.precision.items():
            outputs.setdefault(tensor_format, {})[name] = digest
    expected: dict[str, dict[str, str]] = {}
    for (tensor, fmt), by_input in sorted(outputs.items()):
        vote = quorum(by_input)
        if vote.majority is not None:
            expected.setdefault(tensor, {})[fmt] = vote.majority
        notes += [
            f"{who}: precision output {fmt} of tensor {short(tensor)} is not the quorum's" for who in vote.outliers
        ]
    if expected:
        digests["precision"] = {"outputs": expected, "source": f"the quorum over the {len(inputs)} input bundle(s)"}
    return digests, notes
