"""A precision document's format rows and tensor facts against what they must be (issue 28).

Standard library only. harness.analysis.precision recomputes every error figure, rank and
explanation from the measured rows; this module checks what those do not: that the formats are
the ones the probe measures, in its order, each with its family, width, scaling and range as the
format defines them (a float format's largest finite value and smallest normal, an int format's
largest level), that each tensor's byte count, byte range, shape and element count agree, and that
the output digests (harness.analysis.digests.PRECISION_DIGEST_RULE) are on every format that applied
or on none (documents made before they were recorded): a digest left out would drop its format from
the digests acceptance compares.
"""

from __future__ import annotations

import math
import re
from typing import Any

GROUP_SIZE = 128  # the int4 per-group format's group (harness/probes/_quantize.py)
# (family, bits, scaling, range_max, smallest_normal): range_max and smallest_normal of the float formats as
# torch.finfo gives them (max, tiny; tests/analysis/test_precision_checks.py compares with torch), an int
# format's largest level qmax (symmetric, zero-point free: 2^(bits-1) - 1).
FORMATS: dict[str, tuple[str, int, str, float, float | None]] = {
    "fp16": ("float", 16, "none", 65504.0, 2.0**-14),
    "bf16": ("float", 16, "none", (2 - 2.0**-7) * 2.0**127, 2.0**-126),
    "fp8_e4m3fn": ("float", 8, "none", 448.0, 2.0**-6),
    "fp8_e4m3fn_scaled": ("float", 8, "per_tensor", 448.0, 2.0**-6),
    "fp8_e5m2": ("float", 8, "none", 57344.0, 2.0**-14),
    "fp8_e5m2_scaled": ("float", 8, "per_tensor", 57344.0, 2.0**-14),
    "int8_per_tensor": ("int", 8, "per_tensor", 127.0, None),
    "int8_per_channel": ("int", 8, "per_channel", 127.0, None),
    "int4_per_tensor": ("int", 4, "per_tensor", 7.0, None),
    "int4_per_channel": ("int", 4, "per_channel", 7.0, None),
    f"int4_per_group{GROUP_SIZE}": ("int", 4, "per_group", 7.0, None),
}


def _element_bytes(dtype: Any) -> int | None:
    """The width a safetensors dtype's name gives (F32: 4, BF16: 2, F8_E4M3: 1), or None."""
    match = re.search(r"(\d+)", str(dtype))
    return int(match.group(1)) // 8 if match and int(match.group(1)) % 8 == 0 else None


def tensor_discrepancies(tensor: dict[str, Any]) -> list[str]:
    where, found = f"tensor {tensor.get('role')}", []
    shape, span, size = tensor.get("shape"), tensor.get("byte_range"), tensor.get("bytes")
    numel = math.prod(shape) if isinstance(shape, list) else None
    if numel != (tensor.get("stats") or {}).get("numel"):
        found.append(
            f"{where}: shape {shape} holds {numel} elements, stats.numel says "
            f"{(tensor.get('stats') or {}).get('numel')}"
        )
    width = _element_bytes(tensor.get("dtype"))
    if width is None or size != (numel or 0) * width:
        found.append(
            f"{where}: {size} bytes, but {numel} elements of {tensor.get('dtype')} are {(numel or 0) * (width or 0)}"
        )
    if not isinstance(span, list) or len(span) != 2 or span[1] - span[0] != size:
        found.append(f"{where}: byte_range {span} does not span its {size} bytes")
    names = [row.get("format") for row in tensor.get("formats", [])]
    if names != list(FORMATS):
        found.append(f"{where}: formats {names}, but the probe measures {list(FORMATS)} in that order")
    for row in tensor.get("formats", []):
        facts = FORMATS.get(row.get("format"))
        stated = (
            row.get("family"),
            row.get("bits"),
            row.get("scaling"),
            row.get("range_max"),
            row.get("smallest_normal"),
        )
        if facts is not None and stated != facts:
            found.append(
                f"{where} {row['format']}: family, bits, scaling, range_max, smallest_normal {stated}, but the "
                f"format is {facts}"
            )
    return found


def digest_discrepancies(document: dict[str, Any]) -> list[str]:
    """Every format that applied to a tensor has its output digest, or no row of the document has one; a
    format that did not apply has none (nothing was quantized)."""
    rows = [
        (t.get("role"), row)
        for t in document.get("tensors", [])
        for row in t.get("formats", [])
        if isinstance(row, dict)
    ]
    applied = [(role, row) for role, row in rows if "not_applicable" not in row]
    found = [
        f"tensor {role} {row.get('format')}: an output digest, but the format did not apply"
        for role, row in rows
        if "not_applicable" in row and "output_sha256" in row
    ]
    missing = [f"{role} {row.get('format')}" for role, row in applied if "output_sha256" not in row]
    if missing and len(missing) < len(applied):
        found.append(
            f"no output digest for {', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''}, but the document "
            f"records one for the other formats that applied (the probe records one for each)"
        )
    return found


def discrepancies(document: dict[str, Any]) -> list[str]:
    found = (
        []
        if document.get("probe", "precision") == "precision"
        else [f"probe {str(document.get('probe'))[:40]!r} in a precision document"]
    )
    for tensor in document.get("tensors", []):
        found += tensor_discrepancies(tensor)
    return found + digest_discrepancies(document)
