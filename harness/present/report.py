"""Rendering report.md from a bundle's data with the package's Jinja2 template.

Only bundle contents go in (no clock, no host lookups), so `dossier verify` can re-render the
report from the raw JSON and compare it byte for byte.
"""

from __future__ import annotations

import shlex
from typing import Any

import jinja2

from harness import registry
from harness.analysis.verdict import Verdict
from harness.bundle import layout
from harness.bundle.view import BundleView
from harness.judge.engine import evaluate
from harness.judge.facts import BundleFacts
from harness.present import templating
from harness.present.figures import figure, value_text

TEMPLATE = "report.md.j2"


def _environment() -> jinja2.Environment:
    return templating.environment()


STEP_KEYS = ("step", "lab_step", "status", "timed_out", "exit_code", "why", "image", "kind", "function")


def _strings(value: Any) -> list[str]:
    """VALUE if it is a list of strings, else an empty list (a malformed field renders as nothing)."""
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else []


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> float | int | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def command_line(entry: dict[str, Any]) -> str | None:
    """The step's exact command, with its recorded environment, as one shell line."""
    argv = _strings(entry.get("argv"))
    if not argv:
        return None
    env = {k: v for k, v in _mapping(entry.get("env")).items() if isinstance(v, str)}
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
    return (prefix + " " if prefix else "") + shlex.join(argv)


def dossier_command(commands: dict[str, Any]) -> str:
    options = _mapping(commands.get("options"))
    argv = ["dossier", "run", "--runner", str(options.get("runner", "auto"))]
    pairs = options.get("runner_options")
    for pair in pairs if isinstance(pairs, list) else []:
        argv += _strings(pair)[:2]
    for step in _strings(options.get("skip")):
        argv += ["--skip", step]
    return shlex.join(argv)


def criteria_context(view: BundleView) -> list[dict[str, Any]]:
    rows = []
    for judged in evaluate(registry.lab_criteria(), BundleFacts(view)):
        steps = [view.step(s) for s in judged.steps]
        rows.append({
            "status": judged.status, "mark": "x" if judged.status == Verdict.PASS else " ",
            "text": judged.title, "evidence": list(judged.findings),
            "commands": [c for c in (command_line(s) for s in steps if s) if c],
            "plots": [p for s in judged.steps for p in view.plots(s)],
        })
    return rows


def figures_context(view: BundleView) -> list[dict[str, Any]]:
    sections = []
    for entry in view.steps:
        if entry.get("status") != "completed" or not entry.get("analysis"):
            continue
        figures = view.figures(entry["step"])
        lines = [figure(str(k), v) for k, v in sorted(_mapping(figures.values).items())]
        document = _mapping(view.documents.get(entry["step"]))
        sections.append({"step": entry["step"], "output": entry.get("output"), "lines": lines,
                         "error": figures.error, "sizing": document.get("sizing")})
    return sections


def tables_context(view: BundleView) -> list[dict[str, str]]:
    """Markdown tables a probe's registry entry renders from a completed step's raw document
    (its `table` module), headings demoted."""
    tables = []
    for entry in view.steps:
        spec = registry.find(entry.get("probe"))
        if entry.get("status") != "completed" or spec is None or not spec.table:
            continue
        try:
            text = str(registry.table_module(spec).render(view.documents[entry["step"]]))
        except Exception as exc:  # noqa: BLE001 - shown in the report, and verify re-renders the same
            text = f"the {spec.table} table raised {type(exc).__name__}: {exc}"
        lines = [("##" + line) if line.startswith("#") else line for line in text.rstrip("\n").splitlines()]
        tables.append({"step": entry["step"], "markdown": "\n".join(lines)})
    return tables


def limitations_context(view: BundleView) -> list[str]:
    found = []
    for entry in view.steps:
        step = entry["step"]
        if entry.get("status") != "completed":
            found.append(f"{step}: {entry['status'].replace('_', ' ')}: {entry.get('why')}")
        limitations = _mapping(view.documents.get(step)).get("limitations")
        for item in limitations if isinstance(limitations, list) else []:
            if isinstance(item, dict):
                found.append(f"{step}: {item.get('what')}: {item.get('why')}")
        note = entry.get("plot_note")
        if isinstance(note, str) and note:
            found.append(f"{step}: no plots: {note}")
    return found


def host_context(view: BundleView) -> list[str]:
    host = _mapping(view.environment.get("host"))
    keys = ("hostname", "os", "machine", "cpu_model", "cpu_count", "memory_total_mib")
    lines = [figure(k, host.get(k)) for k in keys if k in host]
    python = _mapping(host.get("python"))
    if python:
        lines.append(f"host python: {python.get('version')} ({python.get('executable')})")
    for name, version in sorted(_mapping(host.get("packages")).items()):
        lines.append(f"host package {name}: {value_text(name, version)}")
    return lines


def step_rows(view: BundleView) -> list[dict[str, Any]]:
    """Each step as the template reads it: every key present, numbers and lists only where valid."""
    return [{**{key: entry.get(key) for key in STEP_KEYS}, "command": command_line(entry),
             "duration_s": _number(entry.get("duration_s")), "needs": _strings(entry.get("needs"))}
            for entry in view.steps]


def context(view: BundleView) -> dict[str, Any]:
    commands = view.commands
    images = sorted({s["image"] for s in view.steps if isinstance(s.get("image"), str) and s["image"]})
    checkpoints = [s["checkpoint"] for s in view.steps if isinstance(s.get("checkpoint"), dict) and s["checkpoint"]]
    host = _mapping(view.environment.get("host"))
    tool, runner = _mapping(commands.get("tool")), _mapping(commands.get("runner"))
    git_commit = tool.get("git_commit")
    if isinstance(git_commit, dict):  # {"unavailable": why}: the report shows why
        git_commit = git_commit.get("unavailable")
    return {
        "hostname": host.get("hostname") if isinstance(host.get("hostname"), str) else "unknown host",
        "tool": {**{k: tool.get(k) for k in ("name", "version", "git_dirty")}, "git_commit": git_commit},
        "runner": {k: runner.get(k) for k in ("name", "why")},
        "started_at": commands.get("started_at"), "finished_at": commands.get("finished_at"),
        "duration_s": _number(commands.get("duration_s")),
        "criteria": criteria_context(view), "steps": step_rows(view), "figures": figures_context(view),
        "tables": tables_context(view),
        "limitations": limitations_context(view), "host": host_context(view),
        "images": images, "checkpoints": checkpoints, "dossier_command": dossier_command(commands),
        "layout": layout,
    }


def render_report(view: BundleView) -> str:
    return _environment().get_template(TEMPLATE).render(context(view))
