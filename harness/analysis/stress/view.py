"""The stress step's headline figures as a judge reads them: one frozen view, checked once.

Built from harness.analysis.stress.figures.headlines (every device's checks and the verdict, recomputed
from the raw buckets, samples and events). A rate no bucket measured is None, as the headlines say it.
The whole headlines stay at hand (`values`). Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.analysis.views import DocumentError, field, listed, mapping, number, required_number, text
from harness.analysis.views import document as document_of

WHERE = "the stress figures"


@dataclass(frozen=True)
class Check:
    """One of a device's checks (harness.analysis.stress.figures.judge): pass, fail or not-measured."""

    name: str
    status: str
    evidence: str

    @classmethod
    def from_check(cls, check: Any, where: str) -> Check:
        check = mapping(check, where)
        said = [field(check, key, where) for key in ("name", "status", "evidence")]
        if not all(isinstance(s, str) for s in said):
            raise DocumentError(f"{where}: a check's name, status and evidence are strings: {dict(check)!r}")
        return cls(*said)


@dataclass(frozen=True)
class DeviceFigures:
    """One stressed device's figures: its steady rate, its checks, its power against the limit."""

    index: Any
    steady_tflops: int | float | None
    checks: tuple[Check, ...]
    power_max_fraction: int | float | None  # the maximum board power over the enforced limit
    power_why: str | None
    values: Mapping[str, Any]

    @classmethod
    def from_headlines(cls, values: Any, where: str) -> DeviceFigures:
        values = mapping(values, where)
        power = mapping(field(values, "power", where), f"{where}.power")
        checks = listed(values, "checks", where)
        return cls(
            index=values.get("index"),
            steady_tflops=number(values, "steady_tflops", where),
            checks=tuple(Check.from_check(c, f"{where}.checks[{i}]") for i, c in enumerate(checks)),
            power_max_fraction=number(power, "max_fraction", f"{where}.power"),
            power_why=text(power, "why", f"{where}.power"),
            values=values,
        )


@dataclass(frozen=True)
class StressFigures:
    """What ran (dtype, shape, seconds, on how many devices), the lowest steady rate and the verdict."""

    device: str | None
    dtype: str
    shape: Mapping[str, int]  # the GEMM's m, n and k
    seconds: int | float
    devices: tuple[DeviceFigures, ...]
    min_steady_tflops: int | float | None
    status: str  # the verdict's
    failures: tuple[str, ...]
    not_measured: tuple[str, ...]
    values: dict[str, Any]

    @classmethod
    def from_headlines(cls, values: Any) -> StressFigures:
        """The view of recomputed headlines; refused (DocumentError) where one is not what they hold."""
        values = document_of(values, WHERE)
        verdict = mapping(field(values, "verdict", WHERE), f"{WHERE}.verdict")
        return cls(
            device=text(values, "device", WHERE),
            dtype=str(field(values, "dtype", WHERE)),
            shape=mapping(field(values, "shape", WHERE), f"{WHERE}.shape"),
            seconds=required_number(values, "seconds", WHERE),
            devices=tuple(
                DeviceFigures.from_headlines(d, f"{WHERE}.devices[{i}]")
                for i, d in enumerate(listed(values, "devices", WHERE))
            ),
            min_steady_tflops=number(values, "min_steady_tflops", WHERE),
            status=str(field(verdict, "status", f"{WHERE}.verdict")),
            failures=tuple(str(f) for f in field(verdict, "failures", f"{WHERE}.verdict")),
            not_measured=tuple(str(n) for n in field(verdict, "not_measured", f"{WHERE}.verdict")),
            values=values,
        )

    @property
    def device_count(self) -> int:
        return len(self.devices)

    @property
    def on_cpu(self) -> bool:
        return self.device == "cpu"
