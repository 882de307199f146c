"""`dossier diff A B`: what differs between two bundles in hardware, software and measured figures.

Which facts and figures are compared is each registry entry's (ProbeSpec.diff_fields,
diff_figures), beside the bundle's own (host, tool, runner). Metrics are compared as ratios B/A,
each side shown with its own spread (where the probe measured one), so a colleague's figure can be judged against the noise of your own run. This is
the comparison as data (`--json`); harness.present.diff_tables prints it for a person.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from harness import registry
from harness.analysis.verdict import StepStatus
from harness.bundle.view import BundleView


@dataclass(frozen=True)
class FieldDiff:
    section: str  # hardware, software
    field: str
    a: Any
    b: Any

    @property
    def same(self) -> bool:
        return self.a == self.b


@dataclass(frozen=True)
class MetricDiff:
    metric: str
    unit: str
    a: float | None
    a_spread: float | None  # fraction, e.g. 0.012 = 1.2 %
    b: float | None
    b_spread: float | None

    @property
    def ratio(self) -> float | None:
        if isinstance(self.a, (int, float)) and isinstance(self.b, (int, float)) and self.a:
            return self.b / self.a
        return None


@dataclass(frozen=True)
class Comparison:
    fields: tuple[FieldDiff, ...]
    metrics: tuple[MetricDiff, ...]

    def to_json(self) -> dict[str, Any]:
        return {"fields": [{**asdict(f), "same": f.same} for f in self.fields],
                "metrics": [{**asdict(m), "ratio": m.ratio} for m in self.metrics]}


def _figures(view: BundleView, step: str) -> dict[str, Any]:
    return view.figures(step).values or {}


def _host(view: BundleView) -> dict[str, Any]:
    return (view.environment or {}).get("host") or {}


def _tool(view: BundleView) -> str:
    """The harness version and its git commit (or that it is unknown)."""
    tool = view.commands.get("tool") if isinstance(view.commands.get("tool"), dict) else {}
    commit = tool.get("git_commit")
    return f"{tool.get('version')} ({'git ' + commit[:12] if isinstance(commit, str) else 'git commit unknown'})"


Read = Callable[[BundleView], Any]

# The bundle's own facts, after those each registry entry declares (ProbeSpec.diff_fields).
HOST: tuple[tuple[str, Read], ...] = (
    ("cpu_model", lambda v: _host(v).get("cpu_model")),
    ("cpu_count", lambda v: _host(v).get("cpu_count")),
    ("memory_total_mib", lambda v: _host(v).get("memory_total_mib")),
    ("machine", lambda v: _host(v).get("machine")),
)
RUN: tuple[tuple[str, Read], ...] = (
    ("os", lambda v: _host(v).get("os")),
    ("host python", lambda v: (_host(v).get("python") or {}).get("version")),
    ("rig-dossier", lambda v: _tool(v)),
    ("runner", lambda v: (v.commands.get("runner") or {}).get("name")),
    ("images", lambda v: sorted({s["image"] for s in v.steps if s.get("image")})),
    ("checkpoints", lambda v: [c.get("sha256") or c for c in (s.get("checkpoint") for s in v.steps) if c]),
    ("steps completed", lambda v: [s["step"] for s in v.steps if s.get("status") == StepStatus.COMPLETED]),
)


def _declared(section: str) -> list[tuple[str, Read]]:
    """The registry entries' diff fields of SECTION, each read from its step's recomputed headlines."""
    return [(f.name, (lambda f, step: lambda v: f.read(_figures(v, step)))(f, f.step or entry.name))
            for entry in registry.PROBES for f in entry.diff_fields if f.section == section]


def fields() -> tuple[tuple[str, str, Read], ...]:
    """(section, name, read) of every field `dossier diff` sets side by side, in order."""
    return (*(("hardware", name, read) for name, read in (*_declared("hardware"), *HOST)),
            *(("software", name, read) for name, read in (*_declared("software"), *RUN)))


def _metric_rows(view: BundleView) -> dict[str, tuple[str, float | None, float | None]]:
    """metric -> (unit, value, spread fraction) for one bundle: every registry entry's diff figures."""
    rows: dict[str, tuple[str, float | None, float | None]] = {}
    for entry in registry.PROBES:
        for figure in entry.diff_figures:
            for name, unit, value, spread in figure.rows(_figures(view, figure.step or entry.name)):
                rows[name] = (unit, value, spread)
    return rows


def compare(a: BundleView, b: BundleView) -> Comparison:
    diffs = [FieldDiff(section, name, read(a), read(b)) for section, name, read in fields()]
    rows_a, rows_b = _metric_rows(a), _metric_rows(b)
    metrics = []
    for metric in list(rows_a) + [m for m in rows_b if m not in rows_a]:
        unit = (rows_a.get(metric) or rows_b[metric])[0]
        _, value_a, spread_a = rows_a.get(metric, (unit, None, None))
        _, value_b, spread_b = rows_b.get(metric, (unit, None, None))
        if value_a is None and value_b is None:
            continue
        metrics.append(MetricDiff(metric, unit, value_a, spread_a, value_b, spread_b))
    return Comparison(tuple(diffs), tuple(metrics))
