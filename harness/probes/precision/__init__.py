"""M1T3 precision probe: real checkpoint tensors through FP-like and symmetric INT formats.

Usage (the host's `dossier precision` builds these arguments after verifying the file):

    python -m harness.probes.precision --file PATH --tensor ROLE=NAME [--tensor ROLE=NAME ...]
        [--tensor-index JSON] [--provenance JSON] [--device auto|cpu|cuda]

The probe reads only the named tensors' byte ranges (the safetensors header gives them),
with plain file reads, re-hashes each tensor's bytes and, when the host passed
`--tensor-index` ({name: {"dtype", "shape", "byte_range": [start, end], "sha256"}}),
refuses any tensor whose dtype, shape, byte range or sha256 differ from what the host
verified. Each tensor is measured on its own, one after another: statistics, then every
format in `quantize.FORMATS`. Standard library and torch only.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from harness.analysis import precision as analysis
from harness.probes import tensor_file
from harness.probes.contract import (
    Option,
    ProbeUsageError,
    attempt,
    log,
    options_parser,
    probe_main,
    progress,
    unavailable,
)
from harness.probes.policy import TENSOR, matching, remake, take

if TYPE_CHECKING:  # torch is imported when measuring, so the host reads OPTIONS without it
    import torch

NAME = "precision"
PROVENANCE_KEYS = {"label", "repo", "revision", "file", "file_sha256", "source", "pinned_by"}


OPTIONS = (
    Option(
        ("--file",),
        dict(required=True, help="the safetensors file (already verified by the host)"),
        host=False,
        replay=remake("their checkpoint, fetched here by its sha256"),
    ),
    Option(
        ("--tensor",),
        dict(
            action="append",
            default=[],
            metavar="ROLE=NAME",
            help="a tensor to measure and its role (repeat; measured in this order)",
        ),
        host=False,
        replay=take(matching(TENSOR, "ROLE=NAME, a tensor of the checkpoint by its name")),
    ),
    Option(
        ("--tensor-index",),
        dict(metavar="JSON", help="the host's record of each tensor: dtype, shape, byte_range, sha256"),
        host=False,
        replay=remake("this host's record of the checkpoint fetched here"),
    ),
    Option(
        ("--provenance",),
        dict(metavar="JSON", help="where the file came from: " + ", ".join(sorted(PROVENANCE_KEYS))),
        host=False,
        replay=remake("where this host's copy of the checkpoint came from"),
    ),
    Option(
        ("--device",),
        dict(
            choices=("auto", "cpu", "cuda"),
            default="auto",
            help="where the probe computes (auto: CUDA when present, else the CPU); the numbers are the same",
        ),
        replay=take(),
    ),
)


def build_parser() -> argparse.ArgumentParser:
    return options_parser(NAME, __doc__, OPTIONS)


def parse_tensor_specs(specs: list[str]) -> list[tuple[str, str]]:
    if not specs:
        raise ProbeUsageError("name at least one tensor with --tensor ROLE=NAME")
    try:
        return tensor_file.parse_role_specs(specs)
    except ValueError as exc:
        raise ProbeUsageError(str(exc)) from exc


def _json_arg(text: str | None, what: str) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProbeUsageError(f"--{what} is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ProbeUsageError(f"--{what} must be a JSON object")
    return value


def pick_device(choice: str) -> torch.device:
    import torch

    if choice == "cuda" and not torch.cuda.is_available():
        raise ProbeUsageError("--device cuda but torch.cuda.is_available() is False")
    if choice == "cpu" or not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device("cuda", torch.cuda.current_device())


def check_against_index(entry: tensor_file.TensorEntry, digest: str, index: dict[str, Any]) -> None:
    """The host's record of a tensor must match what this process read, field by field."""
    record = index.get(entry.name)
    if record is None:
        raise ProbeUsageError(f"--tensor-index has no record of {entry.name!r}")
    read = {"dtype": entry.dtype, "shape": list(entry.shape), "byte_range": [entry.start, entry.end], "sha256": digest}
    for key, value in read.items():
        if record.get(key) != value:
            raise ProbeUsageError(
                f"tensor {entry.name!r}: {key} is {value!r} in the file but the host "
                f"recorded {record.get(key)!r}; the file changed after it was verified"
            )


def load_tensor(path: str, entry: tensor_file.TensorEntry) -> tuple[torch.Tensor, str]:
    """The tensor as float32 (exact for fp32/fp16/bf16) and the sha256 of its bytes."""
    import torch

    if entry.dtype not in tensor_file.MEASURABLE_DTYPES:
        raise ProbeUsageError(
            f"tensor {entry.name!r} is {entry.dtype}; the probe measures "
            f"{', '.join(tensor_file.MEASURABLE_DTYPES)} tensors"
        )
    data = bytearray(tensor_file.read_bytes(path, entry))
    digest = tensor_file.sha256_hex(data)
    dtype = getattr(torch, tensor_file.MEASURABLE_DTYPES[entry.dtype][0])
    values = torch.frombuffer(data, dtype=dtype).reshape(entry.shape) if data else torch.empty(entry.shape, dtype=dtype)
    return values.to(torch.float32), digest


def measure_tensor(
    role: str, entry: tensor_file.TensorEntry, x32: torch.Tensor, digest: str, device: torch.device
) -> dict[str, Any]:
    from harness.probes.precision import quantize

    x = x32.to(device)
    try:
        stats = quantize.tensor_stats(x)
        formats = quantize.measure_formats(x)
    except quantize.NotFinite as exc:
        raise ProbeUsageError(f"tensor {entry.name!r}: {exc}") from exc
    return {
        "role": role,
        "name": entry.name,
        "dtype": entry.dtype,
        "shape": list(entry.shape),
        "byte_range": [entry.start, entry.end],
        "bytes": entry.nbytes,
        "sha256": digest,
        "stats": stats,
        "formats": formats,
        "ranking": analysis.rank(formats),
    }


def checkpoint_record(args: argparse.Namespace, provenance: dict[str, Any]) -> dict[str, Any]:
    unknown = set(provenance) - PROVENANCE_KEYS
    if unknown:
        raise ProbeUsageError(f"--provenance has unknown keys {sorted(unknown)}")
    missing = "the host did not pass it (--provenance); the probe hashes only the tensors it reads"
    return {
        "label": provenance.get("label") or args.file,
        "path": args.file,
        "repo": provenance.get("repo"),
        "revision": provenance.get("revision"),
        "file": provenance.get("file"),
        "file_sha256": provenance.get("file_sha256") or unavailable(missing),
        "source": provenance.get("source") or unavailable(missing),
        "pinned_by": provenance.get("pinned_by") or unavailable(missing),
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    pairs = parse_tensor_specs(args.tensor)
    index = _json_arg(args.tensor_index, "tensor-index")
    provenance = _json_arg(args.provenance, "provenance")
    if sys.byteorder != "little":
        raise ProbeUsageError("safetensors data is little-endian; this host is big-endian")
    device = pick_device(args.device)
    try:
        entries = tensor_file.read_header(args.file)
        chosen = [(role, tensor_file.find(entries, name, args.file)) for role, name in pairs]
    except (OSError, tensor_file.SafetensorsError) as exc:
        raise ProbeUsageError(str(exc)) from exc
    tensors = []
    for done, (role, entry) in enumerate(chosen):
        progress(done, len(chosen), f"{role}: {entry.name}")
        try:
            x32, digest = load_tensor(args.file, entry)
        except tensor_file.SafetensorsError as exc:
            raise ProbeUsageError(str(exc)) from exc
        if index:
            check_against_index(entry, digest, index)
        log(f"precision: {role} {entry.name} {entry.dtype}{list(entry.shape)} sha256 {digest[:12]} on {device}")
        tensors.append(measure_tensor(role, entry, x32, digest, device))
        del x32
    progress(len(chosen), len(chosen), "done")
    numel = sum(t["stats"]["numel"] for t in tensors)
    return {
        "device": device.type,
        "device_name": (
            attempt(torch.cuda.get_device_name, device)
            if device.type == "cuda"
            else unavailable("computed on the CPU; no CUDA device was used")
        ),
        "torch_version": torch.__version__,
        "checkpoint": checkpoint_record(args, provenance),
        "tensors": tensors,
        "ranks": {t["role"]: t["ranking"] for t in tensors},
        "explanations": analysis.explain(tensors),
        "model_quality_caveat": analysis.MODEL_QUALITY_CAVEAT,
        "sizing": (
            f"{len(tensors)} whole tensors ({numel} elements) read by byte range and measured one "
            f"at a time on {device.type} in float64 with device-independent ordered sums; the "
            f"work is set by the tensors, not by the device."
        ),
        "limitations": [
            {
                "what": "model quality",
                "why": "the probe measures weight-representation error only; "
                "no activations, no evaluation (see model_quality_caveat)",
            },
            {
                "what": "scale storage",
                "why": f"bits_per_element_with_scales counts every scale as "
                f"{analysis.SCALE_BITS}-bit float; formats that store "
                f"fp16 or e8m0 scales use fewer",
            },
        ],
    }


if __name__ == "__main__":
    raise SystemExit(probe_main(NAME, build_parser, measure))
