"""The lab criteria's evidence in sentences: what report.md lists under each criterion.

Each function turns a step's recomputed headline figures (harness.analysis.NAME.headlines) into a few
sentences with their units, never `key: value` lines: a person reads "the copy kernel's plateau is
1890 GB/s over 4096, 8192 and 16384 MiB buffers", not `plateau_gbps: 1889.8 GB/s`. A figure that is
absent is left out here (the criterion says once why it matters). Pure functions of their input, so
`dossier verify` re-renders the same report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from harness.analysis.units import is_number, number
from harness.analysis.verdict import parse
from harness.judge.acceptance.rates import burst_conditions

SOFTWARE_WORDS = {
    "driver_version": "the driver version",
    "cuda_driver_version": "the CUDA driver version",
    "torch_version": "torch's version",
    "torch_cuda_build": "torch's CUDA build",
}
CHECK_WORDS = {  # derived/health-diff.json's checks (harness.analysis.health.diff), as a reader says them
    "load_ran": "The load ran",
    "same_devices": "The same devices idle and under load",
    "clocks_rose": "The SM clock rose under load",
    "power_rose": "The power draw rose under load",
    "clock_event_reasons_named": "Every clock-event reason under load is named",
    "no_unexpected_process": "No process the harness did not start shares the device",
}
FAILED_WORDS = {  # the same checks where they failed
    "load_ran": "the load did not run",
    "same_devices": "the devices idle and under load differ",
    "clocks_rose": "the SM clock did not rise under load",
    "power_rose": "the power draw did not rise under load",
    "clock_event_reasons_named": "a clock-event reason under load is a slowdown or is not named",
    "no_unexpected_process": "a process the harness did not start shares the device",
}


def listed(items: Iterable[Any]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    words = [str(i) for i in items]
    return " and ".join(words) if len(words) < 3 else ", ".join(words[:-1]) + " and " + words[-1]


def numbers(values: Iterable[Any], unit: str) -> str:
    """'1891.6, 1891 and 1891.9 GB/s': figures as units.number writes them."""
    return f"{listed(number(v) for v in values if is_number(v))} {unit}".strip()


def health_lines(h: dict[str, Any], unread: dict[str, str]) -> list[str]:
    """The software found (UNREAD: what could not be read, by key, with why) and the devices."""
    lines = []
    found = [
        ("NVIDIA driver", h.get("driver_version")),
        ("CUDA driver", h.get("cuda_driver_version")),
        ("torch", h.get("torch_version")),
        ("torch built for CUDA", h.get("torch_cuda_build")),
    ]
    said = [f"{words} {value}" for words, value in found if value is not None]
    if said:
        lines.append(f"Software: {', '.join(said)}.")
    for reason in dict.fromkeys(unread.values()):
        keys = [SOFTWARE_WORDS.get(k, k) for k, r in unread.items() if r == reason]
        which = listed(keys)
        lines.append(f"{which[:1].upper()}{which[1:]} could not be read: {reason}.")
    devices = [d for d in h.get("devices") or [] if isinstance(d, dict)]
    count = h.get("device_count")
    if not devices:
        lines.append("No GPU is visible." if count in (0, None) else f"{count} device(s) counted, none listed.")
    for d in devices:
        sku = d.get("sku_id") or "no catalogue SKU"
        lines.append(f"GPU {d.get('index')}: {d.get('name')} ({sku}), UUID {d.get('uuid')}.")
    return lines


def bandwidth_lines(b: dict[str, Any]) -> list[str]:
    """The plateau and the repeats (their judgement is the criterion's)."""
    lines = []
    kernel, device = b.get("kernel") or "the", b.get("device") or "the device"
    where = "host memory" if device == "cpu" else "device memory"
    if is_number(b.get("plateau_gbps")):
        sizes = numbers(b.get("plateau_sizes_mib") or [], "MiB")
        lines.append(
            f"The {kernel} kernel's plateau in {where}: {number(b['plateau_gbps'])} GB/s over {sizes} buffers."
        )
    medians = b.get("repeat_medians_gbps") or []
    if medians and is_number(b.get("repeat_spread")):
        size = number(b["repeat_size_mib"]) + " MiB" if is_number(b.get("repeat_size_mib")) else "the largest size"
        lines.append(
            f"{len(medians)} repeats at {size}: {numbers(medians, 'GB/s')}, "
            f"{b['repeat_spread']:.2%} apart (highest less lowest, over their median)."
        )
    if is_number(b.get("spec_gbps")):
        lines.append(f"The SKU's published peak is {number(b['spec_gbps'])} GB/s.")
    return lines


def roofline_lines(r: dict[str, Any]) -> list[str]:
    """The roofs, how many GEMMs were classified, the best bursts and the fusion."""
    lines = []
    dtype = r.get("dtype") or "the"
    if is_number(r.get("bandwidth_gbps")) and is_number(r.get("peak_tflops")):
        ridge = (
            f"; they meet at {number(r['ridge_flop_per_byte'])} FLOP/byte"
            if is_number(r.get("ridge_flop_per_byte"))
            else ""
        )
        lines.append(
            f"Roofs: memory {number(r['bandwidth_gbps'])} GB/s, {dtype} dense peak "
            f"{number(r['peak_tflops'])} TFLOPS{ridge}."
        )
    bounds = list((r.get("classifications") or {}).values())
    if bounds:
        lines.append(
            f"{len(bounds)} GEMMs classified before the run: {bounds.count('memory')} memory-bound, "
            f"{bounds.count('compute')} compute-bound (each in the roofline table)."
        )
    if is_number(r.get("burst_best_tflops")):
        lines.append(
            f"Best {dtype} burst: {number(r['burst_best_tflops'])} TFLOPS at {r.get('best_shape')}"
            f"{burst_conditions(r)} (a burst: short timed windows, not a sustained rate)."
        )
    others = {d: v for d, v in (r.get("dtype_burst_best_tflops") or {}).items() if is_number(v)}
    if others:
        lines.append(
            "Best bursts of the other dtypes: " + ", ".join(f"{d} {number(v)}" for d, v in others.items()) + " TFLOPS."
        )
    if is_number(r.get("fusion_speedup")):
        lines.append(f"Fusing the chain of elementwise kernels ran it {number(r['fusion_speedup'])} times faster.")
    return lines


def checkpoint_name(checkpoint: Any) -> str | None:
    """A checkpoint as anyone can find it again: its repository and revision, else its file's name
    (a local path of the machine that measured it, as `--checkpoint .gpu/model.safetensors` records
    in `label`, means nothing elsewhere: the sha256 beside it is what pins the file)."""
    if not isinstance(checkpoint, dict):
        return None
    if checkpoint.get("repo"):
        revision = checkpoint.get("revision")
        return f"{checkpoint['repo']}@{revision}" if revision else str(checkpoint["repo"])
    label, file = checkpoint.get("label"), checkpoint.get("file")
    if isinstance(label, str) and "/" not in label and "\\" not in label:
        return label  # a manifest's name or a bare file name
    return str(file) if file else (label.replace("\\", "/").rsplit("/", 1)[-1] if isinstance(label, str) else None)


def precision_lines(p: dict[str, Any], checkpoint: Any) -> list[str]:
    """The checkpoint (by name and sha256: a local path of the machine that ran it is never shown),
    its tensors and what the explanations found."""
    lines = []
    name = checkpoint_name(checkpoint) or p.get("checkpoint")
    if name:
        sha = f", sha256 {p['file_sha256']}" if p.get("file_sha256") else ""
        lines.append(f"Checkpoint {name}{sha}.")
    tensors = p.get("tensors") or {}
    if tensors:
        lines.append("Tensors: " + "; ".join(f"{role}, {tensor}" for role, tensor in tensors.items()) + ".")
    best = {role: fmt for role, fmt in (p.get("best_8bit") or {}).items() if fmt}
    if best:
        lines.append("Best 8-bit format: " + "; ".join(f"{role}, {fmt}" for role, fmt in best.items()) + ".")
    found = {k: v for k, v in (p.get("explanations") or {}).items() if isinstance(v, int) and v}
    if found:
        lines.append(
            "Explained: " + listed(f"{n} {kind} finding{'s' if n != 1 else ''}" for kind, n in found.items()) + "."
        )
    return lines


def allreduce_lines(a: dict[str, Any]) -> list[str]:
    """The backend and world size, and each curve's knee and bus bandwidth."""
    lines = []
    if a.get("backend"):
        ranks = f", {a['world_size']} ranks" if is_number(a.get("world_size")) else ""
        lines.append(f"Backend {a['backend']}{ranks}.")
    for name, curve in (a.get("curves") or {}).items():
        if not isinstance(curve, dict):
            continue
        parts = []
        if is_number(curve.get("knee_bytes")):
            parts.append(f"knee at {number(curve['knee_bytes'])} bytes")
        if is_number(curve.get("alpha_us")) and is_number(curve.get("beta_gbps")):
            parts.append(f"startup {number(curve['alpha_us'])} µs, bandwidth {number(curve['beta_gbps'])} GB/s")
        if is_number(curve.get("busbw_at_max_gbps")):
            parts.append(f"bus bandwidth {number(curve['busbw_at_max_gbps'])} GB/s at the largest size")
        if parts:
            lines.append(f"The {name.replace('_', '-')} curve: {', '.join(parts)}.")
    if a.get("medians_from"):
        lines.append(f"Per-rank medians {a['medians_from']}.")
    return lines


GPU_AND_UUID = re.compile(r"(GPU\d+) GPU-[0-9a-fA-F-]{36}")  # health-diff's device label: GPU0 GPU-7c63...


def device(check: dict[str, Any]) -> str:
    """A check's device as the report says it: 'GPU0' (health's criterion lists each GPU's UUID once)."""
    label = str(check.get("device"))
    return GPU_AND_UUID.sub(r"\1", label)


def check_line(check: dict[str, Any]) -> str:
    """One health-diff check: what it says, where, its verdict and evidence."""
    name = str(check.get("name"))
    words = CHECK_WORDS.get(name, name.replace("_", " ").capitalize())
    try:
        status = parse(check.get("status")).shown
    except ValueError:
        status = str(check.get("status"))
    return f"{words} ({device(check)}): {status}, {check.get('evidence')}"


def failed_check(check: dict[str, Any]) -> str:
    """A failed health-diff check in words: what went wrong, where, and its evidence."""
    name = str(check.get("name"))
    words = FAILED_WORDS.get(name, f"{name.replace('_', ' ')} failed")
    return f"{words} ({device(check)}): {check.get('evidence')}"
