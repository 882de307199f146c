"""The safetensors layout, read with the standard library only.

A safetensors file is an 8-byte little-endian header length N, N bytes of JSON
({name: {"dtype", "shape", "data_offsets": [begin, end]}, optional "__metadata__"}), then
the data; data_offsets are relative to the first byte after the header
(https://github.com/huggingface/safetensors#format). The probe uses this to read only the
byte ranges of the tensors it measures; the host (harness.checkpoints) uses the same public
reader for byte ranges and cross-checks names, dtypes and shapes with the safetensors library
itself.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
import re
import struct
from dataclasses import dataclass

# dtype in the file -> (torch dtype name, bytes per element); the probe measures these.
MEASURABLE_DTYPES = {"F32": ("float32", 4), "F16": ("float16", 2), "BF16": ("bfloat16", 2)}
ITEM_BYTES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "U16": 2,
    "U32": 4,
    "U64": 8,
    "BOOL": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
}
MAX_HEADER_BYTES = 100 * 1024 * 1024  # the format's own limit
ROLE_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")


class SafetensorsError(ValueError):
    """The file is not a safetensors file, is truncated, or lacks a tensor."""


@dataclass(frozen=True)
class TensorEntry:
    """Where one tensor lies in the file: absolute byte offsets [start, end)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.start


def read_header(path: str | os.PathLike) -> dict[str, TensorEntry]:
    """Every tensor entry of a safetensors file, checked against the file's real size."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        prefix = f.read(8)
        if len(prefix) < 8:
            raise SafetensorsError(
                f"{path}: not a safetensors file ({size} bytes, shorter than the 8-byte header length)"
            )
        (length,) = struct.unpack("<Q", prefix)
        if length > MAX_HEADER_BYTES or length > size - 8:
            raise SafetensorsError(
                f"{path}: not a safetensors file, or truncated: the header claims "
                f"{length} bytes but the file has {size - 8} after the length field"
            )
        raw = f.read(length)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise SafetensorsError(f"{path}: not a safetensors file: its header is not JSON ({exc})") from exc
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: not a safetensors file: its header is not a JSON object")
    base = 8 + length
    entries = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        entries[name] = _entry(path, name, info, base, size)
    return entries


def _count(value: object) -> bool:
    """A dimension or an offset: a whole number, not negative (a JSON true or 1.5 is not one)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _entry(path, name: str, info, base: int, size: int) -> TensorEntry:
    if not (
        isinstance(info, dict)
        and isinstance(info.get("dtype"), str)
        and isinstance(info.get("shape"), list)
        and all(_count(d) for d in info["shape"])
        and isinstance(info.get("data_offsets"), list)
        and len(info["data_offsets"]) == 2
        and all(_count(o) for o in info["data_offsets"])
    ):
        raise SafetensorsError(f"{path}: malformed header entry for {name!r}: {str(info)[:200]}")
    dtype, shape, (begin, end) = info["dtype"], tuple(info["shape"]), info["data_offsets"]
    if not 0 <= begin <= end:
        raise SafetensorsError(f"{path}: tensor {name!r} has bad data_offsets [{begin}, {end}]")
    if base + end > size:
        raise SafetensorsError(
            f"{path}: truncated: tensor {name!r} ends at byte {base + end} but the file has {size} bytes"
        )
    item = ITEM_BYTES.get(dtype)
    if item is not None and item * math.prod(shape) != end - begin:
        raise SafetensorsError(
            f"{path}: tensor {name!r} ({dtype} {list(shape)}) should take "
            f"{item * math.prod(shape)} bytes, the header gives {end - begin}"
        )
    return TensorEntry(name, dtype, shape, base + begin, base + end)


def parse_role_specs(specs: list[str]) -> list[tuple[str, str]]:
    """ROLE=NAME strings as (role, name) pairs; roles are lower_snake_case and unique."""
    pairs, seen = [], set()
    for spec in specs:
        role, sep, name = spec.partition("=")
        if not sep or not name or not ROLE_PATTERN.match(role):
            raise ValueError(f"--tensor {spec!r}: expected ROLE=NAME with ROLE like 'mlp_projection'")
        if role in seen:
            raise ValueError(f"--tensor: role {role!r} given twice")
        seen.add(role)
        pairs.append((role, name))
    return pairs


def find(entries: dict[str, TensorEntry], name: str, path: str | os.PathLike) -> TensorEntry:
    """The entry called `name`, or an error that names close matches."""
    if name in entries:
        return entries[name]
    close = difflib.get_close_matches(name, list(entries), n=5, cutoff=0.6)
    listed = f"closest: {', '.join(close)}" if close else f"for example: {', '.join(sorted(entries)[:8])}"
    raise SafetensorsError(f"{path}: no tensor named {name!r} ({len(entries)} tensors in the file; {listed})")


def read_bytes(path: str | os.PathLike, entry: TensorEntry) -> bytes:
    """Exactly the bytes of one tensor, with plain file reads."""
    with open(path, "rb") as f:
        f.seek(entry.start)
        data = f.read(entry.nbytes)
    if len(data) != entry.nbytes:
        raise SafetensorsError(
            f"{path}: truncated while reading {entry.name!r}: got {len(data)} of {entry.nbytes} bytes"
        )
    return data


def sha256_hex(data: bytes | bytearray) -> str:
    return hashlib.sha256(data).hexdigest()
