"""M1T5 health probe: host, software and per-device facts, and the toolchain contracts.

    python -m harness.probes.health                   # idle health, in about a second
    python -m harness.probes.health --torch           # idle, with torch's own answers (import torch: seconds)
    python -m harness.probes.health --under-load 8    # taken halfway through 8 s of load (imports torch)

Every field is a value or {"unavailable": reason}. The idle path does not import torch (4-6 s
on the H200 image): it reads torch's version.py, dlopens cuDNN and NCCL and asks the CUDA
driver API for the devices torch enumerates (harness.probes.health.torch_files), naming each
source. Imports only the standard library, torch (lazily), nvidia-ml-py and the stdlib-only
harness modules the probe contract allows.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from harness.analysis.device_mapping import map_torch_to_nvml
from harness.analysis.health.contracts import evaluate
from harness.analysis.topology import gpu_links
from harness.probes.contract import (
    Option,
    ProbeUsageError,
    attempt,
    check_options,
    describe_exception,
    is_unavailable,
    number,
    options_parser,
    probe_main,
    progress,
    unavailable,
)
from harness.probes.devices import device_facts, system_facts
from harness.probes.health.host import host_facts
from harness.probes.health.load import observe, run_load
from harness.probes.health.torch_files import software_facts
from harness.probes.health.torch_view import cuda_visible_devices, torch_facts
from harness.probes.nvml import NvmlSession
from harness.probes.policy import at_most, refuse, take
from harness.probes.topology import TopologyCapture

NAME = "health"
MAX_LOAD_S = 600.0
MAX_WINDOW_S = 60.0


OPTIONS = (
    Option(
        ("--torch",),
        dict(
            action="store_true",
            help="import torch and record its own versions and device list (adds the torch "
            "import, 4-6 s on the H200 image); without it the idle path reads them from "
            "torch's version.py, the cuDNN/NCCL libraries and the CUDA driver API. "
            "--under-load always imports torch, since its load runs in torch",
        ),
        replay=take(),
    ),
    Option(
        ("--under-load",),
        dict(
            type=number,
            default=None,
            metavar="SECONDS",
            help="run a bf16 GEMM + copy load on every visible device for this long (e.g. "
            "8) and take the health reading halfway through it, sampling throughout",
        ),
        check=lambda s: None if 0 < s <= MAX_LOAD_S else f"{s:g}: must be in (0, {MAX_LOAD_S:g}] seconds",
        replay=take(at_most(600, "s")),
    ),
    Option(
        ("--sample-interval",),
        dict(type=number, default=0.1, metavar="SECONDS", help="NVML sampling period under load (default: 0.1)"),
        check=lambda s: None if 0.01 <= s <= 10 else f"{s:g}: must be in [0.01, 10] seconds",
        goes_with="under_load",
        replay=take(),
    ),
    Option(
        ("--during-load",),
        dict(
            type=int,
            nargs="+",
            metavar="PID",
            help="take the reading during another process's load on the devices (the load's "
            "pids, e.g. the stress step's workers: `dossier run` does this halfway "
            "through the stress step), torch-free: no load of its own; NVML sampled for "
            "--load-window seconds, the device reading taken halfway",
        ),
        check=lambda pids: None if all(p > 0 for p in pids) else "every PID must be positive",
        replay=refuse("processes of their machine"),
    ),
    Option(
        ("--load-window",),
        dict(
            type=number, default=2.0, metavar="SECONDS", help="with --during-load: how long to sample NVML (default: 2)"
        ),
        check=lambda s: None if 0 < s <= MAX_WINDOW_S else f"{s:g}: must be in (0, {MAX_WINDOW_S:g}] seconds",
        goes_with="during_load",
        replay=take(),
    ),
    Option(
        ("--load-what",),
        dict(
            metavar="TEXT",
            default="another process's load",
            help="with --during-load: what the load is, as the document records it",
        ),
        goes_with="during_load",
        replay=refuse("a load of their machine, in their words"),
    ),
)


def build_parser() -> argparse.ArgumentParser:
    return options_parser(NAME, __doc__, OPTIONS)


def check_args(args: argparse.Namespace) -> None:
    check_options(args, OPTIONS)
    if args.during_load and args.under_load is not None:
        raise ProbeUsageError("--during-load: give it or --under-load, not both (a reading is under one load)")
    window = args.load_window if args.during_load else args.under_load
    if window is not None and args.sample_interval > window / 4:
        raise ProbeUsageError(
            f"--sample-interval {args.sample_interval:g} s gives fewer than 4 samples in {window:g} s of load"
        )


def measure(args: argparse.Namespace) -> dict[str, Any]:
    check_args(args)
    topology = TopologyCapture.start()  # overlaps the torch (or driver) reading below
    progress(0, 4, "host")
    loaded = bool(args.under_load or args.during_load)
    facts: dict[str, Any] = {
        "mode": "under_load" if loaded else "idle",
        "host": host_facts(),
        "harness_pids": [os.getpid()],
        "cuda_visible_devices": cuda_visible_devices(),
        "cuda_device_order": os.environ.get("CUDA_DEVICE_ORDER"),
    }
    import_torch = bool(args.torch or args.under_load)
    progress(1, 4, "torch" if import_torch else "torch, cuDNN, NCCL and CUDA devices without torch")
    seen_by_torch = torch_facts() if import_torch else software_facts()
    limitations: list[dict[str, str]] = []
    with NvmlSession() as nvml:
        progress(2, 4, "NVML")
        facts["software"] = software(nvml, seen_by_torch)
        facts["device_view_source"] = seen_by_torch["device_view_source"]
        facts["torch_imported"] = seen_by_torch["torch_imported"]
        facts["torch_device_count"] = seen_by_torch["torch_device_count"]
        facts["torch_devices"] = seen_by_torch["torch_devices"]
        handles: Any = attempt(nvml.handles) if nvml.ok else unavailable(str(nvml.reason))  # a list, or why not
        if is_unavailable(handles):
            facts["nvml_device_count"] = facts["devices"] = handles
            handles = []
        else:
            facts["nvml_device_count"] = len(handles)
            facts["devices"] = read_devices(nvml.pynvml, handles)
        facts["device_mapping"] = mapping(facts)
        if loaded:
            observe = observed_load if args.during_load else under_load
            load, middle = observe(args, nvml, handles, facts, limitations)
            facts["load"] = load
            if middle is not None:
                facts["devices"] = middle
        progress(3, 4, "topology")
    facts["topology"] = topology.result()
    attach_topology(facts)
    facts["contracts"] = evaluate(facts)
    progress(4, 4, "done")
    facts["sizing"] = sizing(args, facts)
    facts["limitations"] = limitations + gpu_limitations(facts) + torch_limitations(facts)
    return facts


def software(nvml: NvmlSession, seen_by_torch: dict[str, Any]) -> dict[str, Any]:
    if nvml.ok:
        versions = system_facts(nvml.pynvml)
    else:
        versions = {k: unavailable(str(nvml.reason)) for k in ("driver_version", "cuda_driver_version", "nvml_version")}
    return {
        **versions,
        "nvidia_ml_py_version": _package_version("nvidia-ml-py"),
        **{k: seen_by_torch[k] for k in SOFTWARE_KEYS if k in seen_by_torch},
    }


# Read from torch (--torch, --under-load) or from their sources without torch (idle); the last
# five say where each came from (the driver's two only on the path that calls it).
SOFTWARE_KEYS = (
    "torch_version",
    "torch_cuda_build",
    "cudnn_version",
    "nccl_version",
    "nccl_available",
    "torch_cuda_available",
    "torch_version_source",
    "cudnn_library",
    "nccl_library",
    "cuda_driver_library",
    "cuda_driver_api_version",
)


def _package_version(name: str) -> Any:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError as exc:
        return unavailable(f"package {name} is not installed: {describe_exception(exc)}")


def read_devices(pynvml: Any, handles: list[Any]) -> list[dict[str, Any]]:
    return [device_facts(pynvml, handle, index) for index, handle in enumerate(handles)]


def mapping(facts: dict[str, Any]) -> Any:
    torch_devices, devices = facts["torch_devices"], facts["devices"]
    if not isinstance(torch_devices, list):
        return torch_devices
    if not isinstance(devices, list):
        return devices
    return map_torch_to_nvml(torch_devices, devices)


def under_load(
    args: argparse.Namespace,
    nvml: NvmlSession,
    handles: list[Any],
    facts: dict[str, Any],
    limitations: list[dict[str, str]],
) -> tuple[Any, Any]:
    """Run the load and take the device reading halfway; (load record, reading) or why not."""
    why = load_blocker(nvml, facts)
    if why:
        limitations.append({"what": "health under load", "why": why})
        return unavailable(why), None
    import torch  # already imported (and timed) by torch_facts

    targets = [
        (m["torch_index"], m["nvml_index"], handles[m["nvml_index"]])
        for m in facts["device_mapping"]
        if isinstance(m.get("nvml_index"), int)
    ]
    load, middle = run_load(
        torch, nvml.pynvml, targets, args.under_load, args.sample_interval, lambda: read_devices(nvml.pynvml, handles)
    )
    own = set(load["pids"])
    listed = {p["pid"] for d in middle for p in (d.get("processes") or []) if isinstance(p, dict)}
    if listed and not own & listed:
        limitations.append(
            {
                "what": "telling the load's process from others",
                "why": f"NVML lists pids {sorted(listed)} but not the load's pid "
                f"{sorted(own)}: NVML reports pids of another PID namespace "
                "(a container without --pid=host), so the load may appear foreign",
            }
        )
    return load, middle


def observed_load(
    args: argparse.Namespace,
    nvml: NvmlSession,
    handles: list[Any],
    facts: dict[str, Any],
    limitations: list[dict[str, str]],
) -> tuple[Any, Any]:
    """Another process's load (--during-load PIDS), observed: every device sampled for --load-window
    seconds and read halfway through; (load record, reading) or why not. Torch is not imported."""
    if not nvml.ok or not handles:
        why = f"no GPU to observe under load: {nvml.reason if not nvml.ok else 'NVML lists no device'}"
        limitations.append({"what": "health under load", "why": why})
        return unavailable(why), None
    load, middle = observe(
        nvml.pynvml, handles, args.load_window, args.sample_interval, lambda: read_devices(nvml.pynvml, handles)
    )
    load.update(kind=f"observed, not run by this probe: {args.load_what}", pids=sorted(args.during_load))
    return load, middle


def load_blocker(nvml: NvmlSession, facts: dict[str, Any]) -> str | None:
    """Why no load can run here, or None. A CPU load says nothing about GPU clocks or power,
    so a host without a usable GPU records the limitation instead of running one."""
    if not nvml.ok:
        return f"no GPU to load: {nvml.reason}"
    if facts["software"].get("torch_cuda_available") is not True:
        return f"torch cannot use CUDA here: {_reason(facts['torch_devices'])}"
    if not isinstance(facts["device_mapping"], list) or not any(
        isinstance(m.get("nvml_index"), int) for m in facts["device_mapping"]
    ):
        return "no torch device could be matched to an NVML device to sample"
    return None


def _reason(value: Any) -> str:
    return value["unavailable"] if is_unavailable(value) else str(value)


def attach_topology(facts: dict[str, Any]) -> None:
    """Give each device its own row of the topo matrix (links to the other GPUs and NICs)."""
    if not isinstance(facts["devices"], list):
        return
    matrix = facts["topology"]["matrix"]
    for device in facts["devices"]:
        label = f"GPU{device['nvml_index']}"
        if not isinstance(matrix, dict) or "rows" not in matrix:
            device["topology_links"] = matrix
        elif label not in matrix["rows"]:
            device["topology_links"] = unavailable(f"no {label} row in the topo -m matrix")
        else:
            device["topology_links"] = gpu_links(matrix, label)
        torch_index = (
            [m["torch_index"] for m in facts["device_mapping"] if m.get("nvml_index") == device["nvml_index"]]
            if isinstance(facts["device_mapping"], list)
            else []
        )
        device["torch_index"] = (
            torch_index[0]
            if torch_index
            else unavailable(
                f"not visible to torch (CUDA_VISIBLE_DEVICES={facts['cuda_visible_devices']!r}; "
                f"torch: {_reason(facts['torch_device_count'])})"
            )
        )
        for process in device["processes"] if isinstance(device["processes"], list) else []:
            process["started_by_harness"] = process["pid"] in facts["harness_pids"]


def sizing(args: argparse.Namespace, facts: dict[str, Any]) -> str:
    if args.during_load:
        load = facts.get("load")
        if is_unavailable(load):
            return f"A reading during another process's load was asked for but not taken: {_reason(load)}."
        return (
            f"Taken during another process's load, not a load of its own ({args.load_what}; pids "
            f"{', '.join(map(str, sorted(args.during_load)))}): NVML sampled every {args.sample_interval:g} s "
            f"for {args.load_window:g} s, the device reading taken halfway; torch is not imported."
        )
    if not args.under_load and args.torch:
        return "No work is run: every field is read from the kernel, NVML, nvidia-smi and torch (imported)."
    if not args.under_load:
        return (
            "No work is run: every field is read from the kernel, NVML, nvidia-smi, torch's version.py, "
            "the cuDNN and NCCL libraries and the CUDA driver API (torch is not imported)."
        )
    load = facts["load"]  # set whenever --under-load is
    if is_unavailable(load):
        return f"A {args.under_load:g} s load was asked for but not run: {_reason(load)}."
    sizes = ", ".join(f"torch {d['torch_index']}: n={d['gemm_n']}, copy {d['copy_mib']:g} MiB" for d in load["devices"])
    return (
        f"Under a {args.under_load:g} s load sized per device from its free memory (bf16 GEMM "
        f"n=8192 with >= 4 GiB free, else 4096 or 2048; copy min(1 GiB, free/8)): {sizes}; "
        f"sampled every {args.sample_interval:g} s; the device reading was taken halfway."
    )


def gpu_limitations(facts: dict[str, Any]) -> list[dict[str, str]]:
    if isinstance(facts["devices"], list):
        return []
    return [
        {
            "what": "every per-device field, the topology and the GPU contracts",
            "why": f"no GPU visible: {_reason(facts['devices'])}",
        }
    ]


def torch_limitations(facts: dict[str, Any]) -> list[dict[str, str]]:
    """What the idle path cannot see because it does not import torch."""
    if facts["torch_imported"] or is_unavailable(facts["software"]["torch_version"]):
        return []
    return [
        {
            "what": "torch's own CUDA start and device list",
            "why": "torch is not imported on the idle path (its import alone takes 4-6 s on the H200 "
            "image); devices come from the CUDA driver API torch enumerates through, so a failure "
            "only torch's CUDA runtime would hit (a runtime newer than the driver beyond minor-"
            "version compatibility, a missing kernel image) shows only with --torch",
        }
    ]


if __name__ == "__main__":
    raise SystemExit(probe_main(NAME, build_parser, measure))
