"""The precision step's figures, declared once (harness.analysis.figure). The quantizers give the same bits on
any device (harness.analysis.digests.PRECISION_DIGEST_RULE): each tensor's error per format, and its output
digest, decide, and reproduce exactly, on any GPU or CPU, for the same tensor."""

from __future__ import annotations

from typing import Any

from harness.analysis.figure import DECIDES, Figure


def _formats(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(ROLE.FORMAT, the tensor and its format's row) for every format of every tensor measured."""
    return [
        (f"{tensor.get('role')}.{row.get('format')}", {"tensor": tensor, "row": row})
        for tensor in document.get("tensors") or []
        if isinstance(tensor, dict)
        for row in tensor.get("formats") or []
        if isinstance(row, dict)
    ]


def _tensor(item: dict[str, Any]) -> dict[str, Any]:
    return {"tensor_sha256": item["tensor"].get("sha256")}


FIGURES = tuple(
    Figure(
        f"precision {{}} {words}",
        unit,
        (lambda k: lambda item: item["row"].get(k))(key),
        role=DECIDES,
        each=_formats,
        figure=f"precision.{{}}.{key}",
        kind="exact",
        conditions=_tensor,
        source="document",
        per_device=False,
    )
    for key, words, unit in (("relative_rmse", "relative RMSE", ""), ("output_sha256", "output digest", "sha256"))
)
