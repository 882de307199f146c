"""The bandwidth step's headline figures as a judge reads them: one frozen view, checked once.

Built from harness.analysis.bandwidth.figures.headlines (recomputed from the raw sweep and repeats); a
figure the analysis could not recompute is None, as the headlines say it, never a default. The whole
headlines stay at hand (`values`) for the evidence lines that print every figure. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.analysis.views import document as document_of
from harness.analysis.views import number, numbers, text

WHERE = "the bandwidth figures"


@dataclass(frozen=True)
class BandwidthFigures:
    """The plateau, the repeats' median and spread, and the catalogue's known-good beside them."""

    device: str | None
    kernel: str | None
    sku_id: str | None
    plateau_gbps: int | float | None
    plateau_sizes_mib: tuple[int | float, ...]
    plateau_tolerance: int | float | None
    repeat_size_mib: int | float | None
    repeat_medians_gbps: tuple[int | float, ...]
    repeat_median_gbps: int | float | None
    repeat_spread: int | float | None
    known_good_gbps: int | float | None
    known_good_ratio: int | float | None
    values: dict[str, Any]

    @classmethod
    def from_headlines(cls, values: Any) -> BandwidthFigures:
        """The view of recomputed headlines; refused (DocumentError) where one is not what they hold."""
        values = document_of(values, WHERE)
        return cls(
            device=text(values, "device", WHERE),
            kernel=text(values, "kernel", WHERE),
            sku_id=text(values, "sku_id", WHERE),
            plateau_gbps=number(values, "plateau_gbps", WHERE),
            plateau_sizes_mib=numbers(values, "plateau_sizes_mib", WHERE),
            plateau_tolerance=number(values, "plateau_tolerance", WHERE),
            repeat_size_mib=number(values, "repeat_size_mib", WHERE),
            repeat_medians_gbps=numbers(values, "repeat_medians_gbps", WHERE),
            repeat_median_gbps=number(values, "repeat_median_gbps", WHERE),
            repeat_spread=number(values, "repeat_spread", WHERE),
            known_good_gbps=number(values, "known_good_gbps", WHERE),
            known_good_ratio=number(values, "known_good_ratio", WHERE),
            values=values,
        )

    @property
    def on_cpu(self) -> bool:
        return self.device == "cpu"
