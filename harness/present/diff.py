"""`dossier diff A B`: what differs between two bundles in hardware, software and measured figures.

Metrics are compared as ratios B/A, each side shown with its own spread (where the probe
measured one), so a colleague's figure can be judged against the noise of your own run. This is
the comparison as data (`--json`); harness.present.diff_tables prints it for a person.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

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


def _devices(view: BundleView) -> list[str]:
    return [f"{d.get('name')} ({d.get('sku_id')})" for d in _figures(view, "health").get("devices") or []
            if isinstance(d, dict)]


def _tool(view: BundleView) -> str:
    """The harness version and its git commit (or that it is unknown)."""
    tool = view.commands.get("tool") if isinstance(view.commands.get("tool"), dict) else {}
    commit = tool.get("git_commit")
    return f"{tool.get('version')} ({'git ' + commit[:12] if isinstance(commit, str) else 'git commit unknown'})"


HARDWARE: tuple[tuple[str, Callable[[BundleView], Any]], ...] = (
    ("devices", _devices),
    ("device_count", lambda v: _figures(v, "health").get("device_count")),
    ("bandwidth sku_id", lambda v: _figures(v, "bandwidth").get("sku_id")),
    ("cpu_model", lambda v: _host(v).get("cpu_model")),
    ("cpu_count", lambda v: _host(v).get("cpu_count")),
    ("memory_total_mib", lambda v: _host(v).get("memory_total_mib")),
    ("machine", lambda v: _host(v).get("machine")),
)

SOFTWARE: tuple[tuple[str, Callable[[BundleView], Any]], ...] = (
    *((key, (lambda k: lambda v: _figures(v, "health").get(k))(key))
      for key in ("driver_version", "cuda_driver_version", "torch_version", "torch_cuda_build")),
    ("os", lambda v: _host(v).get("os")),
    ("host python", lambda v: (_host(v).get("python") or {}).get("version")),
    ("rig-dossier", lambda v: _tool(v)),
    ("runner", lambda v: (v.commands.get("runner") or {}).get("name")),
    ("images", lambda v: sorted({s["image"] for s in v.steps if s.get("image")})),
    ("checkpoints", lambda v: [c.get("sha256") or c for c in (s.get("checkpoint") for s in v.steps) if c]),
    ("steps completed", lambda v: [s["step"] for s in v.steps if s.get("status") == StepStatus.COMPLETED]),
    ("roofline classifications", lambda v: _figures(v, "roofline").get("classifications")),
    ("precision ranks", lambda v: _figures(v, "precision").get("ranks")),
)


def _metric_rows(view: BundleView) -> dict[str, tuple[str, float | None, float | None]]:
    """metric -> (unit, value, spread fraction) for one bundle."""
    b, r, a = _figures(view, "bandwidth"), _figures(view, "roofline"), _figures(view, "allreduce")
    spread = b.get("repeat_spread")
    rows: dict[str, tuple[str, float | None, float | None]] = {
        "bandwidth plateau": ("GB/s", b.get("plateau_gbps"), spread),
        "bandwidth sustained median": ("GB/s", b.get("repeat_median_gbps"), spread),
        "roofline burst best (short window)": ("TFLOPS", r.get("burst_best_tflops"), None),
        "roofline ridge": ("FLOP/byte", r.get("ridge_flop_per_byte"), None),
        "roofline fusion speedup": ("x", r.get("fusion_speedup"), None),
    }
    for curve, values in sorted((a.get("curves") or {}).items()):
        if isinstance(values, dict):
            for key, unit in (("busbw_at_max_gbps", "GB/s"), ("beta_gbps", "GB/s"), ("alpha_us", "µs"),
                              ("knee_bytes", "bytes")):
                rows[f"allreduce {curve} {key}"] = (unit, values.get(key), None)
    return rows


def compare(a: BundleView, b: BundleView) -> Comparison:
    fields = [FieldDiff(section, name, get(a), get(b))
              for section, table in (("hardware", HARDWARE), ("software", SOFTWARE)) for name, get in table]
    rows_a, rows_b = _metric_rows(a), _metric_rows(b)
    metrics = []
    for metric in list(rows_a) + [m for m in rows_b if m not in rows_a]:
        unit = (rows_a.get(metric) or rows_b[metric])[0]
        _, value_a, spread_a = rows_a.get(metric, (unit, None, None))
        _, value_b, spread_b = rows_b.get(metric, (unit, None, None))
        if value_a is None and value_b is None:
            continue
        metrics.append(MetricDiff(metric, unit, value_a, spread_a, value_b, spread_b))
    return Comparison(tuple(fields), tuple(metrics))
