"""The all-reduce document's evidence sections built from its runs and topology: the normal-versus-
control explanation per world size and the NVLink multicast (NVLS) record. Standard library only:
the probe writes them with these functions and `dossier verify` rebuilds them to compare.
"""

from __future__ import annotations

from typing import Any

from harness.analysis.allreduce import figures as ar
from harness.analysis.allreduce.gap import explain_gap


def _parsed_logs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [run["nccl"] for run in runs if isinstance(run.get("nccl"), dict) and "transports" in run["nccl"]]


def nvls_record(runs: list[dict[str, Any]], disabled_by: dict[str, str]) -> dict[str, Any]:
    """Whether NCCL's logs show an NVLS algorithm or NVLS support lines; DISABLED_BY is the
    environment every worker ran with."""
    parsed = _parsed_logs(runs)
    seen = [label for found in parsed for label in found["algorithms_seen"]]
    support = sorted({line for found in parsed for line in found["nvls_support"]})
    logs = bool(parsed)
    return {
        **disabled_by,
        "multicast": "never requested: NCCL_NVLS_ENABLE=0 in every worker",
        "nvls_algorithm_seen": (
            any(label.startswith("NVLS") for label in seen)
            if logs
            else {"unavailable": "no NCCL log was read (no NCCL run, or logging off)"}
        ),
        "nccl_reported": support if logs else {"unavailable": "no NCCL log was read"},
    }


def explanations(runs: list[dict[str, Any]], topology: dict[str, Any]) -> dict[str, Any]:
    """Per world size with both curves: the gap, and the sentences that explain it from the evidence."""
    out = {}
    for world in sorted({r["world_size"] for r in runs}):
        pair = {r["curve"]: r for r in runs if r["world_size"] == world}
        if not set(ar.CURVES) <= set(pair) or not all(pair[c]["points"] for c in ar.CURVES):
            continue
        gap = ar.p2p_gap(pair["normal"], pair["p2p_disabled"])
        links = links_between(topology, world)
        transports = {
            c: (pair[c]["nccl"].get("transports", []) if isinstance(pair[c].get("nccl"), dict) else [])
            for c in ar.CURVES
        }
        out[str(world)] = {"gap": gap, **explain_gap(gap, links, transports, pcie_of(topology))}
    return out


def links_between(topology: dict[str, Any], world: int) -> dict[str, Any]:
    """The topo -m cells between the GPUs of ranks 0..world-1 (GPU i serves local rank i)."""
    pairs, indices = topology.get("gpu_pairs"), topology.get("gpu_indices")
    if not isinstance(pairs, dict) or "unavailable" in pairs or not isinstance(indices, list):
        reason = pairs.get("unavailable") if isinstance(pairs, dict) else "no topology matrix"
        return {"kinds": [], "reason": reason}
    used = indices[:world]
    return {
        "kinds": [
            pairs[f"GPU{a}-GPU{b}"] for i, a in enumerate(used) for b in used[i + 1 :] if f"GPU{a}-GPU{b}" in pairs
        ]
    }


def pcie_of(topology: dict[str, Any]) -> dict[str, Any]:
    nvml = topology.get("nvml")
    if isinstance(nvml, dict) and nvml.get("devices"):
        # the link's capability: an idle GPU may report a downshifted current generation
        pcie = nvml["devices"][0].get("pcie", {})
        return {"generation": pcie.get("max_gen"), "width": pcie.get("max_width")}
    return {}
