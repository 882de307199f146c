"""Two precision documents' measured numbers compared exactly: the probe's numbers are bit-identical
across devices (harness/probes/precision/quantize.py), so a CUDA run and a CPU run of the same tensors
agree to the last bit or differ somewhere this names."""

from __future__ import annotations

from typing import Any

MEASURED_KEYS = ("mse", "relative_rmse", "sqnr_db", "max_abs_error", "saturated_count", "underflow_count", "scales")


def compare_measurements(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    """Where two precision documents' measured numbers differ (exact comparison).

    The probe's numbers are meant to be bit-identical across devices (see
    harness/probes/precision/quantize.py), so a CUDA run and a CPU run of the same tensors, matched
    by role and tensor sha256, must agree exactly; every difference is listed.
    """
    out = []
    theirs = {(t["role"], t["sha256"]): t for t in second.get("tensors", [])}
    for tensor in first.get("tensors", []):
        other = theirs.get((tensor["role"], tensor["sha256"]))
        if other is None:
            out.append(f"{tensor['role']}: no tensor with sha256 {tensor['sha256']} in the second document")
            continue
        for key, value in tensor["stats"].items():
            if other["stats"].get(key) != value:
                out.append(f"{tensor['role']} stats.{key}: {value!r} vs {other['stats'].get(key)!r}")
        rows = {r["format"]: r for r in other["formats"]}
        for row in tensor["formats"]:
            for key in MEASURED_KEYS:
                if row.get(key) != rows.get(row["format"], {}).get(key):
                    out.append(
                        f"{tensor['role']} {row['format']}.{key}: {row.get(key)!r} vs "
                        f"{rows.get(row['format'], {}).get(key)!r}"
                    )
    return out
