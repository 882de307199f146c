"""Rendering report.md from a bundle's data with the package's Jinja2 template.

Only bundle contents go in (no clock, no host lookups), so `dossier verify` can re-render the
report from the raw JSON and compare it byte for byte.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Set
from typing import Any

import jinja2

from harness.analysis.tool import tool_text
from harness.analysis.units import figure, number_or_none, value_text, without_empty
from harness.analysis.verdict import StepStatus, Verdict
from harness.bundle import layout
from harness.bundle.view import BundleView
from harness.judge.engine import Result
from harness.present import contention, repeatability, step_tables, templating
from harness.present.folding import FOLD_AT, environment_text, fold, short_command, wrap_markdown
from harness.present.verdict import run_verdict

TEMPLATE = "report.md.j2"
LIMITATIONS = "limitations"  # a document's limitations: listed, with why, under Limitations (not as a figure)


def _environment() -> jinja2.Environment:
    return templating.environment()


STEP_KEYS = ("step", "lab_step", "status", "timed_out", "exit_code", "why", "image", "kind", "function")


def _strings(value: Any) -> list[str]:
    """VALUE if it is a list of strings, else an empty list (a malformed field renders as nothing)."""
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else []


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def command_line(entry: dict[str, Any]) -> str | None:
    """The step's command, short: `python -m harness.probes.NAME ARGS`, long arguments folded (the
    exact argv and environment are in commands.json)."""
    argv = _strings(entry.get("argv"))
    return short_command(argv) if argv else None


def _step_environment(entry: dict[str, Any]) -> dict[str, str]:
    return {k: v for k, v in _mapping(entry.get("env")).items() if isinstance(k, str) and isinstance(v, str)}


def environment_context(view: BundleView) -> dict[str, Any]:
    """The allowlisted environment once: the variables every step that ran had alike (`common`),
    and by step what differs from that (`by_step`)."""
    recorded = [
        (str(entry.get("step")), _step_environment(entry)) for entry in view.steps if _strings(entry.get("argv"))
    ]
    common = dict(recorded[0][1]) if recorded else {}
    for _, env in recorded[1:]:
        common = {k: v for k, v in common.items() if env.get(k) == v}
    by_step = {step: environment_text({k: v for k, v in env.items() if common.get(k) != v}) for step, env in recorded}
    return {
        "common": environment_text(common),
        "by_step": {k: v for k, v in by_step.items() if v},
        "steps": len(recorded),
    }


def dossier_command(commands: dict[str, Any]) -> list[str]:
    """`dossier run` with the run's options, one option a line (the template joins them with a
    shell line continuation)."""
    options = _mapping(commands.get("options"))
    lines = [shlex.join(["dossier", "run", "--runner", str(options.get("runner", "auto"))])]
    pairs = options.get("runner_options")
    for pair in pairs if isinstance(pairs, list) else []:
        lines.append(shlex.join(_strings(pair)[:2]))
    for step in _strings(options.get("skip")):
        lines.append(shlex.join(["--skip", step]))
    return lines


def _output_of(steps: list[dict[str, Any] | None]) -> str:
    """Where a criterion's figures come from: its first step's document, else commands.json."""
    outputs = [str(s["output"]) for s in steps if s and isinstance(s.get("output"), str)]
    return outputs[0] if outputs else layout.COMMANDS


def plain_lab_step(text: Any) -> str:
    """A step's place in the lab as a reader says it (bundles before format 5 recorded an internal
    issue number for the steps beyond the lab: "issue 17", "issue 16 (beyond lab M1)")."""
    text = str(text or "")
    return "beyond lab M1" if re.fullmatch(r"issue \d+( \(beyond lab M1\))?", text) else text


def plot_groups(plots: list[str]) -> list[dict[str, Any]]:
    """Plots by stem, one line each: the PNG shown, its other formats (SVG) linked beside it."""
    stems: dict[str, list[str]] = {}
    for plot in plots:
        stems.setdefault(plot.rsplit(".", 1)[0], []).append(plot)
    return [
        {
            "png": next((p for p in found if p.endswith(".png")), None),
            "others": [p for p in found if not p.endswith(".png")],
        }
        for found in stems.values()
    ]


def criteria_context(view: BundleView, results: list[Result]) -> list[dict[str, Any]]:
    rows = []
    for judged in results:
        steps = [view.step(s) for s in judged.steps]
        where = _output_of(steps)
        rows.append(
            {
                "status": judged.status,
                "mark": "x" if judged.status == Verdict.PASS else " ",
                "text": judged.title,
                "evidence": [fold(str(line), where) for line in judged.findings],
                "action": (
                    fold(f"{judged.recommendation.shown()}: {judged.recommendation.why}", where)
                    if judged.status == Verdict.FAIL
                    else None
                ),
                "plots": plot_groups([p for s in judged.steps for p in view.plots(s)]),
                "steps": list(judged.steps),
                "plot_notes": [
                    f"{s.get('step')}: {_one_line(s.get('plot_note'))}"
                    for s in steps
                    if s and isinstance(s.get("plot_note"), str) and s.get("plot_note")
                ],
            }
        )
    return rows


def _one_line(text: Any, limit: int = FOLD_AT) -> str:
    """TEXT's first line, folded past LIMIT characters (an error message may span lines)."""
    flat = " ".join((str(text).strip().splitlines() or [""])[0].split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


TABLE_ITEMS = 8  # a mapping or list of more items than this is a table's, where the step has one


def _structured(value: Any) -> bool:
    """A figure that is a table rather than a value: a mapping or list of mappings or lists, or of
    more than TABLE_ITEMS items."""
    items = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else []
    return len(items) > TABLE_ITEMS or any(isinstance(v, (dict, list)) for v in items)


def figures_context(view: BundleView, shown: Mapping[str, set[str]] | None = None) -> list[dict[str, Any]]:
    """Each completed step's headline figures, long values folded; those shown under a criterion
    that reads the step (SHOWN: by step) are counted, not repeated; figures with no value are left
    out (Limitations says why); a step with a table leaves its structured figures to it; a sizing
    already said for an earlier step is named, not repeated, and so are figures equal to those of
    an earlier step of the same probe (a roofline dtype check's bandwidth, health under load's driver)."""
    sections: list[dict[str, Any]] = []
    said: dict[str, str] = {}
    first_of_probe: dict[str, tuple[str, set[str]]] = {}
    for entry in view.steps:
        if entry.get("status") != StepStatus.COMPLETED or not entry.get("analysis"):
            continue
        figures = {str(k): without_empty(v) for k, v in _mapping(view.figures(entry["step"]).values).items()}
        figures = {k: v for k, v in figures.items() if v not in (None, {}, []) and k != LIMITATIONS}
        where, above = str(entry.get("output")), (shown or {}).get(entry["step"], set())
        tables = view.tables(str(entry["step"]))
        in_table = sorted(k for k, v in figures.items() if tables and _structured(v))
        every = [fold(figure(k, v), where) for k, v in sorted(figures.items()) if k not in in_table]
        lines = [line for line in every if line not in above]
        earlier_step, earlier = first_of_probe.setdefault(str(entry.get("probe")), (str(entry["step"]), set(every)))
        same = [line for line in lines if line in earlier] if earlier_step != entry["step"] else []
        lines = [line for line in lines if line not in same]
        sizing = _mapping(view.documents.get(entry["step"])).get("sizing")
        sizing = str(sizing) if sizing else None
        same_as = said.get(sizing) if sizing else None
        if sizing and same_as is None:
            said[sizing] = str(entry["step"])
        sections.append(
            {
                "step": entry["step"],
                "output": entry.get("output"),
                "lines": lines,
                "in_table": in_table,
                "table": tables[0] if tables else None,
                "shown": sum(line in above for line in every),
                "error": view.figures(entry["step"]).error,
                "sizing": sizing,
                "sizing_as": same_as,
                "same": len(same),
                "same_as": earlier_step if same else None,
            }
        )
    return sections


def tables_context(view: BundleView) -> list[dict[str, str]]:
    """Each step's table member (tables/STEP.md, rendered from its raw document by the probe's
    registry entry), named by its title and linked; bundles before format 4 have none."""
    tables = []
    for entry in view.steps:
        for member in view.tables(str(entry.get("step"))):
            data = view.files.get(member)
            name = step_tables.title(data.decode("utf-8", "replace")) if data is not None else "missing"
            tables.append({"step": entry["step"], "member": member, "title": _one_line(name, 120)})
    return tables


def _grouped(found: list[tuple[str, str]]) -> list[str]:
    """(step, text) pairs as lines, the steps that share a text named together on its first line."""
    steps: dict[str, list[str]] = {}
    for step, text in found:
        steps.setdefault(text, []).append(step)
    return [f"{', '.join(names)}: {text}" for text, names in steps.items()]


def limitations_context(view: BundleView, noted: Set[str] = frozenset()) -> list[str]:
    """Every step that did not complete, every limitation a document records, and why a step has
    no plots (unless a criterion already says so: the steps in NOTED)."""
    found: list[tuple[str, str]] = []
    for entry in view.steps:
        step = entry["step"]
        if entry.get("status") != StepStatus.COMPLETED:
            found.append((step, f"{str(entry['status']).replace('_', ' ')}: {entry.get('why')}"))
        limitations = _mapping(view.documents.get(step)).get("limitations")
        for item in limitations if isinstance(limitations, list) else []:
            if isinstance(item, dict):
                found.append((step, f"{item.get('what')}: {item.get('why')}"))
        note = entry.get("plot_note")
        if isinstance(note, str) and note and step not in noted:
            found.append((step, f"no plots: {note}"))
    return _grouped(found)


def host_context(view: BundleView) -> list[str]:
    host = _mapping(view.environment.get("host"))
    keys = ("hostname", "os", "machine", "cpu_model", "cpu_count", "memory_total_mib")
    lines = [figure(k, host.get(k)) for k in keys if k in host]
    python = _mapping(host.get("python"))
    if python:
        lines.append(f"host python: {python.get('version')} ({python.get('executable')})")
    packages = sorted(_mapping(host.get("packages")).items())
    if packages:
        lines.append("host packages: " + ", ".join(f"{name} {value_text(name, version)}" for name, version in packages))
    return lines


def attempts_note(entry: dict[str, Any], commands: dict[str, Any]) -> str | None:
    """ "attempt 2 of 3 (attempt 1: why)" for a step run again with --retest; None for one run once."""
    earlier = [a for a in entry.get("attempts") or [] if isinstance(a, dict)]
    if not earlier:
        return None
    retest = _mapping(commands.get("options")).get("retest")
    of = f" of {retest + 1}" if isinstance(retest, int) and not isinstance(retest, bool) else ""
    return (
        f"attempt {len(earlier) + 1}{of} ("
        + "; ".join(f"attempt {a.get('attempt')}: {a.get('why')}" for a in earlier)
        + ")"
    )


def step_rows(view: BundleView) -> list[dict[str, Any]]:
    """Each step as the template reads it: every key present, numbers and lists only where valid; a
    retested step's note says which attempt this is and why the earlier ones failed."""
    rows = []
    for entry in view.steps:
        note = attempts_note(entry, view.commands)
        why = "; ".join(str(w) for w in (entry.get("why"), note) if w) or None
        rows.append(
            {
                **{key: entry.get(key) for key in STEP_KEYS},
                "lab_step": plain_lab_step(entry.get("lab_step")),
                "command": command_line(entry),
                "duration_s": number_or_none(entry.get("duration_s")),
                "needs": _strings(entry.get("needs")),
                "why": why,
            }
        )
    return rows


def context(view: BundleView) -> dict[str, Any]:
    commands = view.commands
    images = sorted({s["image"] for s in view.steps if isinstance(s.get("image"), str) and s["image"]})
    checkpoints = [
        {
            "label": value_text("label", s["checkpoint"].get("label", "checkpoint")),
            "lines": [figure(str(k), v) for k, v in sorted(without_empty(s["checkpoint"]).items())],
        }
        for s in view.steps
        if isinstance(s.get("checkpoint"), dict) and s["checkpoint"]
    ]
    host = _mapping(view.environment.get("host"))
    runner = _mapping(commands.get("runner"))
    verdict = run_verdict(view)
    criteria = criteria_context(view, list(verdict.results))
    shown: dict[str, set[str]] = {}
    for c in criteria:
        for step in c["steps"]:
            shown.setdefault(step, set()).update(c["evidence"])
    return {
        "hostname": host.get("hostname") if isinstance(host.get("hostname"), str) else "unknown host",
        "tool": tool_text(commands.get("tool")),
        "verdict": verdict,
        "runner": {k: runner.get(k) for k in ("name", "why")},
        "started_at": commands.get("started_at"),
        "finished_at": commands.get("finished_at"),
        "duration_s": number_or_none(commands.get("duration_s")),
        "criteria": criteria,
        "steps": step_rows(view),
        "figures": figures_context(view, shown),
        "environment": environment_context(view),
        "tables": tables_context(view),
        "limitations": limitations_context(view, {s for c in criteria for s in c["steps"] if c["plot_notes"]}),
        "host": host_context(view),
        "repeatability": repeatability.lines(commands.get("repeatability")),
        "contention": contention.lines(view),
        "images": images,
        "checkpoints": checkpoints,
        "dossier_command": dossier_command(commands),
        "layout": layout,
    }


def render_report(view: BundleView) -> str:
    """report.md: the template rendered from the bundle's data, lines wrapped (harness.present.folding)."""
    return wrap_markdown(_environment().get_template(TEMPLATE).render(context(view)))
