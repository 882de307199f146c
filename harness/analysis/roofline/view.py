"""The roofline step's headline figures as a judge reads them: one frozen view, checked once.

Built from harness.analysis.roofline.figures.headlines (the roofs, each GEMM's classification and
whether every measured GEMM is explained, recomputed from the raw document). Roofs the probe could not
measure are None, as the headlines say them. The whole headlines stay at hand (`values`) for the
evidence lines that print every figure. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.analysis.views import DocumentError, mapping, number, text
from harness.analysis.views import document as document_of

WHERE = "the roofline figures"


@dataclass(frozen=True)
class RooflineFigures:
    """The measured roofs, how many GEMMs were classified on them and whether every one is explained."""

    device: str | None
    dtype: str | None
    bandwidth_gbps: int | float | None
    peak_tflops: int | float | None
    classified: int
    all_explained: bool | None  # None: the figures do not say
    values: dict[str, Any]

    @classmethod
    def from_headlines(cls, values: Any) -> RooflineFigures:
        """The view of recomputed headlines; refused (DocumentError) where one is not what they hold."""
        values = document_of(values, WHERE)
        explained = values.get("all_explained")
        if explained is not None and not isinstance(explained, bool):
            raise DocumentError(f"{WHERE}.all_explained is not true, false or null: {explained!r}")
        return cls(
            device=text(values, "device", WHERE),
            dtype=text(values, "dtype", WHERE),
            bandwidth_gbps=number(values, "bandwidth_gbps", WHERE),
            peak_tflops=number(values, "peak_tflops", WHERE),
            classified=len(mapping(values.get("classifications") or {}, f"{WHERE}.classifications")),
            all_explained=explained,
            values=values,
        )

    @property
    def on_cpu(self) -> bool:
        return self.device == "cpu"
