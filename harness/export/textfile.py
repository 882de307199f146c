"""Prometheus's text format for node_exporter's textfile collector, written by prometheus_client.

Names are `rig_dossier_*` with the base unit in the name (bytes_per_second, hertz, seconds; a
count names what it counts); labels say which node, GPU and SKU. A verdict is a set of 0/1 gauges,
one per value, 1 on the value reached (as kube-state-metrics shows a phase), so an alert reads
`rig_dossier_check_verdict{verdict="fail"} == 1`. `write_to_textfile` writes a temporary file
beside FILE and renames it: the collector never reads half a file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from prometheus_client import CollectorRegistry, Gauge, write_to_textfile

from harness import paths
from harness.errors import UsageError
from harness.escape import terminal

PREFIX = "rig_dossier_"
# A figure's unit as the registry's fleet metrics give it -> (its suffix in the figure's name, the
# base unit's suffix, the factor to the base unit). Other units are counts or ratios, kept as named.
BASE_UNITS = {
    "GB/s": ("_gbps", "_bytes_per_second", 1e9),
    "TFLOP/s": ("_tflops", "_flop_per_second", 1e12),
    "TFLOPS": ("_tflops", "_flop_per_second", 1e12),  # the figures' own spelling (harness.analysis.figure)
    "MHz": ("_mhz", "_hertz", 1e6),
}


def check_path(path: Path, option: str = "--prometheus") -> Path:
    """A writable FILE.prom (the textfile collector reads only *.prom), checked before any work."""
    if path.suffix != ".prom":
        raise UsageError(
            f"{option} {path}: the name must end in .prom (node_exporter's textfile collector reads only *.prom files)"
        )
    return paths.output_file(path, option)


def in_base_unit(name: str, unit: str, value: float) -> tuple[str, float]:
    """A figure's metric name and value in its base unit: bandwidth_sustained_gbps, GB/s, 4258 ->
    rig_dossier_bandwidth_sustained_bytes_per_second, 4.258e12."""
    suffix, base, factor = BASE_UNITS.get(unit, ("", "", 1.0))
    stem = name.removesuffix(suffix) if suffix and name.endswith(suffix) else name
    return PREFIX + stem + base, value * factor


class Metrics:
    """The gauges of one textfile; a gauge is declared by its first use, its label names fixed then."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._gauges: dict[str, Gauge] = {}

    def set(self, name: str, help_text: str, labels: Mapping[str, str], value: float) -> None:
        gauge = self._gauges.get(name)
        if gauge is None:
            gauge = self._gauges[name] = Gauge(name, help_text, labelnames=tuple(labels), registry=self.registry)
        # a label's value from a reading or a bundle, as text a terminal and the textfile can hold
        gauge.labels(**{k: terminal(v) for k, v in labels.items()}).set(float(value))

    def one_hot(
        self, name: str, help_text: str, labels: Mapping[str, str], key: str, reached: str, values: Iterable[str]
    ) -> None:
        """One 0/1 gauge per value of KEY, 1 on REACHED (a verdict, a status)."""
        for value in values:
            self.set(name, help_text, {**labels, key: value}, 1.0 if value == reached else 0.0)

    def write(self, path: Path) -> Path:
        write_to_textfile(str(path), self.registry)
        return path
