"""Rendering report.md from a bundle's data with the package's Jinja2 template.

Only bundle contents go in (no clock, no host lookups), so `dossier verify` can re-render the
report from the raw JSON and compare it byte for byte.
"""

from __future__ import annotations

import importlib
import shlex
from typing import Any

import jinja2

from harness import templating
from harness.bundle import layout
from harness.bundle.view import MODULE_NAME, BundleView
from harness.report.criteria import PASS, judge_all
from harness.report.figures import figure, value_text

TEMPLATE = "report.md.j2"


def _environment() -> jinja2.Environment:
    return templating.environment()


def command_line(entry: dict[str, Any]) -> str | None:
    """The step's exact command, with its recorded environment, as one shell line."""
    if not entry.get("argv"):
        return None
    env = entry.get("env") or {}
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
    return (prefix + " " if prefix else "") + shlex.join(entry["argv"])


def dossier_command(commands: dict[str, Any]) -> str:
    options = commands.get("options") or {}
    argv = ["dossier", "run", "--runner", str(options.get("runner", "auto"))]
    for flag, value in options.get("runner_options") or []:
        argv += [flag, value]
    for step in options.get("skip") or []:
        argv += ["--skip", step]
    return shlex.join(argv)


def criteria_context(view: BundleView) -> list[dict[str, Any]]:
    rows = []
    for criterion, judgement in judge_all(view):
        steps = [view.step(s) for s in judgement.steps]
        rows.append({
            "status": judgement.status, "mark": "x" if judgement.status == PASS else " ",
            "text": criterion.text, "evidence": judgement.evidence,
            "commands": [c for c in (command_line(s) for s in steps if s) if c],
            "plots": [p for s in judgement.steps for p in view.plots(s)],
        })
    return rows


def figures_context(view: BundleView) -> list[dict[str, Any]]:
    sections = []
    for entry in view.steps:
        if entry.get("status") != "completed" or not entry.get("analysis"):
            continue
        figures = view.figures(entry["step"])
        lines = [figure(k, v) for k, v in sorted((figures.values or {}).items())]
        document = view.documents.get(entry["step"]) or {}
        sections.append({"step": entry["step"], "output": entry.get("output"), "lines": lines,
                         "error": figures.error, "sizing": document.get("sizing")})
    return sections


def tables_context(view: BundleView) -> list[dict[str, str]]:
    """Markdown tables a step's harness/render/NAME.py makes from its raw document, headings demoted."""
    tables = []
    for entry in view.steps:
        name = entry.get("analysis")
        if entry.get("status") != "completed" or not name or not MODULE_NAME.fullmatch(name):
            continue
        try:
            module = importlib.import_module(f"harness.render.{name}")
        except ModuleNotFoundError as exc:
            if exc.name in ("harness.render", f"harness.render.{name}"):
                continue
            raise
        try:
            text = module.render(view.documents[entry["step"]])
        except Exception as exc:  # noqa: BLE001 - shown in the report, and verify re-renders the same
            text = f"harness/render/{name}.py raised {type(exc).__name__}: {exc}"
        lines = [("##" + line) if line.startswith("#") else line for line in text.rstrip("\n").splitlines()]
        tables.append({"step": entry["step"], "markdown": "\n".join(lines)})
    return tables


def limitations_context(view: BundleView) -> list[str]:
    found = []
    for entry in view.steps:
        step = entry["step"]
        if entry.get("status") != "completed":
            found.append(f"{step}: {entry['status'].replace('_', ' ')}: {entry.get('why')}")
        for item in (view.documents.get(step) or {}).get("limitations", []) if isinstance(
                view.documents.get(step), dict) else []:
            if isinstance(item, dict):
                found.append(f"{step}: {item.get('what')}: {item.get('why')}")
        if entry.get("plot_note") and "is not in this build" not in entry["plot_note"]:
            found.append(f"{step}: no plots: {entry['plot_note']}")
    return found


def host_context(view: BundleView) -> list[str]:
    host = (view.environment or {}).get("host") or {}
    keys = ("hostname", "os", "machine", "cpu_model", "cpu_count", "memory_total_mib")
    lines = [figure(k, host.get(k)) for k in keys if k in host]
    python = host.get("python") or {}
    if python:
        lines.append(f"host python: {python.get('version')} ({python.get('executable')})")
    for name, version in sorted((host.get("packages") or {}).items()):
        lines.append(f"host package {name}: {value_text(name, version)}")
    return lines


def context(view: BundleView) -> dict[str, Any]:
    commands = view.commands
    steps = [{**entry, "command": command_line(entry)} for entry in view.steps]
    images = sorted({s["image"] for s in view.steps if s.get("image")})
    checkpoints = [s["checkpoint"] for s in view.steps if s.get("checkpoint")]
    host = (view.environment or {}).get("host") or {}
    return {
        "hostname": host.get("hostname") if isinstance(host.get("hostname"), str) else "unknown host",
        "tool": commands.get("tool") or {}, "runner": commands.get("runner") or {},
        "started_at": commands.get("started_at"), "finished_at": commands.get("finished_at"),
        "duration_s": commands.get("duration_s"),
        "criteria": criteria_context(view), "steps": steps, "figures": figures_context(view),
        "tables": tables_context(view),
        "limitations": limitations_context(view), "host": host_context(view),
        "images": images, "checkpoints": checkpoints, "dossier_command": dossier_command(commands),
        "layout": layout,
    }


def render_report(view: BundleView) -> str:
    return _environment().get_template(TEMPLATE).render(context(view))
