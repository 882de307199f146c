"""The tensor index the probe gets: each tensor's dtype, shape, byte range and sha256.

Names, dtypes and shapes come from the safetensors library (safe_open); byte ranges from
the header's data_offsets (read by the probe's own stdlib reader, so host and probe agree
on one layout); each sha256 is computed from the file's bytes in that range and checked
against the bytes safe_open returns for the tensor.
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


def index_tensors(path: Path, roles: list[tuple[str, str]]) -> list[TensorRecord]:
    """Records for (role, name) pairs; clear errors for a bad file, name or dtype."""
    import torch  # host only, like safetensors
    from safetensors import SafetensorError, safe_open

    try:
        entries = tensor_file.read_header(path)
        with safe_open(str(path), framework="pt") as handle:
            names = set(handle.keys())
            records = [_record(handle, entries, names, path, role, name, torch) for role, name in roles]
    except SafetensorError as exc:
        raise CheckpointFileError(
            f"{path} is not a readable safetensors file: {exc}",
            hint="a truncated download or a different format; fetch it again",
        ) from exc
    except tensor_file.SafetensorsError as exc:
        raise CheckpointFileError(str(exc), hint="a truncated download or a different format; fetch it again") from exc
    return records


def _record(handle, entries, names, path: Path, role: str, name: str, torch) -> TensorRecord:
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
    library_bytes = handle.get_tensor(name).contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    if data != library_bytes:
        raise CheckpointFileError(
            f"{path}: the bytes at [{entry.start}, {entry.end}) differ from the tensor safetensors loads for {name!r}"
        )
    return TensorRecord(role, name, dtype, shape, (entry.start, entry.end), tensor_file.sha256_hex(data))
