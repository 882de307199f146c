"""The tensor index the probe gets: each tensor's dtype, shape, byte range and sha256.

Names, dtypes and shapes come from the safetensors library (safe_open); byte ranges from
the header's data_offsets (read by the probe's own stdlib reader, so host and probe agree
on one layout); each sha256 is computed from the file's bytes in that range and checked
against the bytes safe_open returns for the tensor: through numpy where every tensor asked for is of a
dtype numpy holds (F32, F16), through torch otherwise (BF16). Importing torch cost `dossier run` 6.3 s
before its first step on the H200 (bench/dossier_phases.py, 2026-12-02 13:53 UTC: `prepare` 0.82-7.12 s of
the process's life, the campaign's F32 checkpoint); through numpy `prepare` took 0.33 s (14:11 UTC, c5-r1).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.checkpoints.errors import CheckpointFileError
from harness.probes import tensor_file


@dataclass(frozen=True)
class TensorRecord:
    role: str
    name: str
    dtype: str
    shape: tuple[int, ...]
    byte_range: tuple[int, int]
    sha256: str

    def as_index_entry(self) -> dict[str, Any]:
        return {
            "dtype": self.dtype,
            "shape": list(self.shape),
            "byte_range": list(self.byte_range),
            "sha256": self.sha256,
        }


NUMPY_DTYPES = frozenset({"F32", "F16"})  # the measurable dtypes numpy holds as they are stored


def _numpy_bytes(array: Any) -> bytes:
    import numpy

    return numpy.ascontiguousarray(array).reshape(-1).view(numpy.uint8).tobytes()


def _torch_bytes(tensor: Any) -> bytes:
    import torch

    return tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def _framework(entries: dict[str, tensor_file.TensorEntry], roles: list[tuple[str, str]]) -> tuple[str, Any]:
    """safe_open's framework for ROLES' tensors, and how a loaded tensor gives its bytes: numpy when every
    one of them is a dtype it holds (an unknown name is reported by _record either way), else torch."""
    asked = [entries[name].dtype for _, name in roles if name in entries]
    return ("numpy", _numpy_bytes) if all(dtype in NUMPY_DTYPES for dtype in asked) else ("pt", _torch_bytes)


def index_tensors(path: Path, roles: list[tuple[str, str]]) -> list[TensorRecord]:
    """Records for (role, name) pairs; clear errors for a bad file, name or dtype."""
    from safetensors import SafetensorError, safe_open  # host only

    try:
        entries = tensor_file.read_header(path)
        framework, loaded_bytes = _framework(entries, roles)
        with safe_open(str(path), framework=framework) as handle:
            names = set(handle.keys())
            records = [_record(handle, entries, names, path, role, name, loaded_bytes) for role, name in roles]
    except SafetensorError as exc:
        raise CheckpointFileError(
            f"{path} is not a readable safetensors file: {exc}",
            hint="a truncated download or a different format; fetch it again",
        ) from exc
    except tensor_file.SafetensorsError as exc:
        raise CheckpointFileError(str(exc), hint="a truncated download or a different format; fetch it again") from exc
    return records


def _record(handle, entries, names, path: Path, role: str, name: str, loaded_bytes) -> TensorRecord:
    if name not in names:
        try:
            tensor_file.find(entries, name, path)  # raises with close matches
        except tensor_file.SafetensorsError as exc:
            raise CheckpointFileError(
                str(exc),
                hint="list a file's tensors with: python -c \"from safetensors "
                f"import safe_open; print(*safe_open('{path}', 'pt').keys(), sep='\\n')\"",
            ) from exc
    entry = entries[name]
    sliced = handle.get_slice(name)
    dtype, shape = sliced.get_dtype(), tuple(sliced.get_shape())
    if (dtype, shape) != (entry.dtype, entry.shape):
        raise CheckpointFileError(
            f"{path}: {name!r} is {dtype}{list(shape)} to safetensors but "
            f"{entry.dtype}{list(entry.shape)} in the header"
        )
    if dtype not in tensor_file.MEASURABLE_DTYPES:
        raise CheckpointFileError(
            f"{path}: tensor {name!r} ({role}) is {dtype}; the precision probe measures "
            f"{', '.join(tensor_file.MEASURABLE_DTYPES)} tensors"
        )
    data = tensor_file.read_bytes(path, entry)
    library_bytes = loaded_bytes(handle.get_tensor(name))
    if data != library_bytes:
        raise CheckpointFileError(
            f"{path}: the bytes at [{entry.start}, {entry.end}) differ from the tensor safetensors loads for {name!r}"
        )
    return TensorRecord(role, name, dtype, shape, (entry.start, entry.end), tensor_file.sha256_hex(data))
